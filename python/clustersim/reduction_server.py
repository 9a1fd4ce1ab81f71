"""Reduction servers (Optcast, shared/seeds/004): platforms with CPU servers, the options that run
all-reduce on them, and the seed's cost report.

The model is the engine's (`collective/reduction_server.rs`): workers cut S into chunks, each chunk
into `nsplit` shards, shard j to server j mod N_s; a server reduces a shard once every worker's
copy has arrived (at `reduce_gbps`, which caps what its NIC delivers into its CPU) and returns it.

Cost (the seed's accounting): W GPU instances at P_w per hour, plus N_s server instances at P_s,
cost the same per run when the run's time falls by x:

    W·P_w = (W·P_w + N_s·P_s)·(1 − x)   ⇒   x = N_s·P_s / (W·P_w + N_s·P_s)

The seed's example: one p4d.24xlarge ($32/h, 400 Gbit/s) matched by two c7gn.16xlarge ($4/h,
200 Gbit/s each): x = 8/40 = 0.2. A run whose time falls by more than x is also cheaper.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.errors import InputError
from clustersim.platform import Platform


@dataclass(frozen=True)
class ReductionServers:
    """Which cpu nodes serve (`"all"`, a count or comma-separated node names), their reduction
    throughput in GB/s (None: as fast as their NICs deliver) and Optcast's split: `chunk_bytes`
    (None: 512 KiB), `nsplit` shards per chunk (0: one per server), `nreq` requests in flight."""

    servers: str = "all"
    reduce_gbps: float | None = None
    chunk_bytes: float | None = None
    nsplit: int = 0
    nreq: int = 2

    def engine_options(self) -> dict[str, object]:
        """Keyword arguments of the engine's collective sweep (and keys of its fabric document)."""
        return {
            "reduction_servers": self.servers,
            "reduce_gbps": self.reduce_gbps,
            "chunk_bytes": self.chunk_bytes,
            "nsplit": self.nsplit,
            "nreq": self.nreq,
        }


def on_platform_options(
    reduction: ReductionServers | str | None, switch_reduce_gbps: float | None
) -> dict[str, object]:
    """The engine's options for algorithms built from the platform, the same for `collective`,
    `run` and `train`: reduction servers (all-reduce on them; a string is `ReductionServers`'
    `servers` with the other fields' defaults, as a sweep spec gives it) and a reducing switch's
    throughput (for --algo collnet_direct / collnet_chain); options left unset are left out."""
    if isinstance(reduction, str):
        reduction = ReductionServers(reduction)
    if reduction is not None and not isinstance(reduction, ReductionServers):
        raise InputError(
            f"reduction: expected ReductionServers or the servers as text (all, N, names), got {reduction!r}"
        )
    options = {} if reduction is None else reduction.engine_options()
    options["switch_reduce_gbps"] = switch_reduce_gbps
    return {k: v for k, v in options.items() if v is not None}


def needs_fabric(reduction: ReductionServers | str | None, switch_reduce_gbps: float | None) -> None:
    """Refuse reduction servers or a switch throughput for a run without a fabric (the analytical
    model has no cpu nodes or switches to put them on)."""
    for flag, value in (("--reduction-servers", reduction), ("--switch-reduce-gbps", switch_reduce_gbps)):
        if value is not None:
            raise InputError(f"command line: {flag}: runs on a fabric's nodes; give the fabric (-n)")


def break_even(workers: int, worker_price: float, servers: int, server_price: float) -> float:
    """The time reduction x at which `servers` instances at `server_price` per hour pay for
    themselves beside `workers` GPU instances at `worker_price` (module docstring)."""
    for name, v in (("workers", workers), ("servers", servers)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"cost: {name}: must be a whole number of instances ≥ 1, got {v!r}")
    for name, p in (("worker_price", worker_price), ("server_price", server_price)):
        if not (isinstance(p, (int, float)) and p >= 0 and p != float("inf")):
            raise InputError(f"cost: {name}: must be a price per hour ≥ 0, got {p!r}")
    extra = servers * server_price
    total = workers * worker_price + extra
    if total <= 0:
        raise InputError("cost: worker_price: the instances cost nothing, so nothing pays off")
    return extra / total


@dataclass(frozen=True)
class CostReport:
    """The seed's comparison for one all-reduce: times with and without the servers, the
    reduction x_sim = 1 − T_servers/T_base, the break-even x and the cost per hour of each set-up."""

    base_us: float
    servers_us: float
    reduction: float
    break_even: float
    base_per_hour: float
    servers_per_hour: float

    @property
    def pays_off(self) -> bool:
        """Whether an application that is all this all-reduce is cheaper with the servers (an
        application spending a fraction f of its time here falls by f·x_sim)."""
        return self.reduction > self.break_even


def cost_report(
    base_us: float, servers_us: float, workers: int, worker_price: float, servers: int, server_price: float
) -> CostReport:
    """The seed's cost terms for an all-reduce that takes `base_us` without and `servers_us` with
    the reduction servers."""
    if not (base_us > 0 and servers_us > 0):
        raise InputError(f"cost: times must be positive, got {base_us} and {servers_us} µs")
    x = break_even(workers, worker_price, servers, server_price)
    return CostReport(
        base_us,
        servers_us,
        1.0 - servers_us / base_us,
        x,
        workers * worker_price,
        workers * worker_price + servers * server_price,
    )


def _rate(gbps: float) -> str:
    return f"{gbps:g}Gbps"


def crossbar_text(
    clients: int = 4,
    servers: int = 4,
    gbps: float = 200.0,
    *,
    host_gbps: float = 800.0,
    latency_ns: float = 0.0,
    gpu: str = "A100",
) -> str:
    """Platform file of the seed's set-up: `clients` one-GPU instances and `servers` CPU instances
    (a cpu behind a nic) at `gbps` on one switch; `host_gbps` is the server's NIC ↔ CPU link."""
    _check_counts(clients, servers)
    lines = [f"# {clients} GPU clients and {servers} CPU reduction servers at {gbps:g} Gbit/s on one switch"]
    lines += [f"node gpu{i} gpu type={gpu}" for i in range(clients)]
    lines.append("node sw0 switch tier=tor")
    lines += [f"node cpu{i} cpu\nnode nic{i} nic" for i in range(servers)]
    lines += [f"link gpu{i} sw0 {_rate(gbps)} {latency_ns:g}ns" for i in range(clients)]
    for i in range(servers):
        lines.append(f"link cpu{i} nic{i} {_rate(host_gbps)} 0ns")
        lines.append(f"link nic{i} sw0 {_rate(gbps)} {latency_ns:g}ns")
    return "\n".join(lines) + "\n"


def leaf_spine_text(
    clients: int = 8,
    servers: int = 4,
    gbps: float = 200.0,
    *,
    leaves: int = 2,
    spines: int = 2,
    servers_on: str = "tor",
    host_gbps: float = 800.0,
    latency_ns: float = 500.0,
    gpu: str = "A100",
) -> str:
    """Platform file of clients and servers spread over a two-tier leaf–spine fabric: clients
    round-robin over the leaves, servers round-robin over the leaves (`servers_on="tor"`) or the
    spines (`"spine"`); each leaf's uplinks together carry what its ports can send (non-blocking)."""
    _check_counts(clients, servers)
    if servers_on not in ("tor", "spine"):
        raise InputError(f"template: servers_on: '{servers_on}' is not tor or spine")
    for name, v in (("leaves", leaves), ("spines", spines)):
        if v < 1:
            raise InputError(f"template: {name}: must be at least 1, got {v}")
    lines = [
        f"# {clients} GPU clients, {servers} reduction servers on the {servers_on}s of a leaf-spine fabric"
    ]
    lines += [f"node gpu{i} gpu type={gpu}" for i in range(clients)]
    lines += [f"node leaf{j} switch tier=tor" for j in range(leaves)]
    lines += [f"node spine{j} switch tier=spine" for j in range(spines)]
    lines += [f"node cpu{i} cpu\nnode nic{i} nic" for i in range(servers)]
    down = [0] * leaves
    for i in range(clients):
        lines.append(f"link gpu{i} leaf{i % leaves} {_rate(gbps)} {latency_ns:g}ns")
        down[i % leaves] += 1
    for i in range(servers):
        lines.append(f"link cpu{i} nic{i} {_rate(host_gbps)} 0ns")
        at = f"leaf{i % leaves}" if servers_on == "tor" else f"spine{i % spines}"
        lines.append(f"link nic{i} {at} {_rate(gbps)} {latency_ns:g}ns")
        if servers_on == "tor":
            down[i % leaves] += 1
    for j in range(leaves):
        for k in range(spines):
            lines.append(f"link leaf{j} spine{k} {_rate(gbps * max(down[j], 1) / spines)} {latency_ns:g}ns")
    return "\n".join(lines) + "\n"


def platform(text: str, name: str = "reduction-servers"):  # noqa: ANN201 (the engine's Platform)
    """The engine's Platform of a platform file text (e.g. `crossbar_text()`)."""
    return Platform.parse(name, text)


def _check_counts(clients: int, servers: int) -> None:
    if clients < 1:
        raise InputError(f"template: clients: must be at least 1, got {clients}")
    if servers < 1:
        raise InputError(f"template: servers: must be at least 1 reduction server, got {servers}")
