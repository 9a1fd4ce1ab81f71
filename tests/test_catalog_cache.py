"""The shipped catalog kept parsed in the user's cache: the same entries as the YAML, PyYAML not
imported once the copy is there, and a copy that is stale, corrupt or cannot be written is no
worse than none."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml
from clustersim.catalog import HERE

CHILD = """
import json, sys
from clustersim.catalog import shipped
entries = {kind: shipped(kind) for kind in ("models",)}
print(json.dumps({"entries": entries, "yaml": "yaml" in sys.modules}))
"""


def shipped_in_child(cache) -> dict:
    env = os.environ | {"XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


def from_yaml() -> dict:
    docs = {kind: yaml.safe_load((HERE / f"{kind}.yaml").read_text()) for kind in ("models",)}
    return {kind: {k: v for k, v in doc.items() if not k.startswith("_")} for kind, doc in docs.items()}


def test_the_kept_copy_is_the_yaml_and_spares_pyyaml(tmp_path):
    first = shipped_in_child(tmp_path)
    assert first["yaml"], "no copy yet: the YAML is parsed"
    assert first["entries"] == from_yaml()
    kept = sorted(p.name for p in (tmp_path / "clustersim").iterdir())
    assert len(kept) == 1 and all(k.startswith("catalog-") and k.endswith(".json") for k in kept), kept
    second = shipped_in_child(tmp_path)
    assert not second["yaml"], "the kept copy is read instead"
    assert second["entries"] == first["entries"]


def test_a_stale_or_corrupt_copy_is_parsed_again_and_rewritten(tmp_path):
    shipped_in_child(tmp_path)
    (models,) = (tmp_path / "clustersim").iterdir()
    stale = json.loads(models.read_text())
    stale["text"] += "# another version\n"
    stale["entries"]["gpt-7b"]["layers"] = 1
    models.write_text(json.dumps(stale))
    got = shipped_in_child(tmp_path)
    assert got["yaml"] and got["entries"] == from_yaml()
    assert not shipped_in_child(tmp_path)["yaml"], "the copy rewritten"
    models.write_text('{"text": ')
    got = shipped_in_child(tmp_path)
    assert got["yaml"] and got["entries"] == from_yaml()
    assert not shipped_in_child(tmp_path)["yaml"], "the corrupt copy rewritten"


def test_no_writable_cache_still_reads_the_catalog(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    for _ in range(2):
        got = shipped_in_child(blocked)
        assert got["yaml"] and got["entries"] == from_yaml()
