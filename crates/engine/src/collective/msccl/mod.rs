//! User algorithms written as MSCCL's algorithm XML (`--algo msccl:FILE.xml`).
//!
//! msccl-tools, TACCL and TE-CCL write collective algorithms as MSCCL programs: per GPU, thread
//! blocks (`<tb>`) each bound to one send peer, one receive peer and a channel, running steps in
//! order. A step sends (`s`), receives (`r`), receives and forwards (`rcs`, `rrs`), receives and
//! reduces into a buffer (`rrc`, `rrcs`), or works locally (`cpy`, `re`, `nop`); it moves `cnt`
//! chunks of 1/`nchunksperloop` of the buffer, and may wait for a step of another thread block
//! of its GPU (`depid`, `deps`). The reader ([`xml`]) takes the format MSCCL's executor reads
//! (Azure/msccl-executor-nccl `msccl_parser.cc`) and checks every field; [`program`] turns it
//! into our schedule:
//!
//! ```text
//! transfer   a sending step and the receiving step matched to it: on the connection
//!            (sender, receiver, channel) the k-th send is received by the k-th receive;
//!            cnt · S / nchunksperloop bytes from GPU `id` to GPU `send` (GPU ids = group ranks)
//! waits      a step waits for the previous step of its thread block, for its depid/deps step,
//!            and a receiving step for the send matched to it (a cycle is a deadlock: refused)
//! level      level(transfer) = 1 + the level of what its sending step waits for (for rcs, rrs,
//!            rrcs: also its own receive); a step is done when its receive and send are
//! phase      the transfers of one level; consecutive equal levels are one phase, repeated
//! ```
//!
//! Approximation: our schedules are phases separated by barriers, so a transfer starts when
//! every transfer of the level before has finished, not only those it waits for; a program whose
//! levels hold transfers of unequal length (or whose thread blocks drift apart) runs somewhat
//! slower here than with true per-transfer dependencies. Local steps (`cpy`, `re`, `nop`) and the
//! reduction inside `rrc`/`rrs` take no time (memory bandwidth is not modelled), and the program
//! runs once over the whole buffer: MSCCL's loop over buffer tiles and its `minBytes`/`maxBytes`
//! range are not modelled. A program whose levels repeat the same transfers (a ring) is as compact
//! as the built-in ring: one phase with `repeat` = its step count.
//!
//! Channels are the program's (`nchannels`, `chan`): each thread block's transfers are flows of
//! their own, so the `channels` a caller passes are ignored. Timing: MSCCL runs its steps with
//! NCCL's primitives for the XML's `proto` (Simple, LL, LL128) over the channels' point-to-point
//! connections, so it is timed as NCCL times a ring ([`super::nccl`]): that protocol's ring
//! latencies and efficiency, NCCL's ring refinements, and one latency hop per phase step
//! ([`super::nccl::schedule_hops`]), across servers if any of its transfers is. That is NCCL's
//! own ring count inside one server and with one GPU per server; on servers of several GPUs a
//! ring counts all 2(n − 1) steps as network hops where NCCL's formula counts 2(N − 1).
//! An MSCCL ring all-reduce therefore takes exactly the time of the built-in ring with that
//! protocol on both backends (tests below), except for that latency term on multi-GPU servers.
//!
//! The XML's `ngpus` must equal the group size and its `coll` the collective, else the schedule
//! is refused naming both.

pub mod program;
pub mod xml;

use super::nccl::{Latency, Protocol, RING_LATENCY_US};
use super::{Algorithm, CollectiveAlgorithm, GroupTopo, Phase, Request, Servers};
use crate::collective::Identity;
use crate::error::InputError;
use crate::workload::Collective;
pub use program::Program;

/// An MSCCL program as an algorithm, named `msccl:<path>` as `--algo` gave it.
pub struct Msccl {
    name: &'static str,
    program: Program,
}

impl Msccl {
    pub fn program(&self) -> &Program {
        &self.program
    }
}

/// The algorithm in the MSCCL file at `path` (as `--algo msccl:PATH` names it).
///
/// Built once per distinct (path, text) ([`Algorithm::built`]): a run or a sweep that names the
/// file many times holds one copy, a file edited between runs of a long Python session is read
/// anew, and two programs under one name (the same relative path from two directories, an
/// edited file) are different algorithms to every cache.
pub fn load(path: &str) -> Result<Algorithm, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::field(path, "algorithm", format!("cannot read the MSCCL algorithm file: {e}")))?;
    Algorithm::built(format!("msccl\0{path}\0{text}"), || {
        let program = Program::parse(path, &text)?;
        let name: &'static str = Box::leak(format!("msccl:{path}").into_boxed_str());
        Ok(Box::new(Msccl { name, program }))
    })
}

impl Identity for Msccl {
    fn name(&self) -> &'static str {
        self.name
    }

    fn collectives(&self) -> &[Collective] {
        std::slice::from_ref(&self.program.collective)
    }
}

impl CollectiveAlgorithm for Msccl {
    fn unsupported(&self, c: Collective, g: &GroupTopo, _s: &Servers) -> Option<String> {
        let p = &self.program;
        if c != p.collective {
            return Some(format!("the program is an {} (coll=\"{}\")", p.collective.name(), p.collective.name()));
        }
        (g.size() != p.ngpus).then(|| format!("the program is written for ngpus=\"{}\"", p.ngpus))
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        self.program.phases(r.bytes)
    }

    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        let p = self.program.protocol;
        let i = Protocol::ALL.iter().position(|&q| q == p).expect("a protocol of Protocol::ALL");
        vec![(p, RING_LATENCY_US[i])]
    }

    fn ring_latency(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
