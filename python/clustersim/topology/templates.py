"""SimAI's fabric templates (gen_Topo_Template.py), one pod or several joined by a core tier.

A pod is a two-tier Clos: GPUs (each its own NIC) → ASW (access/ToR switches) → PSW (pod switches);
inside a server every GPU also links to each of the server's NVSwitches. The fabric is built as
link arrays and handed to the engine (`Platform.from_arrays`), which checks it and holds it.

Numbering (formats.md §3.2), for one pod of G GPUs and S = G / gpu_per_server servers:

- GPUs 0 … G−1, server s holding GPUs s·gps … s·gps + gps − 1;
- then NVSwitches, nv_switch_per_server per server, server 0's first;
- then ASWs (dual-ToR: the whole first set, then the whole second set);
- then PSWs (dual-plane: plane 1, then plane 2; plane 1 gets the odd one out).

Wiring, in file order: for each GPU, one link to each NVSwitch of its server (`nvlink_bw`,
`nv_latency`), then one link to an ASW (dual-ToR: one to each set) (`bandwidth`, `latency`); then for
each ASW, one link to each PSW (dual-plane: set i only to plane i) (`ap_bandwidth`, `latency`).

- Rail-optimised: a segment is `nics_per_aswitch` servers; it has one ASW per rail (per local GPU
  index), so GPU i goes to ASW (i // (gps·npa))·gps + i % gps of each set.
- Not rail-optimised: GPU i goes to ASW i // nics_per_aswitch of each set.

The ASW count follows from the GPU count (a different `asw_switch_num` is corrected with a warning,
as the script does) and a pod holds at most `asw_per_psw` ASWs' worth of segments.

Several pods (`pods` > 1, beyond SimAI): GPUs are numbered pod by pod (pod p holds GPUs p·G … p·G +
G − 1), then all NVSwitches, all ASWs and all PSWs pod by pod, then the core switches. There are as
many core switches as PSWs in a pod; core switch c joins PSW c of every pod with one link whose rate
is the sum of that PSW's ASW links (a non-blocking bundle) and whose delay is `latency`.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.topology.model import KIND_CODES, NVSWITCH, SWITCH, Topology
from clustersim.topology.params import FLAGS, TemplateParams, template_params
from clustersim.topology.units import delay_ns, parse_error_rate, rate_gbs


@dataclass(frozen=True)
class _Pod:
    """Structure of one pod (counts and per-GPU ASW choice)."""

    gpus: int
    servers: int
    nvswitches: int
    asw_per_set: int
    sets: int  # 1 = single ToR, 2 = dual ToR
    psw_planes: tuple[int, ...]  # PSW count per plane


@dataclass(frozen=True)
class LinkRates:
    """Parsed link parameters, in the engine's units: rates in GB/s (bytes/ns), delays in ns."""

    nvlink: float
    nv_latency: float
    nic: float
    latency: float
    ap: float
    error_rate: float


def file_name(p: TemplateParams) -> str:
    """The file name gen_Topo_Template.py gives these parameters (one pod)."""
    tail = f"{p.gpu}g_{p.gpu_per_server}gps_"
    end = f"{p.bandwidth}_{p.gpu_type}"
    if p.rail_optimized and not p.dual_tor:
        prefix = "Spectrum-X_" if p.topology == "Spectrum-X" else "Rail_Opti_SingleToR_"
        return prefix + tail + end
    if p.rail_optimized:
        prefix = "AlibabaHPN_" if p.topology == "AlibabaHPN" else "Rail_Opti_"
        plane = "DualPlane_" if p.dual_plane else "SinglePlane_"
        return prefix + tail + "DualToR_" + plane + end
    if p.topology == "DCN+":
        return ("DCN+DualToR_" if p.dual_tor else "DCN+SingleToR_") + tail + end
    return "No_Rail_Opti_" + tail + ("DualToR_" if p.dual_tor else "SingleToR_") + end


def link_rates(p: TemplateParams) -> LinkRates:
    values = []
    for name, parse in (
        ("nvlink_bw", rate_gbs),
        ("nv_latency", delay_ns),
        ("bandwidth", rate_gbs),
        ("latency", delay_ns),
        ("ap_bandwidth", rate_gbs),
        ("error_rate", parse_error_rate),
    ):
        try:
            values.append(parse(str(getattr(p, name))))
        except ValueError as e:
            raise InputError(f"template: {name} ({FLAGS[name]}): {e}") from None
    return LinkRates(*values)


def _positive(p: TemplateParams, *names: str, zero_ok: bool = False) -> None:
    for name in names:
        value = getattr(p, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero_ok else 1):
            least = 0 if zero_ok else 1
            raise InputError(
                f"template: {name} ({FLAGS[name]}): must be a whole number ≥ {least}, got {value!r}"
            )


def _pod(p: TemplateParams, warnings: list[str]) -> _Pod:
    """Check the parameters and size one pod, as gen_Topo_Template.py does."""
    _positive(p, "gpu", "gpu_per_server", "nics_per_aswitch", "asw_per_psw")
    _positive(p, "nv_switch_per_server", "psw_switch_num", "asw_switch_num", zero_ok=True)
    if p.dual_plane and not p.rail_optimized:
        raise InputError("template: --dp: a fabric that is not rail-optimised cannot be dual-plane")
    if p.dual_plane and not p.dual_tor:
        raise InputError("template: --dp: a rail-optimised single-ToR fabric cannot be dual-plane (add --dt)")
    if p.gpu % p.gpu_per_server:
        raise InputError(
            f"template: gpu (-g): {p.gpu} GPUs do not fill whole servers of {p.gpu_per_server} (-gps)"
        )
    gps, npa = p.gpu_per_server, p.nics_per_aswitch
    sets = 2 if p.dual_tor else 1
    asw_per_segment_per_set = gps if p.rail_optimized else 1
    gpus_per_segment = npa * asw_per_segment_per_set
    segments = -(-p.gpu // gpus_per_segment)
    asw = segments * asw_per_segment_per_set * sets
    if asw != p.asw_switch_num:
        warnings.append(f"asw_switch_num (-asn) {p.asw_switch_num} does not fit {p.gpu} GPUs: using {asw}")
    # The script's pod capacity: segments ≤ asw_per_psw / (ASWs per segment), where a rail-optimised
    # dual-ToR segment counts one set and a non-rail-optimised dual-ToR segment counts both.
    per_segment = gps if p.rail_optimized else sets
    capacity = p.asw_per_psw // per_segment
    if segments > capacity:
        raise InputError(
            f"template: gpu (-g): {p.gpu} GPUs need {segments} segments of {gpus_per_segment} GPUs, but "
            f"one pod holds {capacity} (asw_per_psw -app {p.asw_per_psw} / {per_segment}); "
            "use more pods for more GPUs"
        )
    psn = p.psw_switch_num
    planes = ((psn + 1) // 2, psn // 2) if p.dual_plane else (psn,)
    servers = p.gpu // gps
    return _Pod(p.gpu, servers, servers * p.nv_switch_per_server, asw // sets, sets, planes)


def _gpu_asw(p: TemplateParams, i: int) -> int:
    """Index, within one ASW set, of the ASW that pod-local GPU i links to."""
    if p.rail_optimized:
        gps = p.gpu_per_server
        return (i // (gps * p.nics_per_aswitch)) * gps + i % gps
    return i // p.nics_per_aswitch


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
    `pods` > 1 joins that many copies of the pod with a core tier (module docstring)."""
    p = template_params(topology, ro=ro, dt=dt, dp=dp, **overrides)
    return build(p, pods)


def build(p: TemplateParams, pods: int = 1) -> Topology:
    """The fabric of resolved parameters `p`, with `pods` pods."""
    if isinstance(pods, bool) or not isinstance(pods, int) or pods < 1:
        raise InputError(f"template: pods: must be a whole number ≥ 1, got {pods!r}")
    warnings: list[str] = []
    pod = _pod(p, warnings)
    r = link_rates(p)
    gps, nsps = p.gpu_per_server, p.nv_switch_per_server
    psw_per_pod = sum(pod.psw_planes)
    asw_per_pod = pod.asw_per_set * pod.sets
    nv_base = pods * pod.gpus
    asw_base = nv_base + pods * pod.nvswitches
    psw_base = asw_base + pods * asw_per_pod
    core_base = psw_base + pods * psw_per_pod
    cores = psw_per_pod if pods > 1 else 0
    links = LinkArrays(r.error_rate)
    for g in range(pods * pod.gpus):
        q, i = divmod(g, pod.gpus)
        nv = nv_base + q * pod.nvswitches + (i // gps) * nsps
        for j in range(nsps):
            links.add(g, nv + j, r.nvlink, r.nv_latency)
        for s in range(pod.sets):
            asw = asw_base + q * asw_per_pod + s * pod.asw_per_set + _gpu_asw(p, i)
            links.add(g, asw, r.nic, r.latency)
    for q in range(pods):
        for s in range(pod.sets):
            # Single plane: every ASW to every PSW. Dual plane: set s to plane s only.
            first = sum(pod.psw_planes[:s]) if len(pod.psw_planes) > 1 else 0
            count = pod.psw_planes[s] if len(pod.psw_planes) > 1 else psw_per_pod
            for a in range(pod.asw_per_set):
                asw = asw_base + q * asw_per_pod + s * pod.asw_per_set + a
                psw0 = psw_base + q * psw_per_pod + first
                for k in range(count):
                    links.add(asw, psw0 + k, r.ap, r.latency)
    if cores:
        uplink = [0.0] * psw_per_pod
        for dst, bandwidth in zip(links.dst, links.bandwidth, strict=True):
            if dst >= psw_base:
                uplink[(dst - psw_base) % psw_per_pod] += bandwidth
        for c in range(cores):
            for q in range(pods):
                links.add(psw_base + q * psw_per_pod + c, core_base + c, uplink[c] / pods, r.latency)

    name = file_name(p) + (f"_{pods}pods" if pods > 1 else "")
    switches = core_base + cores - asw_base
    platform = links.platform(f"template {name}", nv_base, asw_base - nv_base, switches, gps, p.gpu_type)
    return Topology(platform, name=name, warnings=tuple(warnings))


class LinkArrays:
    """Full-duplex links gathered as the engine's arrays (GB/s, ns), one error rate for all."""

    def __init__(self, error_rate: float) -> None:
        self.error_rate = error_rate
        self.src: list[int] = []
        self.dst: list[int] = []
        self.bandwidth: list[float] = []
        self.latency: list[float] = []

    def add(self, src: int, dst: int, bandwidth: float, latency: float) -> None:
        self.src.append(src)
        self.dst.append(dst)
        self.bandwidth.append(bandwidth)
        self.latency.append(latency)

    def platform(
        self, source: str, gpus: int, nvswitches: int, switches: int, gpus_per_server: int, gpu_type: str
    ) -> _engine.Platform:
        """The engine's platform of GPUs 0 … gpus − 1, then NVSwitches, then switches."""
        codes = [KIND_CODES[NVSWITCH]] * nvswitches + [KIND_CODES[SWITCH]] * switches
        return _engine.Platform.from_arrays(
            source,
            [0] * gpus + codes,
            self.src,
            self.dst,
            self.bandwidth,
            self.latency,
            [self.error_rate] * len(self.src),
            gpus_per_server,
            gpu_type,
        )
