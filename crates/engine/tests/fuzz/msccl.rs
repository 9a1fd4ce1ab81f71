//! The MSCCL algorithm reader: mutated MSCCL programs are refused with the file, line and
//! field, or accepted and then scheduled and priced on a group of their GPUs without fault.

use clustersim_engine::collective::cost::{schedule_ns, Links};
use clustersim_engine::collective::msccl::Program;
use clustersim_engine::collective::{Algorithm, GroupTopo, Schedule, Timing};
use clustersim_engine::platform::Placement;

use crate::mutate::{mutate_text, Rng};
use crate::{campaign, refused, Outcome, Verdict};

const FILE: &str = "algo.xml";

/// Small programs of every step type: a ring all-reduce of 3 GPUs (send, receive-reduce-send,
/// receive-reduce-copy-send, receive-copy-send, receive); an all-gather of 3 through a scratch
/// buffer on two channels with cross-thread-block dependencies, copies and nops; an all-pairs
/// reduce-scatter of 2 with a local reduction, in LL128.
const PROGRAMS: [&str; 3] = [
    include_str!("seeds/ring_allreduce_3.xml"),
    include_str!("seeds/scratch_allgather_3.xml"),
    include_str!("seeds/allpairs_reducescatter_2_ll128.xml"),
];

const WORDS: &[&str] = &[
    "<algo",
    "<gpu",
    "<tb",
    "<step",
    "</tb>",
    "</gpu>",
    "</algo>",
    "/>",
    ">",
    "<!--",
    "-->",
    "<![CDATA[",
    "&lt;",
    "&#0;",
    "<!DOCTYPE algo>",
    "\"",
    "=",
    "id",
    "send",
    "recv",
    "chan",
    "s",
    "type",
    "srcbuf",
    "srcoff",
    "dstbuf",
    "dstoff",
    "cnt",
    "depid",
    "deps",
    "hasdep",
    "ngpus",
    "nchannels",
    "nchunksperloop",
    "proto",
    "coll",
    "i_chunks",
    "o_chunks",
    "s_chunks",
    "r",
    "rcs",
    "rrs",
    "rrc",
    "rrcs",
    "cpy",
    "re",
    "nop",
    "i",
    "o",
    "Simple",
    "LL",
    "LL128",
    "allreduce",
    "allgather",
    "reducescatter",
    "alltoall",
    "custom",
    "-1",
    "0",
    "1",
    "2",
    "3",
    "65536",
    "16777216",
    "4294967296",
    "-2",
];

/// Read the program; if accepted, price its schedule on a group of its GPUs (8 to a server):
/// the bytes are the program's chunks, the time finite.
fn msccl(text: &str) -> Verdict {
    let program = match Program::parse(FILE, text) {
        Ok(p) => p,
        Err(e) => return refused(FILE, &e, |_| false),
    };
    if Program::parse(FILE, text).as_ref() != Ok(&program) {
        return Err("read twice, two programs".into());
    }
    if program.ngpus > 512 {
        return Ok(Outcome::Accepted);
    }
    let bytes = 1e6;
    let chunks: f64 =
        program.levels.iter().flat_map(|l| l.moves.iter().map(|m| l.repeat as f64 * m.chunks as f64)).sum();
    let want = chunks * bytes / program.nchunksperloop as f64;
    // Pricing needs only the phases and the timing; the handle is any algorithm's.
    let phases = program.phases(bytes);
    let schedule = Schedule { algorithm: Algorithm::RING, phases, timing: Timing::RAW };
    let got = schedule.total_bytes();
    if (got - want).abs() > 1e-9 * want {
        return Err(format!("the schedule moves {got} bytes, the program {want}"));
    }
    let ranks: Vec<u32> = (0..program.ngpus).collect();
    let placement = Placement::servers(program.ngpus, 8);
    let g = GroupTopo::new(&ranks, &placement, false);
    let links = Links { nvlink_gbps: 360.0, nic_gbps: 50.0, alpha_nvlink_ns: 500.0, alpha_net_ns: 2000.0, arch: None };
    let ns = schedule_ns(&schedule, &g, &links).map_err(|e| format!("a read program cannot be priced: {e}"))?;
    if !(ns.is_finite() && ns >= 0.0) {
        return Err(format!("priced at {ns} ns"));
    }
    Ok(Outcome::Accepted)
}

#[test]
fn msccl_algorithm_files() {
    for p in PROGRAMS {
        assert!(matches!(msccl(p), Ok(Outcome::Accepted)), "a seed is refused: {:?}", msccl(p).err());
    }
    campaign(
        "MSCCL algorithm",
        |rng: &mut Rng| {
            let seed = *rng.pick(&PROGRAMS);
            mutate_text(rng, seed, WORDS)
        },
        msccl,
    );
}
