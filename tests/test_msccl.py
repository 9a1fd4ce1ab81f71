"""MSCCL algorithm files (`--algo msccl:FILE.xml`) through the Python API and the CLI: an MSCCL
ring all-reduce equals the built-in ring, the public example files run, bad files are one clean
error line."""

from __future__ import annotations

from pathlib import Path

import clustersim
import pytest
from clustersim.nccl_tests import sweep

EXAMPLES = Path(__file__).parent / "data" / "msccl"


def ring_xml(n: int, proto: str) -> str:
    """A one-channel ring all-reduce of n GPUs in MSCCL's format, rank i sending to i + 1: at step
    k it sends chunk (i − k) mod n; a send, n − 2 receive-reduce-sends, a receive-reduce-copy-send,
    n − 2 receive-copy-sends and a receive."""
    algo = f'name="ring" proto="{proto}" nchannels="1" nchunksperloop="{n}" ngpus="{n}" coll="allreduce"'
    out = [f"<algo {algo}>"]
    types = ["s"] + ["rrs"] * (n - 2) + ["rrcs"] + ["rcs"] * (n - 2) + ["r"]
    for i in range(n):
        out.append(f'<gpu id="{i}" i_chunks="{n}" o_chunks="0" s_chunks="0">')
        out.append(f'<tb id="0" send="{(i + 1) % n}" recv="{(i - 1) % n}" chan="0">')
        for k, t in enumerate(types):
            c = (i - k) % n
            out.append(
                f'<step s="{k}" type="{t}" srcbuf="i" srcoff="{c}" dstbuf="i" dstoff="{c}" cnt="1"'
                ' depid="-1" deps="-1" hasdep="0"/>'
            )
        out.append("</tb></gpu>")
    return "\n".join([*out, "</algo>"]) + "\n"


@pytest.mark.parametrize("proto", ["Simple", "LL", "LL128"])
def test_an_msccl_ring_is_the_built_in_ring_on_one_server(tmp_path, proto):
    path = tmp_path / "ring.xml"
    path.write_text(ring_xml(8, proto))
    sizes = [4096, 1 << 20, 64 << 20]
    ours = sweep("Spectrum-X:8", "allreduce", sizes, algorithm=f"msccl:{path}", env={})
    ring = sweep("Spectrum-X:8", "allreduce", sizes, algorithm="ring", protocol=proto, channels=1, env={})
    assert ours["time_us"] == pytest.approx(ring["time_us"], rel=1e-12, abs=1e-6)
    assert ours["algorithm"] == [f"msccl:{path}"] * 3 and ours["protocol"] == [proto] * 3


def test_run_and_train_take_an_msccl_algorithm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("ring.xml").write_text(ring_xml(8, "Simple"))
    micro = Path(__file__).parents[1] / "examples" / "microAllReduce.txt"
    monkeypatch.setenv("NCCL_PROTO", "Simple")
    ours = clustersim.run(micro, "Spectrum-X:8", algo="msccl:ring.xml")
    ring = clustersim.run(micro, "Spectrum-X:8", algo="ring", channels=1)
    assert ours.summary == pytest.approx(ring.summary)
    # The program is an all-reduce, so it takes the all-reduces: the data-parallel all-reduce of 8
    # runs it (as the built-in ring); the tensor-parallel reduce-scatters keep NCCL's choice, as
    # with all_reduce=msccl:ring.xml, and naming it for another kind is refused.
    plan = dict(gpus=8, tp=1, pp=1, gbs=8, seq=1024, layers=2, hidden=1024, heads=8, ffn=4096, vocab=32000)
    ours = clustersim.train(None, topology="Spectrum-X:8", algo="msccl:ring.xml", **plan)
    ring = clustersim.train(None, topology="Spectrum-X:8", algo="ring", channels=1, **plan)
    assert ours.iteration_s == pytest.approx(ring.iteration_s, rel=1e-12)
    assert dict(ours.breakdown_s)["exposed DP comm"] > 0
    tp = plan | dict(tp=8, sp=True)
    bare = clustersim.train(None, topology="Spectrum-X:8", algo="msccl:ring.xml", **tp)
    named = clustersim.train(None, topology="Spectrum-X:8", algo="all_reduce=msccl:ring.xml", **tp)
    assert bare.iteration_s == named.iteration_s
    with pytest.raises(clustersim.InputError, match="msccl:ring.xml cannot run reducescatter"):
        clustersim.train(None, topology="Spectrum-X:8", algo="reduce_scatter=msccl:ring.xml", **tp)


def test_the_example_files_run(tmp_path):
    for path in sorted(EXAMPLES.glob("*.xml")):
        op = "allgather" if "allgather" in path.name else "allreduce"
        t = sweep("Spectrum-X:8", op, [1 << 20], algorithm=f"msccl:{path}", env={})
        assert t["time_us"][0] > 0, path.name


def test_bad_files_are_one_clean_line(run_cli, tmp_path):
    text = ring_xml(8, "Simple").replace('type="rrs"', 'type="rrx"', 1)
    (tmp_path / "bad.xml").write_text(text)
    code, out, err = run_cli("collective", "allreduce", "-n", "Spectrum-X:8", "--algo", "msccl:bad.xml")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "bad.xml:5: type: unknown step type 'rrx'" in err
    # The program must fit the collective and the group.
    (tmp_path / "ring.xml").write_text(ring_xml(8, "Simple"))
    code, _, err = run_cli("collective", "allgather", "-n", "Spectrum-X:8", "--algo", "msccl:ring.xml")
    assert code == 2 and "the program is an allreduce" in err and err.count("\n") == 1, err
    (tmp_path / "ring4.xml").write_text(ring_xml(4, "Simple"))
    code, _, err = run_cli("collective", "allreduce", "-n", "Spectrum-X:8", "--algo", "msccl:ring4.xml")
    assert code == 2 and 'ngpus="4"' in err, err
    code, _, err = run_cli("collective", "allreduce", "-n", "Spectrum-X:8", "--algo", "msccl:none.xml")
    assert code == 2 and "none.xml: algorithm: cannot read" in err, err
