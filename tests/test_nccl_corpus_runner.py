"""benchmarks/nccl_corpus.py, the corpus runner (issue 28 item 2), on a few small entries: busbw
from simulated time with nccl-tests' factor (checked against the numbers nccl-tests printed), the
platform it builds for an entry's hardware, what it refuses to model, and a hand-computed case."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from clustersim.platform import read_platform
from conftest import run_clustersim

_SPEC = importlib.util.spec_from_file_location(
    "nccl_corpus", Path(__file__).resolve().parents[1] / "benchmarks" / "nccl_corpus.py"
)
corpus = importlib.util.module_from_spec(_SPEC)
sys.modules["nccl_corpus"] = corpus  # dataclasses look their module up while it loads
_SPEC.loader.exec_module(corpus)

ENTRIES = {e["id"]: e for e in corpus.load()}
# One node (8 H100 on NVSwitch), two nodes with a NIC per GPU (H100, NDR, NCCL_ALGO=Ring), two
# nodes with a NIC per two GPUs (A100, HDR).
ONE_NODE = "h100_1x8_allreduce_nccltests290"
TWO_NODES = "h100_2x8_allreduce_nccltests309_gjaion_ring"
SHARED_NIC = "all_reduce_16x_a100_sharp"


def printed_busbw(entry: dict) -> dict[int, float]:
    """Size → the out-of-place busbw nccl-tests printed in the entry's log."""
    out: dict[int, float] = {}
    header: list[str] | None = None
    for line in (corpus.CORPUS.parent / entry["log"]).read_text(encoding="utf-8").splitlines():
        words = line.lstrip("#").split()
        if words[:2] == ["size", "count"]:
            header = words
        elif header and words and words[0].isdigit() and len(words) == len(header):
            out.setdefault(int(words[0]), float(words[header.index("busbw")]))
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("platforms")
    return {i: corpus.run_entry(ENTRIES[i], folder) for i in (ONE_NODE, TWO_NODES, SHARED_NIC)}


@pytest.mark.parametrize("entry_id", [ONE_NODE, TWO_NODES, SHARED_NIC])
def test_busbw_is_nccl_tests_factor_times_size_over_time(results, entry_id):
    # (a) all-reduce on n ranks: busbw = S / t × 2(n − 1)/n, for the simulated time and the
    # measured one; the measured one is what nccl-tests printed (to its 2 decimals).
    r = results[entry_id]
    assert r["status"] == "ok", r
    n = r["nodes"] * r["gpus_per_node"]
    printed = printed_busbw(ENTRIES[entry_id])
    assert r["rows"] and any(row["size"] >= corpus.LARGE for row in r["rows"])
    for row in r["rows"]:
        s = row["size"]
        assert row["simulated_busbw"] == pytest.approx(s / (row["simulated_time_us"] * 1e3) * 2 * (n - 1) / n)
        assert row["measured_busbw"] == pytest.approx(s / (row["measured_time_us"] * 1e3) * 2 * (n - 1) / n)
        assert row["measured_busbw"] == pytest.approx(printed[s], rel=0.01, abs=0.01)


def test_large_error_and_small_ratio_are_from_the_rows(results):
    r = results[SHARED_NIC]
    large = [x for x in r["rows"] if x["size"] >= 64 << 20]
    small = [x for x in r["rows"] if x["size"] <= 64 << 10]
    assert large and small
    sim = sum(x["simulated_busbw"] for x in large) / len(large)
    meas = sum(x["measured_busbw"] for x in large) / len(large)
    assert r["large_error"] == pytest.approx(sim / meas - 1)
    ratios = [x["simulated_time_us"] / x["measured_time_us"] for x in small]
    assert min(ratios) <= r["small_ratio"] <= max(ratios)
    assert r["small_worst"] in ratios


@pytest.mark.parametrize("entry_id", [ONE_NODE, TWO_NODES, SHARED_NIC])
def test_platform_has_the_entrys_gpus_nodes_and_nics(tmp_path, entry_id):
    # (b) the platform file: nodes × GPUs per node ranks, one scale-up domain per node with the
    # entry's GPUs, and per node the entry's NIC count at its rate on the network switch.
    entry = ENTRIES[entry_id]
    h = entry["hardware"]
    spec = corpus.platform_for(entry)
    path = tmp_path / "p.platform"
    path.write_text(spec.text(), encoding="utf-8")
    p = read_platform(path)
    assert p.ranks == h["nodes"] * h["gpus_per_node"]
    device, domain, _ = p.placement
    assert sorted(domain.count(d) for d in set(domain)) == [h["gpus_per_node"]] * h["nodes"]
    kinds, names = p.kinds, p.names
    src, dst, bandwidth, _ = p.links
    ports = [(names[a], b) for a, d, b in zip(src, dst, bandwidth, strict=True) if kinds[d] == "switch"]
    if h["nodes"] == 1:
        assert ports == []
        return
    # The leaf is an InfiniBand switch: its links carry payload at line rate × 4096 / (4096 + 26)
    # (catalog/transport.rs: LRH 8, BTH 12, ICRC 4, VCRC 2 bytes per 4096-byte packet).
    assert h["fabric"] == "ib"
    for n in range(h["nodes"]):
        mine = [b for name, b in ports if name.startswith(f"n{n}")]
        assert len(mine) == h["nics_per_node"]
        payload = h["nic_gbps"] / 8 * 4096 / 4122  # Gbit/s → GB/s, less the framing
        assert mine == pytest.approx([payload] * h["nics_per_node"])
    # GPUs that share a NIC reach the switch only through it.
    if h["nics_per_node"] < h["gpus_per_node"]:
        assert all(kinds[device[r]] == "gpu" for r in range(p.ranks))
        assert {kinds[names.index(name)] for name, _ in ports} == {"nic"}


def test_what_the_platform_cannot_express_is_not_modelled(tmp_path):
    reasons = {
        "a100_8x4_allreduce_alcf_polaris": "Slingshot",
        "h100_10x8_allreduce_xxrjun": "NIC rate not stated",
        "h100_1x4_allreduce_snellius": "NVSwitch not stated",
        "gb200_32x4_allreduce_coreweave_2racks": "NVLink domains of 72",
        "a100pcie_2x1_allreduce_nccltests293_gdrsys": "through the CPU",
    }
    for entry_id, why in reasons.items():
        with pytest.raises(corpus.NotModelled, match=why):
            corpus.platform_for(ENTRIES[entry_id])
        r = corpus.run_entry(ENTRIES[entry_id], tmp_path)
        assert r["status"] == "not modelled" and why in r["why"] and "rows" not in r


def test_efa_devices_are_ethernet_rdma_nics_at_their_summed_rate(tmp_path):
    # p5.48xlarge: 32 EFA devices of 100 Gbit/s for 8 GPUs, so each GPU's 4 devices are one port
    # of 400 Gbit/s on a RoCE-framed leaf: payload at 400 / 8 × 4096 / (4096 + 62 + 20) GB/s
    # (catalog/transport.rs: Ethernet, IPv4, UDP, BTH, ICRC, preamble and gap).
    entry = ENTRIES["h100_2x8_allreduce_keitaw_p5_efa_nccl2_22_3"]
    spec = corpus.platform_for(entry)
    assert spec.transport == "roce" and any("EFA" in c for c in spec.caveats)
    path = tmp_path / "p.platform"
    path.write_text(spec.text(), encoding="utf-8")
    p = read_platform(path)
    kinds = p.kinds
    src, dst, bandwidth, _ = p.links
    ports = [b for _, d, b in zip(src, dst, bandwidth, strict=True) if kinds[d] == "switch"]
    assert ports == pytest.approx([400 / 8 * 4096 / 4178] * 16)


def test_efa_latency_is_the_train_halfs_fit_and_only_train_entries_set_it(tmp_path):
    # EFA_LINK_LATENCY_NS is what the fit gives on the train half (to its 10 ns rounding), and the
    # fit reads no validation entry: dropping every validation entry leaves it unchanged.
    entries = corpus.load()
    train = [e for e in entries if e["split"] == "train"]
    saved = dict(corpus.EFA_LINK_LATENCY_NS)
    try:
        assert corpus.fit_efa_latency(train, tmp_path) == saved
        assert corpus.fit_efa_latency(entries, tmp_path) == saved
    finally:
        corpus.EFA_LINK_LATENCY_NS.update(saved)
    spec = corpus.platform_for(ENTRIES["h100_2x8_allreduce_keitaw_p5_efa_nccl2_22_3"])
    assert spec.nic_latency == f"{saved[2]}ns" and f"{spec.nic_latency} " in spec.text().replace("\n", " ")


def test_one_nvl72_rack_is_one_nvswitch_node_of_72_gpus(tmp_path):
    # 18 GB200 trays of 4 GPUs in one NVLink domain: NCCL's multi-node NVLink runs them as one
    # node, so the platform is 72 GPUs on one reducing NVSwitch, with no network.
    spec = corpus.platform_for(ENTRIES["gb200_18x4_allreduce_coreweave_1rack"])
    assert (spec.nodes, spec.gpus_per_node, spec.gpu_type, spec.nvls) == (1, 72, "B200", True)
    path = tmp_path / "p.platform"
    path.write_text(spec.text(), encoding="utf-8")
    p = read_platform(path)
    _, domain, _ = p.placement
    assert p.ranks == 72 and len(set(domain)) == 1
    assert "switch" not in p.kinds


def test_forced_algorithm_and_protocol_come_from_the_entry(results):
    assert corpus.forced_env(ENTRIES[TWO_NODES]) == {"NCCL_ALGO": "Ring"}
    assert corpus.forced_env(ENTRIES["h100_128x8_allreduce_nccltests322"]) == {
        "NCCL_ALGO": "Ring",
        "NCCL_PROTO": "LL128",
    }
    assert corpus.forced_env(ENTRIES[ONE_NODE]) == {}
    assert {row["algorithm"] for row in results[TWO_NODES]["rows"]} == {"ring"}


def test_two_ranks_one_nic_each_take_size_over_nic_rate(tmp_path):
    # (c) one GPU per node, one NIC of B = 200 Gbit/s = 25 GB/s, two nodes: a ring all-reduce of S
    # sends 2(n − 1)/n · S = S bytes out of each NIC, so t ≈ S / B and busbw = S/t · 2(n−1)/n ≈ B ×
    # the model's efficiency. The model applies the protocol's efficiency times the algorithm's
    # (crates/engine/src/collective/nccl.rs): Simple 1.0 (LL 0.5, LL128 0.92) × ring 1.0; NCCL's
    # tuner picks Ring/Simple at this size. The NIC's line less the IB framing is 25 × 4096/4122 =
    # 24.84 GB/s, and NCCL achieves the catalog's busbw of a 200 Gbit/s NIC (ConnectX-6, 23.5 GB/s;
    # NCCL's maintainers quote 24 per HDR NIC, nccl-tests#119), so busbw ≈ 23.5 GB/s.
    entry = {
        "id": "hand_2x1",
        "log": None,
        "collective": "all_reduce",
        "env": {},
        "hardware": {"gpu": "H100", "gpus_per_node": 1, "nodes": 2, "nvlink": None, "nvswitch": None,
                     "nics_per_node": 1, "nic_gbps": 200, "fabric": "ib"},
    }  # fmt: skip
    spec = corpus.platform_for(entry)
    size = 1 << 30
    [(s, seconds, algorithm, protocol)] = corpus.simulate(entry, spec, [size], tmp_path)
    assert (algorithm, protocol) == ("ring", "Simple")
    # Plus NCCL's latency, by hand: Ring/Simple base 8.4 µs and 2 network hops of 14 µs + twice
    # the 1 µs GPU–leaf–GPU path (Simple's flush), × 1.4 (multi-node Ring/Simple all-reduce).
    latency = 1.4 * (8.4 + 2 * (14 + 2 * 1.0)) * 1e-6
    assert seconds == pytest.approx(size / 23.5e9 + latency, rel=1e-6)
    assert corpus.busbw("all_reduce", 2, s, seconds) == pytest.approx(23.49, rel=0.001)
    # A line rate no catalog NIC has (350 Gbit/s) keeps the line less the framing: on RoCE 4096
    # of every 4178 bytes of line time (headers 62, preamble and inter-frame gap 20).
    roce = entry | {"hardware": entry["hardware"] | {"fabric": "roce", "nic_gbps": 350}}
    [(_, seconds, _, _)] = corpus.simulate(roce, corpus.platform_for(roce), [size], tmp_path)
    assert seconds == pytest.approx(size / (350e9 / 8 * 4096 / 4178) + latency, rel=1e-6)


def test_nvls_is_offered_where_nccl_offers_it():
    # NVLS inside a node from NCCL 2.17, NVLS tree across nodes from 2.18; an entry without a
    # version is taken as recent; NCCL_NVLS_ENABLE=0 or an A100's NVSwitch: neither.
    def env(entry_id: str, **change: object) -> dict[str, str]:
        entry = ENTRIES[entry_id] | change
        return corpus.model_env(entry, corpus.platform_for(entry))

    assert env(ONE_NODE) == {"AS_NVLS_ENABLE": "1"}
    assert env(TWO_NODES) == {"NCCL_ALGO": "Ring", "AS_NVLS_ENABLE": "1", "AS_NVLSTREE_ENABLE": "1"}
    assert env(TWO_NODES, nccl_version="2.17.1") == {"NCCL_ALGO": "Ring", "AS_NVLS_ENABLE": "1"}
    assert env(ONE_NODE, nccl_version="2.16.5") == {}
    assert env(ONE_NODE, env={"NCCL_NVLS_ENABLE": "0"}) == {}
    assert env(SHARED_NIC) == {}


def test_8_h100_nvls_all_reduce_reaches_the_catalogs_busbw(results):
    # The known figure: 8 H100 on NVSwitch, NVLS all-reduce ≈ 475 GB/s busbw at large sizes (the
    # catalog's nvls_busbw; a maintainer quotes ≈ 480, nccl-tests#212); NCCL's tuner picks NVLS.
    r = results[ONE_NODE]
    [big] = [row for row in r["rows"] if row["size"] == 4 << 30]
    assert big["algorithm"] == "nvls"
    assert big["simulated_busbw"] == pytest.approx(475, rel=0.01)
    assert big["simulated_busbw"] < 475  # NCCL's latency on top of the asymptote


def test_calibrate_on_an_entrys_log_and_platform_recovers_it(tmp_path):
    # Issue 28: `clustersim calibrate LOG -n PLATFORM` on a corpus entry, with the runner's platform
    # for it, fits the measured table: after rescaling, every size within 5 % (here the 8 × H100
    # all-reduce, 32 MiB–16 GiB; before calibration the platform runs the ring, up to 30 % slow).
    entry = ENTRIES["h100_1x8_allreduce_xxrjun"]
    platform = tmp_path / "p.platform"
    platform.write_text(corpus.platform_for(entry).text(), encoding="utf-8")
    log = corpus.CORPUS.parent / entry["log"]
    rc, _, stderr = run_clustersim("calibrate", log, "-n", platform, "-o", tmp_path / "c-", cwd=tmp_path)
    assert rc == 0, stderr
    (s,) = json.loads((tmp_path / "c-calibration.json").read_text())["series"]
    assert s["before_residual"]["max_abs"] > 0.2
    assert s["after_residual"]["max_abs"] <= 0.05


def test_orderings_pair_one_machines_operations_and_algorithms_and_judge_their_order():
    # Hand-made: one post, one 8×H100 node; all-reduce 450, all-gather 336 and reduce-scatter
    # 338 (a tie: 0.6 % apart), all-to-all 320; a forced-ring all-reduce 370. Another author's
    # run on the same hardware and a flagged entry are never paired.
    hw = {
        "gpu": "H100",
        "nodes": 1,
        "gpus_per_node": 8,
        "nics_per_node": 0,
        "nic_gbps": None,
        "fabric": "none",
    }
    src = {"source_id": "s", "author": "x"}

    def entry(i, c, env=None, author="x", flag=None):
        return {
            "id": i,
            "collective": c,
            "env": env or {},
            "hardware": hw,
            "split": "validation",
            "source": src | {"author": author},
            "flag": flag,
        }

    entries = [
        entry("ar", "all_reduce"),
        entry("ag", "all_gather"),
        entry("rs", "reduce_scatter"),
        entry("a2a", "alltoall"),
        entry("ring", "all_reduce", {"NCCL_ALGO": "Ring"}),
        entry("other", "all_gather", author="y"),
        entry("broken", "all_gather", flag="broken: test"),
    ]
    measured = {"ar": 450, "ag": 336, "rs": 338, "a2a": 320, "ring": 370, "other": 100, "broken": 50}
    simulated = {"ar": 460, "ag": 350, "rs": 350, "a2a": 360, "ring": 360, "other": 100, "broken": 400}
    results = [
        {
            "id": i,
            "split": "validation",
            "flag": "broken: test" if i == "broken" else None,
            "status": "ok",
            "large_error": simulated[i] / measured[i] - 1,
            "large_measured_busbw": measured[i],
            "large_simulated_busbw": simulated[i],
            "small_ratio": None,
            "small_worst": None,
        }
        for i in measured
    ]
    pairs = {(p["a"], p["b"]): p for p in corpus.orderings(entries, results)}
    # 4 collectives: 6 operation pairs; the forced ring against the default all-reduce: 1
    # algorithm pair; the ring against other collectives differs in two things: no pair.
    assert set(pairs) == {
        ("ar", "ag"),
        ("ar", "rs"),
        ("ar", "a2a"),
        ("ag", "rs"),
        ("ag", "a2a"),
        ("rs", "a2a"),
        ("ar", "ring"),
    }
    assert pairs["ar", "ring"]["kind"] == "algorithm" and pairs["ar", "ring"]["right"] is True
    assert pairs["ag", "rs"]["right"] is None  # 336 / 338: within ORDER_TIE
    assert pairs["ag", "a2a"]["measured_ratio"] == pytest.approx(336 / 320)
    assert pairs["ag", "a2a"]["right"] is False  # measured ag > a2a, simulated 350 < 360
    assert pairs["ar", "a2a"]["right"] is True
    s = corpus.summary(results, "validation", list(pairs.values()))
    assert (s["ordered_pairs"], s["ordered_right"], s["tied_pairs"]) == (6, 4, 1)
