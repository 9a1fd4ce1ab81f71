"""SimAI's fabric templates (gen_Topo_Template.py: Spectrum-X, AlibabaHPN, DCN+ and the custom
fabric, one pod or several joined by a core tier) and the k-ary fat-tree, built by the engine.

The parameters (every gen_Topo_Template.py flag, its defaults per template, which structure flags
a template forces), the numbering and wiring rules, the file names and the warnings are the
engine's (`crates/engine/src/platform/templates/`, whose module docs state them); this module only
passes parameters in and wraps what comes back in a `Topology` view.
"""

from __future__ import annotations

from clustersim import _engine
from clustersim.topology.model import Topology

TEMPLATES: tuple[str, ...] = tuple(_engine.simai_templates())
"""Named templates; `None` (no -topo) is the custom fabric shaped by --ro, --dt and --dp."""

TemplateParams = _engine.TemplateParams
"""gen_Topo_Template.py's parameters, resolved; each one an attribute (`p.gpu`, `p.bandwidth`)."""

PARAMETERS: list[tuple[str, str, str, str]] = _engine.template_parameters()
"""(name, short flag, kind, help) of every gen_Topo_Template.py parameter, in the script's order;
kinds: count (≥ 1), whole (≥ 0), rate, delay, probability, text."""

FLAGS = {name: flag for name, flag, _, _ in PARAMETERS}
"""Parameter name → gen_Topo_Template.py's short flag."""


def template_params(
    topology: str | None = None,
    *,
    ro: bool = False,
    dt: bool = False,
    dp: bool = False,
    **overrides: object,
) -> TemplateParams:
    """Resolve a template's parameters as gen_Topo_Template.py does: `ro`, `dt`, `dp` are the
    --ro/--dt/--dp flags (the named templates force their structure); `overrides` are parameters
    by name, None meaning "not given"."""
    return _engine.TemplateParams(topology, overrides, ro=ro, dt=dt, dp=dp)


def file_name(p: TemplateParams) -> str:
    """The file name gen_Topo_Template.py gives these parameters (one pod)."""
    return p.file_name()


def simai_template(
    topology: str | None = None,
    *,
    ro: bool = False,
    dt: bool = False,
    dp: bool = False,
    pods: int = 1,
    **overrides: object,
) -> Topology:
    """Build a template fabric with gen_Topo_Template.py's parameters (see `template_params`).

    `simai_template("DCN+", gpu=64)` equals `gen_Topo_Template.py -topo DCN+ -g 64` link for link.
    `pods` > 1 joins that many copies of the pod with a core tier."""
    platform, name, warnings = template_params(topology, ro=ro, dt=dt, dp=dp, **overrides).build(pods)
    return Topology(platform, name=name, warnings=tuple(warnings))


def fat_tree(k: int, **params: object) -> Topology:
    """A k-ary fat-tree of k³/4 GPUs of k-port switches; `params` are SimAI's link and server
    parameters (gpu_per_server, nv_switch_per_server, gpu_type, nvlink_bw, nv_latency, bandwidth,
    ap_bandwidth, latency, error_rate), with the custom fabric's defaults."""
    platform, name, warnings = _engine.fat_tree(k, params)
    return Topology(platform, name=name, warnings=tuple(warnings))
