"""The tester's traffic pattern: groups of g consecutive ranks, every rank paired with its
counterpart in every other group; the bytes a group moves per iteration."""

from __future__ import annotations

from typing import NamedTuple

from clustersim.errors import InputError

# The tester counts in 32-byte words (its element type).
WORD_BYTES = 32


class Pattern(NamedTuple):
    ranks: int
    group_size: int
    count: int

    @classmethod
    def of(cls, ranks: int, group_size: int, count: int) -> Pattern:
        """The pattern, or an InputError naming the option that makes it impossible."""
        if group_size < 1 or ranks % group_size:
            raise InputError(f"-g {group_size}: the group size must divide the {ranks} ranks")
        if ranks // group_size < 2:
            raise InputError(
                f"-g {group_size}: {ranks} ranks make one group, and a group talks only to other groups;"
                " run under mpirun -np P with P ≥ 2·g"
            )
        if count < 1:
            raise InputError(f"--count {count}: must be at least one 32-byte word")
        return cls(ranks, group_size, count)

    @property
    def groups(self) -> int:
        return self.ranks // self.group_size

    @property
    def message_bytes(self) -> int:
        """S: bytes one rank sends to one counterpart per iteration."""
        return self.count * WORD_BYTES

    def group_of(self, rank: int) -> int:
        return rank // self.group_size

    def members(self, group: int) -> list[int]:
        return list(range(group * self.group_size, (group + 1) * self.group_size))

    def partners(self, rank: int) -> list[int]:
        """Counterparts of `rank` in every other group, by group."""
        local = rank % self.group_size
        mine = self.group_of(rank)
        return [k * self.group_size + local for k in range(self.groups) if k != mine]

    def pairs(self) -> list[tuple[int, int]]:
        """Every (sender, receiver) of one iteration."""
        return [(r, q) for r in range(self.ranks) for q in self.partners(r)]

    @property
    def group_bytes(self) -> int:
        """Bytes a group sends plus receives per iteration: 2·g·(G−1)·S."""
        return 2 * self.group_size * (self.groups - 1) * self.message_bytes

    def bandwidth_GBps(self, seconds: float) -> float:
        """A group's aggregate bidirectional bandwidth (GB/s) for an iteration of `seconds`."""
        return self.group_bytes / seconds / 1e9 if seconds > 0 else float("inf")
