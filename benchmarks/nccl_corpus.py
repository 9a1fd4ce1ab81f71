"""The default model against the corpus of public nccl-tests results (issue 28, item 2).

For every entry of tests/data/nccl-tests/corpus.yaml: a platform file for the entry's hardware
(`platform_for`, written to a temporary folder), the entry's collective simulated on it over the
entry's own sizes with the default model (`clustersim.collective`: flow backend, NCCL's tuner, no
calibration), with the entry's NCCL_ALGO / NCCL_PROTO where its environment forces them, against
the measured table:

- large sizes (≥ 64 MiB): busbw error = mean simulated busbw / mean measured busbw − 1, over the
  entry's sizes ≥ 64 MiB; an entry is "within 15 %" when |error| ≤ 0.15;
- small sizes (≤ 64 KiB): time ratio = simulated / measured time per size; the entry's ratio is
  the geometric mean over its sizes ≤ 64 KiB, and it is "within 2×" when every one of those sizes
  is within a factor 2.

Measured: the out-of-place time of each row (nccl-tests' first time column); busbw from a time t
of size S on n ranks is S / t × nccl-tests' factor (2(n−1)/n all-reduce, (n−1)/n all-gather,
reduce-scatter and all-to-all), for measured and simulated alike.

The summary per split (train / validation) counts only entries that are modelled and not flagged:
flagged entries (a broken system, by the corpus' `flag`) are shown with their flag, and entries
the platform cannot express are shown as "not modelled: <why>" — never approximated.

    python3 benchmarks/nccl_corpus.py [--split train|validation] [--only ID ...] [--json OUT]
                                      [--every-size] [--keep-platforms DIR]

`--every-size` simulates every size of the log (default: only the sizes the summary uses);
`--keep-platforms` keeps the platform files written for the entries. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from clustersim.measure.calibrate.nccl_log import OPS
from clustersim.nccl_tests import busbw_factor

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "nccl-tests" / "corpus.yaml"
LARGE = 64 << 20  # busbw is compared at sizes ≥ 64 MiB
SMALL = 64 << 10  # time is compared at sizes ≤ 64 KiB
# NVLink line rate per GPU and direction, by generation: links × per-link rate (NVIDIA's
# datasheets: NVLink 3 on A100 12 × 25 GB/s = 300 GB/s; NVLink 4 on H100/H200 18 × 25 GB/s =
# 450 GB/s; NVLink 5 on B200 18 × 50 GB/s = 900 GB/s). The flow model then caps it at what NCCL
# reaches on the GPU type (crates/engine/src/collective/nccl.rs, `nvlink_gbps`).
NVLINK_GBITS = {3: 2400, 4: 3600, 5: 7200}
# The catalog accelerator each corpus GPU name runs as (python/clustersim/catalog/accelerators.yaml);
# a name missing here is not modelled.
# GB200 runs as B200: the same Blackwell GPU (SM100) with NVLink 5, 18 links (NVIDIA's GB200 NVL72
# page: 1.8 TB/s of NVLink per GPU, as HGX B200), the figures NCCL's tuner prices it by.
GPU_TYPES = {
    "A100": "A100",
    "A100-PCIe": "A100",
    "H100": "H100",
    "H200": "H200",
    "B200": "B200",
    "GB200": "B200",
}
# NVSwitches that reduce in the switch (NVLink SHARP, what NCCL's NVLS algorithms need): the
# third-generation NVSwitch of HGX H100/H200 and the fourth of HGX B200 and of GB200 NVL72's NVLink
# switch trays (NVIDIA's GB200 NVL72 page: SHARP in-network compute in the NVLink Switch); A100's
# NVSwitch does not.
NVLS_GPUS = {"H100", "H200", "B200", "GB200"}
# SimAI's default link latencies (gen_Topo_Template.py): NIC–switch 0.0005 ms, GPU–NVSwitch 0.000025 ms.
NIC_LATENCY = "500ns"
# EFA's NIC–switch link latency (ns) by EFA generation, in place of NIC_LATENCY: what a message
# pays on AWS's SRD through libfabric and the aws-ofi-nccl plugin, which nccl-tests shows as
# 60–70 µs (p5) and 160 µs (p4de) small all-reduces over 2 nodes, against 15–30 µs on InfiniBand.
# No published figure: FITTED on the train half only (`--fit-efa`): per generation, the latency
# at which the simulated times of the train entries' sizes ≤ 64 KiB have a geometric-mean ratio
# of 1 to the measured ones. EFA v1: a100_2x8_allreduce_aws_p4de_efa; EFA v2 (P5):
# h100_2x8_allreduce_aws_p5_efa. The validation half's P5 entries (KeitaW) check it.
EFA_LINK_LATENCY_NS = {1: 37130, 2: 13460}
NVLINK_LATENCY = "25ns"
# Environment variables the runner gives the model (the rest are listed per entry as not modelled).
FORCING = ("NCCL_ALGO", "NCCL_PROTO")
# The first NCCL releases with NVLS (NVLink SHARP inside a node) and NVLS tree (NVLS inside nodes,
# a tree across them): NCCL 2.17 and 2.18 (NVIDIA/nccl release notes). Both are on by default where
# the NVSwitch supports them (NCCL_NVLS_ENABLE's default) and NCCL's tuner picks them by predicted
# time; an entry whose NCCL version is not stated is taken as recent (every stated one is ≥ 2.20).
NVLS_SINCE = (2, 17)
NVLS_TREE_SINCE = (2, 18)
# Fabrics whose RDMA framing the platform expresses (its `transport=` on the leaf switch: links
# carry payload at line rate × MTU / (MTU + headers), crates/engine/src/catalog/transport.rs).
# AWS EFA (SRD, reached through the aws-ofi-nccl libfabric plugin) runs over Ethernet: its devices
# are taken as Ethernet RDMA NICs, RoCEv2's framing (Ethernet, IPv4, UDP and a transport header;
# SRD's header size is not published) and the catalog's NIC busbw at their line rate.
RDMA_FABRICS = {"ib": "ib", "roce": "roce", "efa": "roce"}


# The summary before this change (AWS EFA, GB200 and Lambda's network not modelled), what this
# change built, and what is still off, for RESULTS.md.
BEFORE = (
    "Before AWS EFA, one GB200 NVL72 rack and Lambda's network were built: train 62 % of 13 within "
    "15 %, validation 100 % of 8. Built since: EFA devices (P4de 4×100G, P5 32×100G, AWS's instance "
    "pages) as Ethernet RDMA NICs with a per-generation EFA link latency fitted on the train half "
    "(v1 37.1 µs, v2 13.5 µs: the validation P5 entries' times ≤ 64 KiB go from 0.35× to 1.0×); "
    "Lambda's B200 on 8×400G NDR (cited in the corpus); a run inside one NVL72 rack as one NVSwitch "
    "node of its 72 GPUs (GB200 as B200, NVLS on). Still off, validation: GB200 one rack +32 %: NVLS "
    "on 72 GPUs reaches 425 GB/s algbw at 4–8 GiB where NCCL's Blackwell NVLS efficiency (0.74 of "
    "721.8) gives ~500, and no train entry measures Blackwell NVLS to fit; one 8×H100 node's "
    "all-to-all measures 4 % below all-gather and reduce-scatter (a line through the rows ≥ 64 MiB: "
    "348.6 against 362.3 and 365.2 GB/s busbw; its fixed cost, 107 µs, is all-gather's) and is "
    "simulated 2.5 % above. NCCL 2.30 (NVIDIA/nccl 5067397c) runs it as 8 concurrent send/recv rounds in its "
    "point-to-point kernel: 2 channels per NVLink per peer (src/graph/paths.cc), at least "
    "p2pnChannels / 8 per peer (src/enqueue.cc), each channel's warps split among up to 8 "
    "concurrent sends and receives (src/device/sendrecv.h) where a ring channel gives all its warps "
    "to one copy. NCCL's tuner prices no point-to-point bandwidth, so no cited constant gives that "
    "kernel's copy rate, and no train entry has an all-to-all or send/recv next to a ring "
    "collective on one NVSwitch node (searched: NVIDIA/nccl and nccl-tests threads, cloud docs, "
    "public log repositories; nccl-tests#100's HGX A100 all-to-all table is not stored whole, OCI's "
    "GB300 page pairs all-to-all only with NVLS all-reduce): fitting the 0.96 on this validation "
    "pair is what the split forbids; "
    "≤ 64 KiB: the 32 B row of `h100_1x8_allreduce_dgxc_benchmarking` (68 µs between rows of 13 and "
    "15). Train: Google Cloud's gIB RoCE runs (google/dranet) measure 30–35 GB/s per 400 Gb/s NIC "
    "with 1 and with 8 GPUs per node (260 GB/s at 8 GiB on 2×8 B200), while dstack's all-reduce on "
    "the same a4-highgpu-8g (563 GB/s) needs ≥ 48 per NIC in the model: the sources disagree on one "
    "machine type, so no hardware constant fits both; 4- and 8-node H100 (gj-aion) +14 to +19 %. "
    "Not modelled (25 of 39 validation entries): no network stated (13 xxrjun, nccl-tests#322), HPE "
    "Slingshot on 4-GPU NVLink-mesh boards (8 Polaris), OCI H200's NIC rate not stated, GB200 across "
    "racks (NICs not stated)."
)


class NotModelled(Exception):
    """The platform cannot express the entry's hardware; the message says why."""


@dataclass
class PlatformSpec:
    """What `platform_for` took from an entry, and what it could not express (`caveats`: what
    the platform leaves out or assumes, reported with the entry's row)."""

    nodes: int
    gpus_per_node: int
    gpu_type: str
    nvlink_gbits: int | None
    nvswitch: bool
    nvls: bool
    nics_per_node: int
    nic_gbits: int | None
    transport: str | None = None
    nvls_tree: bool = False
    caveats: list[str] = field(default_factory=list)
    nic_latency: str = NIC_LATENCY

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    def text(self) -> str:
        """The platform file (docs/platform-format.md): per node its GPUs, an NVSwitch joining
        them (when more than one), and its NICs; every NIC on one leaf switch. A GPU with a NIC of
        its own (or k NICs) is linked to the leaf directly at the NIC's rate (k × it), as SimAI's
        files do; a NIC shared by several GPUs is a `nic` node, its GPUs linked to it at the NIC's
        rate (PCIe is not the bottleneck, see `platform_for`) and it to the leaf at its rate. The
        leaf is declared with the fabric's RDMA transport, so its links carry payload at the line
        rate less the IB or RoCEv2 framing, and a NIC's link no more than NCCL achieves through a
        NIC of its line rate (docs/platform-format.md)."""
        nics = (
            f"{self.nics_per_node} NICs × {self.nic_gbits} Gbit/s per node"
            if self.nics_per_node
            else "no NIC"
        )
        out = [f"# nccl-tests corpus platform: {self.nodes} × {self.gpus_per_node} {self.gpu_type}, {nics}"]
        # Every GPU first, node by node (rank r is the r-th GPU, and node ids follow SimAI's
        # layout, so `clustersim calibrate -n` can rewrite the platform as a SimAI topology).
        gpus = [[f"n{n}g{g}" for g in range(self.gpus_per_node)] for n in range(self.nodes)]
        out += [f"node {gpu} gpu type={self.gpu_type}" for node in gpus for gpu in node]
        share = self.nics_per_node > 0 and self.nics_per_node < self.gpus_per_node
        links = []
        for n, node in enumerate(gpus):
            if self.nvswitch:
                out.append(f"node n{n}nvs nvswitch reduction={'yes' if self.nvls else 'no'}")
                links += [f"link {gpu} n{n}nvs {self.nvlink_gbits}Gbps {NVLINK_LATENCY}" for gpu in node]
        if self.nics_per_node:
            transport = f" transport={self.transport}" if self.transport else ""
            out.append(f"node leaf switch tier=tor{transport}")
        for n, node in enumerate(gpus):
            if share:
                for k in range(self.nics_per_node):
                    out.append(f"node n{n}nic{k} nic")
                    links.append(f"link n{n}nic{k} leaf {self.nic_gbits}Gbps {self.nic_latency}")
            for g, gpu in enumerate(node):
                if share:
                    nic = g * self.nics_per_node // self.gpus_per_node
                    links.append(f"link {gpu} n{n}nic{nic} {self.nic_gbits}Gbps 0ns")
                elif self.nics_per_node > 0:
                    rate = self.nic_gbits * (self.nics_per_node // self.gpus_per_node)  # type: ignore[operator]
                    links.append(f"link {gpu} leaf {rate}Gbps {self.nic_latency}")
        out += links
        return "\n".join(out) + "\n"


def platform_for(entry: dict[str, Any]) -> PlatformSpec:
    """The platform of an entry's hardware, field by field; raises NotModelled with every reason
    the platform cannot express it.

    - `gpu`: the catalog accelerator (GPU_TYPES; A100-PCIe runs as A100: only its network port
      matters at one GPU per node; GB200 as B200, see GPU_TYPES). The type sets the tuner's GPU
      generation and the NVLink rate NCCL reaches.
    - `gpus_per_node`, `nodes`: GPUs per node and nodes, exactly (ranks = their product).
    - `nvlink`: the GPU–NVSwitch link rate (NVLINK_GBITS by generation). Unknown (null) with
      more than one GPU per node: not modelled.
    - `nvswitch`: GPUs of a node are one scale-up domain through one NVSwitch. Null is taken as
      true where 8 NVLink GPUs share a node (every 8-GPU HGX A100/H100/H200/B200 board joins its
      GPUs through NVSwitches); otherwise null or false with more than one GPU per node is not
      modelled: a 4-GPU board's direct NVLink mesh, or PCIe peer-to-peer, is no scale-up domain
      (the platform's domains are GPUs joined through NVSwitches).
      NVLS (in-switch reduction) is offered on H100/H200/B200 NVSwitches unless the entry's
      NCCL_NVLS_ENABLE=0 switched it off or its NCCL predates it (NVLS_SINCE); across nodes NVLS
      tree too (NVLS_TREE_SINCE). The tuner then picks them where they are fastest, as NCCL's.
    - `nics_per_node`, `nic_gbps`: one NIC per GPU, several per GPU (a port of their summed
      rate) or one per several GPUs (a NIC node they share); both must be stated for a multi-node
      run, and one must divide the other. NIC–switch links carry payload at line rate less the
      fabric's framing (`fabric`), and in a collective no more than NCCL achieves through a NIC of
      that line rate (the catalog's NIC busbw, docs/platform-format.md); NCCL's channel count and
      per-QP limits are not expressed.
    - `fabric`: `ib` and `roce` are the leaf's transport: links at line rate less InfiniBand's
      or RoCEv2's framing per 4096-byte packet (RoCE's congestion control is not expressed);
      `efa` (AWS SRD through the aws-ofi-nccl libfabric plugin) runs over Ethernet and is taken
      as RoCE (RDMA_FABRICS; a caveat says so); `slingshot` (HPE Slingshot through libfabric's
      CXI provider) is not modelled; null on a multi-node run is not modelled.
    - `pcie_gen`: not used. The GPU–NIC hop is not rate-limited (PCIe x16: Gen4 32 GB/s,
      Gen5 64 GB/s, above HDR's 25 GB/s and NDR's 50 GB/s).
    - `gpu_nic_placement`: a GPU and its NIC under one PCIe switch is what the platform assumes;
      a path through the CPU (SYS, "different CPU sockets", "not aligned") is not modelled.
    - `switch_tiers`: not used: every NIC on one non-blocking switch (no oversubscription, no
      ECMP collisions between tiers).
    - `nvlink_domain_gpus` (GB200 NVL72: NVLink across the trays of a rack): a run inside one
      domain is one node of all its GPUs on one NVSwitch (NCCL's multi-node NVLink treats the
      domain as one node); runs over several domains are not modelled.
    """
    h = entry["hardware"]
    env = entry.get("env") or {}
    why: list[str] = []
    caveats: list[str] = []
    gpus, nodes = int(h["gpus_per_node"]), int(h["nodes"])
    gpu_type = GPU_TYPES.get(h["gpu"])
    if gpu_type is None:
        why.append(f"GPU {h['gpu']} is not in the accelerator catalog")
    elif h["gpu"] != gpu_type:
        caveats.append(f"{h['gpu']} runs as the catalog's {gpu_type}")
    domain = h.get("nvlink_domain_gpus")
    if domain and nodes * gpus <= domain:
        # Every GPU of the run in one NVLink domain (an NVL72 rack's trays): NCCL runs it as one
        # node (multi-node NVLink, NCCL_MNNVL_ENABLE), its GPUs joined by the rack's NVLink
        # switches; no network between them.
        caveats.append(f"{nodes} trays of {gpus} GPUs in one NVLink domain of {domain}: one NVSwitch node")
        gpus, nodes = nodes * gpus, 1
    elif domain:
        why.append(f"NVLink domains of {domain} GPUs across nodes, joined by a network (NVL72 racks)")
    nvswitch = False
    nvlink = None
    if gpus > 1:
        nvswitch = bool(h.get("nvswitch"))
        if h.get("nvswitch") is None and gpus == 8 and h.get("nvlink") is not None:
            nvswitch = True
            caveats.append("NVSwitch taken for 8 NVLink GPUs per node (HGX board)")
        if h.get("nvlink") is None:
            why.append("NVLink generation not stated")
        elif h["nvlink"] not in NVLINK_GBITS:
            why.append(f"NVLink {h['nvlink']} has no rate here")
        else:
            nvlink = NVLINK_GBITS[h["nvlink"]]
        if not nvswitch:
            what = "no NVSwitch" if h.get("nvswitch") is False else "NVSwitch not stated"
            why.append(
                f"{what} with {gpus} GPUs per node (a direct NVLink mesh or PCIe is no scale-up domain)"
            )
    version = nccl_version(entry)
    nvls = (
        nvswitch
        and h["gpu"] in NVLS_GPUS
        and str(env.get("NCCL_NVLS_ENABLE", "1")).strip() != "0"
        and (version is None or version >= NVLS_SINCE)
    )
    nvls_tree = nvls and nodes > 1 and (version is None or version >= NVLS_TREE_SINCE)
    nics, nic_gbits = int(h.get("nics_per_node") or 0), h.get("nic_gbps")
    if nodes > 1:
        fabric = h.get("fabric")
        if fabric == "efa":
            caveats.append(
                "EFA devices as Ethernet RDMA NICs (RoCEv2 framing, the catalog's NIC busbw at their"
                " rate); SRD's own overheads and the aws-ofi-nccl plugin are not modelled"
            )
        elif fabric == "slingshot":
            why.append("HPE Slingshot (libfabric CXI provider), not IB verbs")
        elif fabric not in ("ib", "roce", "efa"):
            why.append("fabric not stated")
        if not h.get("nics_per_node"):
            why.append("NICs per node not stated")
        if nic_gbits is None:
            why.append("NIC rate not stated")
        if nics and nics % gpus and gpus % nics:
            why.append(f"{nics} NICs for {gpus} GPUs per node: neither divides the other")
        elif nics and gpus % nics == 0 and nics < gpus:
            caveats.append(f"{gpus // nics} GPUs share each NIC")
        elif nics > gpus:
            caveats.append(f"each GPU's {nics // gpus} NICs as one port of their summed rate")
        placement = str(h.get("gpu_nic_placement") or "")
        if any(word in placement for word in ("SYS", "different CPU", "not aligned")):
            why.append(f"GPU–NIC path through the CPU ({placement.split(':')[0]})")
    else:
        nics, nic_gbits = 0, None
    if why:
        raise NotModelled("; ".join(why))
    assert gpu_type is not None
    transport = RDMA_FABRICS.get(h.get("fabric")) if nodes > 1 else None
    spec = PlatformSpec(
        nodes, gpus, gpu_type, nvlink, nvswitch, nvls, nics, nic_gbits, transport, nvls_tree, caveats
    )
    if nodes > 1 and h.get("fabric") == "efa":
        generation = h.get("efa_generation")
        if generation not in EFA_LINK_LATENCY_NS:
            raise NotModelled(f"EFA generation {generation} has no fitted latency")
        spec.nic_latency = f"{EFA_LINK_LATENCY_NS[generation]}ns"
        caveats.append(
            f"EFA v{generation} NIC links at the fitted {EFA_LINK_LATENCY_NS[generation] / 1e3:g} us"
        )
    return spec


def fit_efa_latency(entries: list[dict[str, Any]], folder: Path) -> dict[int, int]:
    """EFA_LINK_LATENCY_NS fitted on the train half: per EFA generation, the link latency (ns,
    to 10 ns) at which the geometric mean of simulated / measured time over the generation's
    train entries' sizes ≤ 64 KiB is 1 (bisection on a log scale between 0.1 and 1000 µs; the
    ratio grows with the latency)."""
    out: dict[int, int] = {}
    train = [
        e
        for e in entries
        if e["split"] == "train" and not e.get("flag") and e["hardware"].get("fabric") == "efa"
    ]
    for generation in sorted({e["hardware"].get("efa_generation") for e in train}):
        mine = [e for e in train if e["hardware"].get("efa_generation") == generation]

        def log_ratio(ns: float, generation: int = generation, mine: list = mine) -> float:
            EFA_LINK_LATENCY_NS[generation] = round(ns)
            logs = []
            for e in mine:
                spec, meas = platform_for(e), measured(e)
                sizes = sorted(s for s in meas if s <= SMALL)
                for size, t, _, _ in simulate(e, spec, sizes, folder):
                    logs.append(math.log(t / meas[size]))
            return statistics.fmean(logs)

        lo, hi = math.log(100.0), math.log(1e6)
        while hi - lo > 1e-3:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if log_ratio(math.exp(mid)) < 0 else (lo, mid)
        out[generation] = int(round(math.exp((lo + hi) / 2), -1))
    return out


def nccl_version(entry: dict[str, Any]) -> tuple[int, int] | None:
    """(major, minor) of the entry's NCCL version, or None where the source does not say."""
    v = entry.get("nccl_version")
    if not v:
        return None
    major, minor = str(v).split(".")[:2]
    return int(major), int(minor)


def model_env(entry: dict[str, Any], spec: PlatformSpec) -> dict[str, str]:
    """What the model is told of the run: the entry's forced NCCL_ALGO / NCCL_PROTO, and NVLS /
    NVLS tree as NCCL offers them on the entry's hardware (the tuner's AS_NVLS_ENABLE and
    AS_NVLSTREE_ENABLE switches, off by default as in SimAI)."""
    env = forced_env(entry)
    if spec.nvls:
        env["AS_NVLS_ENABLE"] = "1"
    if spec.nvls_tree:
        env["AS_NVLSTREE_ENABLE"] = "1"
    return env


def forced_env(entry: dict[str, Any]) -> dict[str, str]:
    """NCCL_ALGO / NCCL_PROTO where the entry's environment sets them (the model's only inputs
    from the environment: nothing else of the process's environment reaches it)."""
    env = entry.get("env") or {}
    return {k: str(env[k]) for k in FORCING if k in env}


def ignored_env(entry: dict[str, Any]) -> list[str]:
    """The entry's NCCL_* settings the default model does not take (shown in the JSON rows)."""
    env = entry.get("env") or {}
    taken = set(FORCING) | {"NCCL_NVLS_ENABLE", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME"}
    return [f"{k}={v}" for k, v in env.items() if k.startswith("NCCL_") and k not in taken]


def busbw(collective: str, n: int, size: int, seconds: float) -> float:
    """GB/s (10^9 B/s) of one size's time, as nccl-tests computes it."""
    return size / seconds / 1e9 * busbw_factor(collective, n)


def measured(entry: dict[str, Any]) -> dict[int, float]:
    """Size (B) → out-of-place time (s) of the entry's log, read with the project's reader."""
    from clustersim.measure.calibrate.nccl_log import read_nccl_log

    runs = read_nccl_log(CORPUS.parent / entry["log"])
    out: dict[int, float] = {}
    for run in runs:
        for size, seconds in run.points:
            out.setdefault(size, seconds)  # the first time of a row is its out-of-place one
    return out


def compared_sizes(sizes: list[int], every: bool = False) -> list[int]:
    """The sizes to simulate: those the summary compares (≤ SMALL, ≥ LARGE), or all."""
    return sorted(s for s in sizes if every or s <= SMALL or s >= LARGE)


def simulate(
    entry: dict[str, Any], spec: PlatformSpec, sizes: list[int], folder: Path
) -> list[tuple[int, float, str, str]]:
    """(size, simulated time s, algorithm, protocol) per size: the entry's collective on its
    platform (written to `folder`) with the default model and the entry's environment
    (`model_env`)."""
    import clustersim

    path = folder / f"{entry['id']}.platform"
    path.write_text(spec.text(), encoding="utf-8")
    op = OPS[entry["collective"]]
    out = []
    for size in sizes:
        r = clustersim.collective(op, path, minbytes=size, maxbytes=size, env=model_env(entry, spec))
        out.append((size, r["time_us"][0] * 1e-6, r["algorithm"][0], r["protocol"][0]))
    return out


def compare(entry: dict[str, Any], sim: list[tuple[int, float, str, str]], meas: dict[int, float]) -> dict:
    """Per-size rows and the entry's large-size busbw error and small-size time ratios."""
    n = entry["hardware"]["nodes"] * entry["hardware"]["gpus_per_node"]
    c = entry["collective"]
    rows = []
    for size, t_sim, algo, proto in sim:
        t = meas[size]
        rows.append(
            {
                "size": size,
                "measured_time_us": t * 1e6,
                "simulated_time_us": t_sim * 1e6,
                "measured_busbw": busbw(c, n, size, t),
                "simulated_busbw": busbw(c, n, size, t_sim),
                "algorithm": algo,
                "protocol": proto,
            }
        )
    large = [r for r in rows if r["size"] >= LARGE]
    small = [r for r in rows if r["size"] <= SMALL]
    out: dict[str, Any] = {"rows": rows, "large_error": None, "small_ratio": None, "small_worst": None}
    if large:
        meas_bw = statistics.fmean(r["measured_busbw"] for r in large)
        sim_bw = statistics.fmean(r["simulated_busbw"] for r in large)
        out |= {"large_measured_busbw": meas_bw, "large_simulated_busbw": sim_bw}
        out["large_error"] = sim_bw / meas_bw - 1
        out["large_algorithm"] = f"{large[-1]['algorithm']}/{large[-1]['protocol']}"
    if small:
        ratios = [r["simulated_time_us"] / r["measured_time_us"] for r in small]
        out["small_ratio"] = math.exp(statistics.fmean(math.log(x) for x in ratios))
        out["small_worst"] = max(ratios, key=lambda x: max(x, 1 / x))
        out["small_algorithm"] = f"{small[0]['algorithm']}/{small[0]['protocol']}"
    return out


def run_entry(entry: dict[str, Any], folder: Path, every: bool = False) -> dict[str, Any]:
    """One entry's result: its identity, status (ok / not modelled / error), platform and
    comparison."""
    h = entry["hardware"]
    row: dict[str, Any] = {
        "id": entry["id"],
        "split": entry["split"],
        "flag": entry.get("flag"),
        "collective": entry["collective"],
        "nodes": h["nodes"],
        "gpus_per_node": h["gpus_per_node"],
        "forced": forced_env(entry),
        "env_not_modelled": ignored_env(entry),
    }
    try:
        spec = platform_for(entry)
    except NotModelled as e:
        return row | {"status": "not modelled", "why": str(e)}
    row["platform"] = asdict(spec)
    meas = measured(entry)
    try:
        sim = simulate(entry, spec, compared_sizes(list(meas), every), folder)
    except Exception as e:  # an input the engine refuses (e.g. a forced algorithm it lacks)
        return row | {"status": "error", "why": str(e).splitlines()[0]}
    return row | {"status": "ok"} | compare(entry, sim, meas)


def summary(
    results: list[dict[str, Any]], split: str, pairs: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """Per split: entries counted (modelled, not flagged), the share within 15 % and 25 % at
    ≥ 64 MiB, median and worst |error|, the share within 2× at ≤ 64 KiB: every size, and by
    the geometric mean of the sizes' ratios (a single noisy measured size fails the first), and
    of the `orderings` pairs of the split: how many are ordered (not ties) and ordered right."""
    mine = [r for r in results if r["split"] == split]
    counted = [r for r in mine if r["status"] == "ok" and not r["flag"]]
    large = [r for r in counted if r["large_error"] is not None]
    small = [r for r in counted if r["small_ratio"] is not None]
    errors = [abs(r["large_error"]) for r in large]
    worst = max(large, key=lambda r: abs(r["large_error"]), default=None)
    return {
        "split": split,
        "entries": len(mine),
        "counted": len(counted),
        "flagged": sum(1 for r in mine if r["flag"]),
        "not_modelled": sum(1 for r in mine if r["status"] == "not modelled" and not r["flag"]),
        "errors": sum(1 for r in mine if r["status"] == "error" and not r["flag"]),
        "large": len(large),
        "within_15": sum(e <= 0.15 for e in errors) / len(errors) if errors else None,
        "within_25": sum(e <= 0.25 for e in errors) / len(errors) if errors else None,
        "median_error": statistics.median(errors) if errors else None,
        "worst_error": worst["large_error"] if worst else None,
        "worst_id": worst["id"] if worst else None,
        "small": len(small),
        "small_geomean_within_2x": (
            sum(max(r["small_ratio"], 1 / r["small_ratio"]) <= 2 for r in small) / len(small)
            if small
            else None
        ),
        "small_within_2x": (
            sum(max(r["small_worst"], 1 / r["small_worst"]) <= 2 for r in small) / len(small)
            if small
            else None
        ),
        "ordered_pairs": sum(1 for p in pairs if p["split"] == split and p["right"] is not None),
        "ordered_right": sum(1 for p in pairs if p["split"] == split and p["right"]),
        "tied_pairs": sum(1 for p in pairs if p["split"] == split and p["right"] is None),
    }


# Measured busbw within this fraction of each other is a tie: no order to get right. Two runs of
# one physical schedule differ by about this much in the corpus (all-gather and reduce-scatter,
# the same ring, 336.7 and 338.0 GB/s on one 8×H100 node of xxrjun/nccl-tests-cluster, 0.4 %).
ORDER_TIE = 0.03
# The hardware fields two entries of one source must share for their busbw to be compared.
SAME_MACHINE = ("gpu", "nodes", "gpus_per_node", "nics_per_node", "nic_gbps", "fabric")


def orderings(entries: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pair of counted entries (modelled, not flagged, with sizes ≥ 64 MiB) of one source and
    author on one machine (`SAME_MACHINE`) that differ in exactly one thing the issue asks the order of:
    the operation (collectives differ, the forced NCCL_ALGO / NCCL_PROTO the same) or the
    algorithm (the collective the same, NCCL_ALGO differs). Each pair: `kind`, the two ids, the
    measured and simulated busbw ratios a / b at ≥ 64 MiB, and `right`: whether the simulation
    orders them as measured (None for a tie, |measured ratio − 1| ≤ ORDER_TIE)."""
    by_id = {r["id"]: r for r in results}
    counted = [
        e
        for e in entries
        if by_id.get(e["id"], {}).get("status") == "ok"
        and not e.get("flag")
        and by_id[e["id"]].get("large_error") is not None
    ]
    pairs = []
    for i, a in enumerate(counted):
        for b in counted[i + 1 :]:
            ha, hb = a["hardware"], b["hardware"]
            same_post = all(a["source"].get(k) == b["source"].get(k) for k in ("source_id", "author"))
            if not same_post or any(ha.get(k) != hb.get(k) for k in SAME_MACHINE):
                continue
            fa, fb = forced_env(a), forced_env(b)
            if a["collective"] != b["collective"] and fa == fb:
                kind = "operation"
            elif a["collective"] == b["collective"] and fa.get("NCCL_ALGO") != fb.get("NCCL_ALGO"):
                kind = "algorithm"
            else:
                continue
            ra, rb = by_id[a["id"]], by_id[b["id"]]
            measured_ratio = ra["large_measured_busbw"] / rb["large_measured_busbw"]
            simulated_ratio = ra["large_simulated_busbw"] / rb["large_simulated_busbw"]
            tie = abs(measured_ratio - 1) <= ORDER_TIE
            pairs.append(
                {
                    "kind": kind,
                    "a": a["id"],
                    "b": b["id"],
                    "split": a["split"],
                    "measured_ratio": measured_ratio,
                    "simulated_ratio": simulated_ratio,
                    "right": None if tie else (measured_ratio > 1) == (simulated_ratio > 1),
                }
            )
    return pairs


def ordering_table(pairs: list[dict[str, Any]]) -> str:
    """One line per ordered pair (markdown)."""
    lines = [
        "| kind | a | b | split | busbw a / b measured | simulated | order |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in pairs:
        verdict = "tie" if p["right"] is None else ("right" if p["right"] else "**wrong**")
        lines.append(
            f"| {p['kind']} | `{p['a']}` | `{p['b']}` | {p['split']} | {p['measured_ratio']:.3f}"
            f" | {p['simulated_ratio']:.3f} | {verdict} |"
        )
    return "\n".join(lines)


def _pct(x: float | None, signed: bool = True) -> str:
    return "—" if x is None else (f"{x * 100:+.0f} %" if signed else f"{x * 100:.0f} %")


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def entry_table(results: list[dict[str, Any]]) -> str:
    """One line per entry (markdown)."""
    lines = [
        "| entry | split | ranks | busbw ≥ 64 MiB meas → sim GB/s | error | algo (large)"
        " | time ≤ 64 KiB sim/meas (worst) | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ranks = f"{r['nodes']}×{r['gpus_per_node']}"
        parts = [f"{k}={v}" for k, v in r["forced"].items()]
        parts += [r["flag"]] if r["flag"] else []
        parts += [f"{r['status']}: {r['why']}"] if r["status"] != "ok" else r["platform"]["caveats"]
        parts += [f"not modelled: {', '.join(r['env_not_modelled'])}"] if r["env_not_modelled"] else []
        note = "; ".join(parts)
        if r["status"] != "ok":
            lines.append(f"| `{r['id']}` | {r['split']} | {ranks} | | | | | {note} |")
            continue
        bw = (
            f"{r['large_measured_busbw']:.1f} → {r['large_simulated_busbw']:.1f}"
            if r["large_error"] is not None
            else "—"
        )
        small = f"{_ratio(r['small_ratio'])} ({_ratio(r['small_worst'])})" if r["small_ratio"] else "—"
        algo = r.get("large_algorithm", "—")
        lines.append(
            f"| `{r['id']}` | {r['split']} | {ranks} | {bw} | {_pct(r['large_error'])} | {algo}"
            f" | {small} | {note} |"
        )
    return "\n".join(lines)


def summary_table(results: list[dict[str, Any]], pairs: Sequence[dict[str, Any]] = ()) -> str:
    """The summary per split (markdown)."""
    lines = [
        "| split | entries | counted (not modelled, flagged, errors) | ≥ 64 MiB: within 15 % | within 25 % |"
        " median \\|error\\| | worst | ≤ 64 KiB: every size within 2× (geometric mean)"
        " | order of algorithms and operations: right of ordered pairs (ties) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for split in ("train", "validation"):
        s = summary(results, split, pairs)
        worst = "—" if s["worst_id"] is None else f"{_pct(s['worst_error'])} (`{s['worst_id']}`)"
        share = (
            "—" if s["within_15"] is None else f"{_pct(s['within_15'], False)} of {s['large']}",
            "—" if s["within_25"] is None else f"{_pct(s['within_25'], False)}",
            "—"
            if s["small_within_2x"] is None
            else f"{_pct(s['small_within_2x'], False)} of {s['small']}"
            f" ({_pct(s['small_geomean_within_2x'], False)})",
        )
        lines.append(
            f"| {split} | {s['entries']}"
            f" | {s['counted']} ({s['not_modelled']}, {s['flagged']}, {s['errors']})"
            f" | {share[0]} | {share[1]} | {_pct(s['median_error'], False)} | {worst} | {share[2]}"
            f" | {s['ordered_right']} of {s['ordered_pairs']} ({s['tied_pairs']}) |"
        )
    return "\n".join(lines)


def load(split: str | None = None, only: list[str] | None = None) -> list[dict[str, Any]]:
    """The corpus' entries, filtered by split and id."""
    entries = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["entries"]
    if only:
        unknown = set(only) - {e["id"] for e in entries}
        if unknown:
            raise SystemExit(f"--only: no entry {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e["id"] in only]
    if split:
        entries = [e for e in entries if e["split"] == split]
    return entries


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("train", "validation"))
    ap.add_argument("--only", nargs="+", metavar="ID", help="these entries only")
    ap.add_argument("--json", metavar="OUT", help="write every entry and row as JSON")
    ap.add_argument("--every-size", action="store_true", help="simulate every size of the log")
    ap.add_argument("--keep-platforms", metavar="DIR", help="write the platform files here")
    ap.add_argument("--write", action="store_true", help="record the summary in benchmarks/RESULTS.md")
    ap.add_argument(
        "--fit-efa", action="store_true", help="fit EFA_LINK_LATENCY_NS on the train half and print it"
    )
    args = ap.parse_args(argv)
    if args.fit_efa:
        with tempfile.TemporaryDirectory() as tmp:
            print(fit_efa_latency(load(), Path(tmp)))
        return
    entries = load(args.split, args.only)
    start = time.monotonic()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep_platforms or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for k, entry in enumerate(entries, 1):
            t0 = time.monotonic()
            results.append(run_entry(entry, folder, args.every_size))
            status = results[-1]["status"]
            print(
                f"[{k}/{len(entries)}] {entry['id']}: {status} ({time.monotonic() - t0:.1f} s)",
                file=sys.stderr,
            )
    wall = time.monotonic() - start
    pairs = orderings(entries, results)
    print(entry_table(results))
    print()
    print(ordering_table(pairs))
    print()
    print(summary_table(results, pairs))
    print(f"\n{len(results)} entries in {wall:.0f} s", file=sys.stderr)
    if args.json:
        doc = {"wall_s": wall, "summary": [summary(results, s, pairs) for s in ("train", "validation")]}
        doc |= {"orderings": pairs, "entries": results}
        Path(args.json).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    if args.write:
        from results import run_header, write_section

        head = (
            f"{run_header()} {len(results)} entries in {wall:.0f} s; the table per entry: without `--write`."
            f" {BEFORE}"
        )
        wrong = [p for p in pairs if p["right"] is False]
        order = "Pairs ordered wrong: " + (
            "; ".join(
                f"{p['kind']} `{p['a']}` / `{p['b']}` measured {p['measured_ratio']:.3f},"
                f" simulated {p['simulated_ratio']:.3f}"
                for p in wrong
            )
            or "none"
        )
        write_section("nccl_corpus", f"{head}\n\n{summary_table(results, pairs)}\n\n{order}.")


if __name__ == "__main__":
    main()
