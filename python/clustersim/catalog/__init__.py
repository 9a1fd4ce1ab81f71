"""Model and accelerator presets shipped with clustersim (YAML; users add their own files)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from clustersim.errors import InputError

HERE = Path(__file__).parent


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise InputError(f"{path}{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a mapping of names to entries")
    return {k: v for k, v in doc.items() if not str(k).startswith("_")}


def lookup(kind: str, name: str, extra: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The catalog entry `name` of `kind` ("models" or "accelerators"); entries of a user's file
    `extra` are added to the shipped ones and win on equal names."""
    entries = load_yaml(HERE / f"{kind}.yaml")
    if extra is not None:
        entries = entries | load_yaml(extra)
    key = name.lower()
    if key not in entries:
        raise InputError(f"{kind}: unknown name '{name}' (valid: {', '.join(sorted(entries))})")
    return dict(entries[key], name=key)
