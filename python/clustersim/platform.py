"""Platforms of typed devices, read by the engine: platform files (docs/platform-format.md) and
SimAI topology files. `Platform` is the engine's object; Python holds a handle and its arrays."""

from __future__ import annotations

import os

from clustersim import _engine
from clustersim.errors import InputError

Platform = _engine.Platform


def accelerator_names() -> list[str]:
    """Accelerator types a platform file may name: the catalog's entries."""
    from clustersim.catalog import HERE, load_yaml

    return sorted(load_yaml(HERE / "accelerators.yaml"))


def read_platform(path: str | os.PathLike[str]) -> Platform:
    """Read a platform file or a SimAI topology file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{os.fspath(path)}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    return Platform.parse(os.fspath(path), text, accelerator_names())
