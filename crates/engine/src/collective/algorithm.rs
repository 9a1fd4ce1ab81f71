//! What a collective algorithm is: the one trait every algorithm implements, and its handle.
//!
//! An algorithm says which (collective, group) it can run and why not, turns a call into its
//! schedule (phases of transfers), and carries NCCL's timing of itself: the protocols it runs
//! with their latency constants, its efficiency, its latency hops, and whether NCCL's tuner
//! considers it. Nothing else in the crate distinguishes algorithms: the tuner ([`super::choose`]),
//! the α–β price ([`super::cost`]), the analytical model and the flow model all go through this
//! trait, so a new algorithm is one file (see the module documentation of [`super`]).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Mutex;

use super::choose::Options;
use super::cost::Links;
use super::nccl::{self, Latency, Protocol, P2P_LATENCY_US};
use super::{err, Grain, GroupTopo, Phase, Schedule, Servers};
use crate::error::InputError;
use crate::workload::Collective;

/// One collective call as the timing model sees it: the collective, its group (and the group's
/// servers), S, the channels and the schedule it runs (pipelined at Simple's steps).
pub struct Call<'a> {
    pub collective: Collective,
    pub group: &'a GroupTopo<'a>,
    pub servers: &'a Servers,
    pub bytes: u64,
    pub channels: u32,
    pub schedule: &'a Schedule,
}

/// What [`CollectiveAlgorithm::phases`] turns into a schedule: collective `collective` of
/// S = `bytes` on `group` (on `servers`), rings and trees over `channels` channels, pipelines
/// cut at `grain`.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub collective: Collective,
    pub group: &'a GroupTopo<'a>,
    pub servers: &'a Servers,
    pub bytes: f64,
    pub channels: u32,
    pub grain: Grain,
}

/// What names an algorithm and where it applies; [`registered!`] writes it for the algorithms
/// of this folder.
pub trait Identity {
    /// The name NCCL_ALGO, `--algo` and reports use (lower case, words joined by `_`).
    fn name(&self) -> &'static str;

    /// The kinds of collective it is defined for, on some group (every other kind
    /// [`CollectiveAlgorithm::unsupported`] refuses on any group): where `--algo KIND=NAME` may
    /// put it, and, when it is one kind, the only kind a bare `--algo NAME` forces it on
    /// ([`super::choose::Options::forced`]). Default: every kind.
    fn collectives(&self) -> &[Collective] {
        &Collective::ALL
    }
}

/// A registered algorithm's identity, declared at the top of its file: its unit struct (with the
/// doc comment given), its handle `Algorithm::HANDLE`, its name and the collectives it is
/// defined for (left out: every kind). `registered! { /// doc \n Ring as RING: "ring", KINDS }`
macro_rules! registered {
    ($(#[$doc:meta])* $ty:ident as $handle:ident: $name:literal $(, $kinds:expr)?) => {
        $(#[$doc])*
        pub struct $ty;

        impl $crate::collective::Algorithm {
            pub const $handle: $crate::collective::Algorithm = $crate::collective::Algorithm::new(&$ty);
        }

        impl $crate::collective::Identity for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            $(
                fn collectives(&self) -> &[$crate::workload::Collective] {
                    &$kinds
                }
            )?
        }
    };
}
pub(crate) use registered;

/// A collective algorithm, defined once: its schedule and NCCL's timing of it.
pub trait CollectiveAlgorithm: Identity + Sync {
    /// Why this algorithm cannot run `c` on group `g` (servers `s`), or None if it can.
    fn unsupported(&self, c: Collective, g: &GroupTopo, s: &Servers) -> Option<String>;

    /// The phases of request `r`. Called only where [`Self::unsupported`] is None, on two or
    /// more ranks and S > 0.
    fn phases(&self, r: &Request) -> Vec<Phase>;

    /// Whether NCCL's tuner considers it for `c` on `g` under `opts` (a forced algorithm runs
    /// whatever this says). Default: only when forced.
    fn offered(&self, _c: Collective, _g: &GroupTopo, _s: &Servers, _opts: &Options) -> bool {
        false
    }

    /// The protocols it runs, with their latency constants. Default: as NCCL runs
    /// point-to-point work, Simple with the ring's per-hop costs.
    fn protocols(&self) -> Vec<(Protocol, Latency)> {
        vec![(Protocol::Simple, P2P_LATENCY_US)]
    }

    /// The share of the bus bandwidth it reaches (multiplies the protocol's efficiency).
    fn efficiency(&self, _call: &Call, _links: &Links) -> Result<f64, InputError> {
        Ok(1.0)
    }

    /// (intra-server, inter-server) latency hops. Default, for algorithms NCCL does not model:
    /// one hop per dependent step of the schedule ([`nccl::schedule_hops`]).
    fn hops(&self, call: &Call) -> (u32, u32) {
        nccl::schedule_hops(call.servers, call.schedule)
    }

    /// NCCL prices it as a ring: a multi-node intra-server hop costs at least the network post
    /// overhead, and a multi-node Simple all-reduce's latency is ×1.4 ([`nccl::call_latency_ns`]).
    fn ring_latency(&self) -> bool {
        false
    }

    /// Whether its schedule depends on which GPUs the group holds, not only on the group's
    /// shape (each member's server, rail and rate class): true for one that names the switches
    /// its GPUs hang off (CollNet). Default false: groups of one shape share a schedule.
    fn per_group(&self) -> bool {
        false
    }

    /// (out, in) GB/s of platform node `node` where the schedule has it as an
    /// [`super::Endpoint::Node`]: a node outside the group's servers, reached over the network.
    /// Default: the algorithm uses no such node.
    fn node_rates(&self, _node: u32) -> Option<(f64, f64)> {
        None
    }
}

/// A cheap handle on an algorithm: Copy, compared and hashed by name and, for an algorithm
/// built at run time ([`Algorithm::built`]), by which one: two MSCCL programs read from one path,
/// or reduction servers of two configurations, share a name but are different algorithms, and
/// every cache keyed by algorithm (the tuner's price memo, the options it is keyed by) tells them
/// apart.
#[derive(Clone, Copy)]
pub struct Algorithm {
    algorithm: &'static dyn CollectiveAlgorithm,
    /// 0 for the registered algorithms; else the number [`Algorithm::built`] gave it.
    id: u32,
}

/// Algorithms built at run time, by the key of what they were built from.
static BUILT: Mutex<Vec<(String, Algorithm)>> = Mutex::new(Vec::new());

impl Algorithm {
    pub const fn new(algorithm: &'static dyn CollectiveAlgorithm) -> Algorithm {
        Algorithm { algorithm, id: 0 }
    }

    /// Its name ([`Identity::name`]).
    pub fn name(&self) -> &'static str {
        self.algorithm.name()
    }

    /// The collectives it is defined for ([`Identity::collectives`]).
    pub fn collectives(&self) -> &'static [Collective] {
        self.algorithm.collectives()
    }

    /// The algorithm built from what `key` describes (every parameter it depends on: an MSCCL
    /// file's path and text, a reduction-server configuration): built by `build` the first time
    /// and kept for the life of the process (handles are `&'static`), so a run or a sweep that
    /// builds the same one many times holds one copy and gets equal handles, while algorithms
    /// of different keys never compare equal, whatever their names.
    pub fn built<E>(
        key: String,
        build: impl FnOnce() -> Result<Box<dyn CollectiveAlgorithm>, E>,
    ) -> Result<Algorithm, E> {
        let mut built = BUILT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, a)) = built.iter().find(|(k, _)| *k == key) {
            return Ok(*a);
        }
        let id = u32::try_from(built.len() + 1).expect("fewer than 2^32 algorithms built");
        let algorithm = Algorithm { algorithm: Box::leak(build()?), id };
        built.push((key, algorithm));
        Ok(algorithm)
    }

    /// Every algorithm, listed once: the order the tuner tries them (the first of equal
    /// predictions wins) and error messages list them.
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::RING,
        Algorithm::TREE,
        Algorithm::HALVING_DOUBLING,
        Algorithm::DIRECT,
        Algorithm::NVLS,
        Algorithm::NVLS_TREE,
        Algorithm::HIERARCHICAL,
        Algorithm::PXN,
        Algorithm::ALL_PAIRS,
        Algorithm::ONE_SHOT,
        Algorithm::TWO_SHOT,
        Algorithm::HIER_ALL_PAIRS,
        Algorithm::COHERENT_RING,
    ];

    /// The algorithm of this name, case-insensitive, `-` for `_`, and the `_` optional; or
    /// `msccl:FILE.xml`, the MSCCL program in that file ([`super::msccl`]).
    pub fn parse(name: &str) -> Result<Algorithm, InputError> {
        if let Some(path) = name.get(..6).filter(|p| p.eq_ignore_ascii_case("msccl:")).map(|_| &name[6..]) {
            if path.is_empty() {
                return Err(err("algorithm", "msccl: names no file (msccl:FILE.xml)".into()));
            }
            return super::msccl::load(path);
        }
        let key = name.to_ascii_lowercase().replace('-', "_");
        Algorithm::ALL.iter().copied().find(|a| a.name() == key || a.name().replace('_', "") == key).ok_or_else(|| {
            let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
            err("algorithm", format!("unknown algorithm '{name}' (valid: {}, msccl:FILE.xml)", names.join(", ")))
        })
    }
}

impl Deref for Algorithm {
    type Target = dyn CollectiveAlgorithm;

    fn deref(&self) -> &Self::Target {
        self.algorithm
    }
}

impl PartialEq for Algorithm {
    fn eq(&self, other: &Algorithm) -> bool {
        self.id == other.id && self.name() == other.name()
    }
}

impl Eq for Algorithm {}

impl Hash for Algorithm {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
        self.id.hash(state);
    }
}

impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_algorithms_are_equal_exactly_when_built_from_the_same_key() {
        use crate::collective::reduction_server::{ReductionServer, Server, Split};
        let servers = |gbps: f64| vec![Server { node: 9, out_gbps: gbps, in_gbps: gbps }];
        let one = ReductionServer::new(servers(25.0), Split::default()).unwrap().algorithm();
        let same = ReductionServer::new(servers(25.0), Split::default()).unwrap().algorithm();
        let slower = ReductionServer::new(servers(12.5), Split::default()).unwrap().algorithm();
        let split = Split { nreq: 1, ..Split::default() };
        let serial = ReductionServer::new(servers(25.0), split).unwrap().algorithm();
        assert_eq!(one, same);
        // As hash keys: three algorithms.
        let set: std::collections::HashSet<Algorithm> = [one, same, slower, serial].into_iter().collect();
        assert_eq!(set.len(), 3);
        assert!(one != slower && one != serial && slower != serial);
        assert_eq!(one.name(), slower.name());
        // Registered algorithms keep comparing by name.
        assert_eq!(Algorithm::parse("ring").unwrap(), Algorithm::RING);
        assert_ne!(Algorithm::RING, Algorithm::TREE);
    }
}
