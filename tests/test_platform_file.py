"""Platform files of typed devices: read by the engine, seen from Python as arrays, run by the
flow model; bad input named by file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from clustersim import _engine
from clustersim.errors import InputError
from clustersim.platform import read_platform

ROOT = Path(__file__).resolve().parents[1]
MIXED = ROOT / "examples" / "mixed_h100_a100.platform"


def test_the_mixed_example_is_typed_and_placed() -> None:
    p = read_platform(MIXED)
    kinds = p.kinds
    assert kinds.count("gpu") == 16 and kinds.count("memory") == 3 and kinds.count("cxl_switch") == 1
    assert p.ranks == 16
    device, domain, rail = p.placement
    # GPUs in file order; each server's NVSwitch makes it one scale-up domain of 8 rails.
    assert [p.names[d] for d in device[:2]] == ["s0g0", "s0g1"]
    assert domain == [0] * 8 + [1] * 8 and rail == list(range(8)) * 2
    assert p.accelerator_types == ["h100"] * 8 + ["a100"] * 8  # catalog names
    src, dst, gbps, ns = p.links
    # 34 duplex links: 16 NVLink, 16 NIC, 2 CPU-DRAM, 2 CPU-CXL, 2 ToR-spine, 1 pool; each both ways.
    assert len(src) == 2 * (16 + 16 + 2 + 2 + 2 + 1)
    first = src.index(device[0])
    assert gbps[first] == 450.0 and ns[first] == 25.0
    with pytest.raises(InputError, match="cpu; a SimAI file holds"):
        p.to_simai()


def flow_ns(topology: object, a: int, b: int, size: float) -> float:
    return _engine.flow_completion_times(topology, [(a, b, size, 0.0)])[0]


def test_each_generation_moves_data_at_its_own_rates() -> None:
    p = read_platform(MIXED)
    device, _, _ = p.placement
    gb = 1e9
    # Inside a server over the NVSwitch: 450 GB/s (H100) vs 300 GB/s (A100), two 25 ns hops.
    assert flow_ns(p, device[0], device[1], gb) == pytest.approx(gb / 450 + 50, rel=1e-9)
    assert flow_ns(p, device[8], device[9], gb) == pytest.approx(gb / 300 + 50, rel=1e-9)
    # Rail 0 to rail 0 across servers through tor0: the A100's 200 Gb/s NIC is the bottleneck.
    assert flow_ns(p, device[0], device[8], gb) == pytest.approx(gb / 25 + 1000, rel=1e-9)


def test_a_simai_file_reads_as_a_platform_too(tmp_path: Path) -> None:
    from clustersim.topology import simai_template

    text = simai_template("Spectrum-X", gpu=16).to_simai()
    path = tmp_path / "sx.txt"
    path.write_text(text)
    p = read_platform(path)
    assert p.ranks == 16 and p.placement[1] == [0] * 8 + [1] * 8
    again = tmp_path / "again.txt"
    again.write_text(p.to_simai())
    assert read_platform(again).links == p.links
    assert flow_ns(p, 0, 9, 1e6) == flow_ns(text, 0, 9, 1e6)


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("node s0g3 gpu type=H100", "node s0g2 gpu type=H100", ":10: node name: 's0g2' is already"),
        ("link s0g0 nvs0 3600Gbps 25ns", "link s0g0 nvs9 3600Gbps 25ns", ": link dst: no node named 'nvs9'"),
        ("node s0g3 gpu type=H100", "node s0g3 gpu type=Z9", ":10: type: unknown accelerator type 'Z9'"),
    ],
)
def test_bad_platforms_name_file_line_and_field(tmp_path: Path, old: str, new: str, where: str) -> None:
    text = MIXED.read_text()
    assert old in text
    path = tmp_path / "bad.platform"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(InputError) as e:
        read_platform(path)
    message = str(e.value)
    assert message.startswith(str(path)) and where in message and "\n" not in message


def test_a_rank_on_a_switch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.platform"
    path.write_text(
        "node g0 gpu type=h100\nnode g1 gpu type=h100\nnode t switch\n"
        "link g0 t 400Gbps 1us\nlink g1 t 400Gbps 1us\nrank 0 g0\nrank 1 t\n"
    )
    with pytest.raises(InputError, match=r"r.platform:7: rank device: 't' is a switch, not an accelerator"):
        read_platform(path)


def test_collective_runs_on_a_platform_file(run_cli) -> None:
    # Rank 0..7 are the DGX H100: ring all-reduce of 1 GiB within 10 % of NCCL's measured
    # 370 GB/s busbw (shared/reference/hardware.md §3), NVLS within 10 % of 480.
    for algo, nccl in (("ring", 370.0), ("nvls", 480.0)):
        rc, out, err = run_cli(
            "collective", "allreduce", "-b", "1G", "-e", "1G", "-n", MIXED, "-g", "8", "--algo", algo
        )
        assert rc == 0, err
        busbw = float(out.splitlines()[3].split()[6])  # below the heading and nccl-tests' two
        assert abs(busbw - nccl) <= 0.1 * nccl, (algo, busbw)
    # The A100 server's NVSwitch does not reduce: NVLS over all 16 ranks is refused in one line.
    rc, out, err = run_cli("collective", "allreduce", "-b", "1M", "-e", "1M", "-n", MIXED, "--algo", "nvls")
    assert rc == 2 and "nvls cannot run allreduce on 16 ranks" in err and len(err.strip().splitlines()) == 1


def test_run_takes_a_platform_file(run_cli, tmp_path: Path) -> None:
    workload = ROOT / "examples" / "microAllReduce.txt"
    rc, out, err = run_cli("run", "-w", workload, "-n", MIXED, "-g", "16", "-r", tmp_path / "mix-")
    assert rc == 0, err
    assert (tmp_path / "mix-EndToEnd.csv").is_file() and "exposed TP comm" in out


def test_the_api_hands_the_engine_the_platform_itself() -> None:
    """A Platform no SimAI file can hold (typed devices, two GPU generations) goes to every flow
    front end as it is, and gives what its file gives."""
    import clustersim
    from clustersim.topology import simai_template

    p = read_platform(MIXED)
    sizes = dict(minbytes="1M", maxbytes="4M", stepfactor=4)

    def same(a: dict, b: dict) -> None:
        # One fabric by its content, whether given as an object or by its file's name.
        made_a, made_b = a.pop("provenance"), b.pop("provenance")
        assert made_a["fabric"]["sha256"] == made_b["fabric"]["sha256"]
        assert (made_a["fabric"]["name"], made_b["fabric"]["name"]) == ("a Platform object", str(MIXED))
        assert a == b

    same(
        clustersim.collective("allreduce", p, **sizes).to_dict(),
        clustersim.collective("allreduce", MIXED, **sizes).to_dict(),
    )
    plan = dict(gpus=16, tp=8, gbs=16, seq=1024)
    by_object = clustersim.train("llama3-8b", topology=p, **plan)
    assert by_object.iteration_s > 0
    same(by_object.to_dict(), clustersim.train("llama3-8b", topology=MIXED, **plan).to_dict())
    # A template's Topology view and its Platform are one fabric.
    topo = simai_template("Spectrum-X", gpu=16)
    micro = ROOT / "examples" / "microAllReduce.txt"
    runs = [clustersim.run(micro, t, gpus=16).summary for t in (topo, topo.platform, "Spectrum-X:16")]
    assert runs[0] == runs[1] == runs[2]
