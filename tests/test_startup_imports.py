"""Start-up stays lean: importing the CLI loads none of the heavy libraries (they are imported
where they are used). A regression here once cost every command 0.12 s."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("networkx", "matplotlib", "pandas", "scipy", "ray", "plotly")


def test_importing_the_cli_loads_no_heavy_library():
    code = f"import sys, clustersim.cli; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
