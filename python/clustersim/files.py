"""Reading and writing files: a whole text file or an InputError naming it (`read_text`), and
results written all together or not at all (`atomic_outputs`: no half-written results)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from clustersim.errors import InputError


def read_text(path: str | os.PathLike[str], what: str | None = None) -> str:
    """A whole text file (UTF-8), or an InputError naming it (and `what` it was to be)."""
    the = f" the {what}" if what is not None else ""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        # A binary file (or one in another encoding): say so, not the codec's words.
        line = e.object[: e.start].count(b"\n") + 1
        raise InputError(
            f"{os.fspath(path)}:{line}: cannot read{the}: not a UTF-8 text file"
            f" (byte 0x{e.object[e.start]:02x} at offset {e.start}); a binary file?"
        ) from None
    except OSError as e:
        reason = e.strerror or str(e)
        raise InputError(f"{os.fspath(path)}: cannot read{the}: {reason}") from None


@contextlib.contextmanager
def atomic_outputs() -> Iterator[Callable[[str | os.PathLike[str]], Path]]:
    """Yield `stage(path) -> temporary path`; on success every staged file is renamed into place,
    on any error they are all removed."""
    staged: list[tuple[Path, Path]] = []

    def stage(path: str | os.PathLike[str]) -> Path:
        final = Path(path)
        # `.`, `..`, `/`: a folder named by a path with no file name of its own.
        if final.name in ("", ".", ".."):
            raise InputError(f"{final}: cannot write the result: a folder of that name is in the way")
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"{final.parent}: cannot create the output folder: {e.strerror}") from None
        tmp = final.with_name(f".{final.name}{_staged_suffix()}")
        staged.append((tmp, final))
        return tmp

    try:
        yield stage
        # Check every destination before the first rename, so a bad one cannot leave half the set.
        for _, final in staged:
            if final.is_dir():
                raise InputError(f"{final}: cannot write the result: a folder of that name is in the way")
        for tmp, final in staged:
            try:
                os.replace(tmp, final)
            except OSError as e:
                raise InputError(f"{final}: cannot write the result: {e.strerror}") from None
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise


def _staged_suffix() -> str:
    return f".{os.getpid()}.tmp"


def destination(path: Path) -> Path:
    """The file the user named for `path`, which may be its staged copy (what errors name)."""
    name, suffix = path.name, _staged_suffix()
    if name.startswith(".") and name.endswith(suffix):
        return path.with_name(name[1 : -len(suffix)])
    return path


def write_text(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{destination(path)}: cannot write: {e.strerror}") from None


def write_csv(path: Path, rows: Iterable[Sequence[object]], comments: Sequence[str] = ()) -> None:
    """Rows (header first) as CSV through the `csv` module: fields quoted where they need it;
    `comments` (lines starting `#`: what made the result, `clustersim.provenance.comment_lines`)
    above the header."""
    import csv  # here, not at start-up: its import compiles regular expressions

    try:
        with path.open("w", newline="", encoding="utf-8") as f:
            for line in comments:
                f.write(line.replace("\n", " ") + "\n")
            csv.writer(f, lineterminator="\n").writerows(rows)
    except OSError as e:
        raise InputError(f"{destination(path)}: cannot write: {e.strerror}") from None
