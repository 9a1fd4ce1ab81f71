"""gen_Topo_Template.py's parameters: names, defaults per template, and which flags a template forces.

The names are the script's own (`gpu`, `nics_per_aswitch`, …); rates and delays stay strings, as
the script takes them, because they also appear in the output file name. Defaults are the script's
code values (formats.md §3.3), not the README table's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from clustersim.errors import InputError

TEMPLATES = ("Spectrum-X", "AlibabaHPN", "DCN+")
"""Named templates; `None` (no -topo) is the custom fabric shaped by --ro, --dt and --dp."""


@dataclass
class TemplateParams:
    """Every knob of gen_Topo_Template.py, with its base defaults (the custom fabric's)."""

    topology: str | None = None
    rail_optimized: bool = False
    dual_tor: bool = False
    dual_plane: bool = False
    gpu: int = 32
    error_rate: str = "0"
    gpu_per_server: int = 8
    gpu_type: str = "H100"
    nv_switch_per_server: int = 1
    nvlink_bw: str = "2880Gbps"
    nv_latency: str = "0.000025ms"
    latency: str = "0.0005ms"
    bandwidth: str = "400Gbps"
    asw_switch_num: int = 8
    nics_per_aswitch: int = 64
    psw_switch_num: int = 64
    ap_bandwidth: str = "400Gbps"
    asw_per_psw: int = 64


FLAGS = {
    "gpu": "-g",
    "error_rate": "-er",
    "gpu_per_server": "-gps",
    "gpu_type": "-gt",
    "nv_switch_per_server": "-nsps",
    "nvlink_bw": "-nvbw",
    "nv_latency": "-nl",
    "latency": "-l",
    "bandwidth": "-bw",
    "asw_switch_num": "-asn",
    "nics_per_aswitch": "-npa",
    "psw_switch_num": "-psn",
    "ap_bandwidth": "-apbw",
    "asw_per_psw": "-app",
}
"""Parameter name → gen_Topo_Template.py's short flag (for messages)."""


def _template_defaults(topology: str | None, dt: bool, dp: bool) -> tuple[dict[str, object], dict[str, bool]]:
    """(parameter defaults that differ from the base ones, forced structure flags) of a template."""
    if topology == "Spectrum-X":
        return {"gpu": 4096}, {"rail_optimized": True, "dual_tor": False, "dual_plane": False}
    if topology == "AlibabaHPN":
        defaults: dict[str, object] = {
            "gpu": 15360,
            "bandwidth": "200Gbps",
            "asw_switch_num": 240,
            "nics_per_aswitch": 128,
            "psw_switch_num": 120,
            "asw_per_psw": 120 if dp else 240,
        }
        return defaults, {"rail_optimized": True, "dual_tor": True, "dual_plane": dp}
    if topology == "DCN+":
        defaults = {"gpu": 512, "asw_switch_num": 8, "asw_per_psw": 8, "psw_switch_num": 8}
        if dt:
            defaults.update(bandwidth="200Gbps", nics_per_aswitch=128)
        return defaults, {"rail_optimized": False, "dual_tor": dt, "dual_plane": False}
    return {}, {}


def template_params(
    topology: str | None = None,
    *,
    ro: bool = False,
    dt: bool = False,
    dp: bool = False,
    **overrides: object,
) -> TemplateParams:
    """Resolve a template's parameters as gen_Topo_Template.py does.

    `ro`, `dt`, `dp` are the --ro/--dt/--dp flags: they shape the custom fabric (topology None);
    the named templates force their structure (AlibabaHPN honours --dp, DCN+ honours --dt, the
    rest are ignored, as in the script). `overrides` are parameters by name; None means "not given".
    """
    if topology is not None and topology not in TEMPLATES:
        raise InputError(
            f"template: topology: unknown template '{topology}' "
            f"(valid: {', '.join(TEMPLATES)}, or none for a custom fabric)"
        )
    known = set(FLAGS)
    for name in overrides:
        if name not in known:
            raise InputError(f"template: {name}: not a parameter (valid: {', '.join(FLAGS)})")
    defaults, forced = _template_defaults(topology, dt, dp)
    params = TemplateParams(topology=topology, rail_optimized=ro, dual_tor=dt, dual_plane=dp)
    params = dataclasses.replace(params, **defaults, **forced)  # type: ignore[arg-type]
    given = {k: v for k, v in overrides.items() if v is not None}
    if "error_rate" in given:
        given["error_rate"] = str(given["error_rate"])
    return dataclasses.replace(params, **given)  # type: ignore[arg-type]
