//! Reduction servers (Optcast, Vertex AI Reduction Server): CPU instances with their own NICs
//! reduce an all-reduce for the GPU workers (shared/seeds/004, shared/reference/hardware.md §6).
//!
//! Each worker cuts its buffer S into k = ⌈S/c⌉ chunks of u = S/k (c: Optcast's chunk size) and
//! each chunk into `nsplit` shards; shard j of every chunk goes to server j mod N_s. A server
//! reduces a shard once every worker's copy of it has arrived and sends the result back to every
//! worker. With two or more requests in flight (Optcast's nreq) a worker uploads chunk i + 1
//! while chunk i comes back: one steady-state phase holding both directions, run k + 1 times
//! (the NVLS pattern, [`super`]'s convention for pipelines). With one request in flight nothing
//! overlaps: k uploads and k downloads, 2k steps.
//!
//! The server's reduction throughput R (bytes of worker input it adds per ns) bounds the rate
//! its NIC delivers into its CPU: the reduction consumes the shards as they arrive, so R is the
//! rate of the NIC → CPU link ([`cap_reduction`]), and a server takes data in at
//! B_in = min(B_nic, R) and sends at B_out = B_nic. On n workers of NIC rate B_w, each step is
//!
//! ```text
//! t = α + max( u / B_w,  n·b / B_in,  n·b / B_out ),   b = u·⌈nsplit / N_s⌉ / nsplit
//! T = (k + 1)·t                                                        (nreq ≥ 2)
//! T = k·(α + max(u / B_w, n·b / B_in)) + k·(α + max(u / B_w, n·b / B_out))   (nreq = 1)
//! ```
//!
//! b is the largest share of a chunk one server receives from one worker (u/N_s when N_s divides
//! nsplit). With N_s ≥ n servers at the workers' rate and R ≥ B: T = S/B + u/B + (k+1)·α,
//! algbw → B where a ring reaches B·n/(2(n−1)); with fewer servers T ≈ (n/N_s)·S/B_s, and with
//! R lowest T ≈ (n/N_s)·S/R. α is the step latency the tuner's timing gives (the path latency for
//! a bare schedule: the α–β price charges a GPU-to-GPU network path, the flow model each flow's
//! own GPU-to-server path; equal on the templates, whose host links have no latency). NCCL does not model reduction servers: forced, they run with the
//! point-to-point latency constants over two network hops (up, down).

use super::{Algorithm, Call, CollectiveAlgorithm, Endpoint, GroupTopo, Phase, Request, Servers, Transfer};
use crate::collective::Identity;
use crate::error::{InputError, Result};
use crate::platform::{Link, NodeKind, Platform};
use crate::workload::Collective;

/// Optcast's default chunk size on the command line of the seed (`--chunksize 8M`).
pub const OPTCAST_CHUNK_BYTES: f64 = 8.0 * 1024.0 * 1024.0;

/// One reduction server: its CPU node and its network rates.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Platform node id of the server's CPU (the [`Endpoint::Node`] of its transfers).
    pub node: u32,
    /// GB/s it sends at (its NICs toward the network).
    pub out_gbps: f64,
    /// GB/s it takes in at: its NICs, capped by its reduction throughput.
    pub in_gbps: f64,
}

/// How workers use the servers (Optcast's `--chunksize`, `--nsplit`, `--nreq`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Split {
    pub chunk_bytes: f64,
    /// Shards per chunk; 0: one per server.
    pub nsplit: u32,
    /// Requests in flight per worker.
    pub nreq: u32,
}

impl Default for Split {
    fn default() -> Split {
        Split { chunk_bytes: super::PIPELINE_CHUNK_BYTES, nsplit: 0, nreq: 2 }
    }
}

/// The reduction-server all-reduce on a set of servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ReductionServer {
    pub servers: Vec<Server>,
    pub split: Split,
}

fn bad(field: &str, message: String) -> InputError {
    InputError::field("reduction servers", field, message)
}

impl ReductionServer {
    pub fn new(servers: Vec<Server>, split: Split) -> Result<ReductionServer> {
        if servers.is_empty() {
            return Err(bad("reduction_servers", "0 servers: a reduction server all-reduce needs at least one".into()));
        }
        if !(split.chunk_bytes.is_finite() && split.chunk_bytes >= 1.0) {
            return Err(bad("chunk_bytes", format!("must be at least 1 byte, got {}", split.chunk_bytes)));
        }
        if split.nreq == 0 {
            return Err(bad("nreq", "at least one request must be in flight".into()));
        }
        for s in &servers {
            if !(s.out_gbps > 0.0 && s.in_gbps > 0.0 && s.out_gbps.is_finite() && s.in_gbps.is_finite()) {
                return Err(bad(
                    "reduction_servers",
                    format!("node {} has rates {} / {} GB/s", s.node, s.out_gbps, s.in_gbps),
                ));
            }
        }
        Ok(ReductionServer { servers, split })
    }

    /// The servers `select` names on `topo` ([`select_servers`]), with their rates from the
    /// platform's links after [`cap_reduction`] by `reduce_gbps` (None: no cap).
    pub fn on_platform(topo: &mut Platform, select: &str, reduce_gbps: Option<f64>, split: Split) -> Result<Self> {
        let nodes = select_servers(topo, select)?;
        if let Some(r) = reduce_gbps {
            cap_reduction(topo, &nodes, r)?;
        }
        let servers = nodes.iter().map(|&v| server_rates(topo, v)).collect::<Result<Vec<_>>>()?;
        ReductionServer::new(servers, split)
    }

    /// A handle that runs this configuration: one per distinct configuration, kept for the
    /// life of the process ([`Algorithm::built`]), so two configurations never share a cache entry.
    pub fn algorithm(self) -> Algorithm {
        let key = format!("{self:?}");
        Algorithm::built(key, || Ok::<_, InputError>(Box::new(self))).expect("built infallibly")
    }

    fn nsplit(&self) -> u32 {
        if self.split.nsplit == 0 {
            self.servers.len() as u32
        } else {
            self.split.nsplit
        }
    }

    /// Bytes of one chunk of `unit` bytes that one worker sends each server.
    fn shares(&self, unit: f64) -> Vec<f64> {
        let (nsplit, count) = (self.nsplit(), self.servers.len());
        let mut b = vec![0.0; count];
        for j in 0..nsplit as usize {
            b[j % count] += unit / nsplit as f64;
        }
        b
    }
}

impl Identity for ReductionServer {
    fn name(&self) -> &'static str {
        "reduction_server"
    }

    fn collectives(&self) -> &[Collective] {
        &[Collective::AllReduce]
    }
}

impl CollectiveAlgorithm for ReductionServer {
    fn unsupported(&self, c: Collective, _g: &GroupTopo, _s: &Servers) -> Option<String> {
        (c != Collective::AllReduce).then(|| "a reduction server reduces for all-reduce only".into())
    }

    fn phases(&self, r: &Request) -> Vec<Phase> {
        let (g, bytes) = (r.group, r.bytes);
        let k = (bytes / self.split.chunk_bytes).ceil().clamp(1.0, u32::MAX as f64 / 4.0) as u32;
        let unit = bytes / k as f64;
        let shares = self.shares(unit);
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for w in 0..g.size() {
            for (server, &b) in self.servers.iter().zip(&shares).filter(|(_, &b)| b > 0.0) {
                let node = Endpoint::Node(server.node);
                up.push(Transfer { src: Endpoint::Rank(w), dst: node, bytes: b });
                down.push(Transfer { src: node, dst: Endpoint::Rank(w), bytes: b });
            }
        }
        if self.split.nreq >= 2 {
            up.extend(down);
            vec![Phase { transfers: up, repeat: k + 1 }]
        } else {
            // Phases are barriers, so k × (up, down) takes as long as k ups then k downs.
            vec![Phase { transfers: up, repeat: k }, Phase { transfers: down, repeat: k }]
        }
    }

    fn hops(&self, _call: &Call) -> (u32, u32) {
        (0, 2)
    }

    fn node_rates(&self, node: u32) -> Option<(f64, f64)> {
        self.servers.iter().find(|s| s.node == node).map(|s| (s.out_gbps, s.in_gbps))
    }
}

/// The CPU nodes `select` names: `all` (every cpu node with a NIC), a count N (the first N cpu
/// nodes in platform order) or node names separated by commas.
pub fn select_servers(topo: &Platform, select: &str) -> Result<Vec<u32>> {
    let select = select.trim();
    let cpus: Vec<u32> = (0..topo.node_count()).filter(|&v| topo.kinds[v as usize] == NodeKind::Cpu).collect();
    let nodes: Vec<u32> = if select.eq_ignore_ascii_case("all") {
        cpus.iter().copied().filter(|&v| !nics_of(topo, v).is_empty()).collect()
    } else if let Ok(count) = select.parse::<u32>() {
        if count as usize > cpus.len() {
            return Err(bad(
                "reduction_servers",
                format!("{count} servers asked for but the platform has {} cpu nodes", cpus.len()),
            ));
        }
        cpus[..count as usize].to_vec()
    } else {
        let mut nodes = Vec::new();
        for name in select.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let v = (0..topo.node_count())
                .find(|&v| topo.node_name(v) == name)
                .ok_or_else(|| bad("reduction_servers", format!("no node named '{name}'")))?;
            let kind = topo.kinds[v as usize];
            if kind != NodeKind::Cpu {
                return Err(bad("reduction_servers", format!("'{name}' is a {}, not a cpu", kind.name())));
            }
            if nodes.contains(&v) {
                return Err(bad("reduction_servers", format!("'{name}' is named twice")));
            }
            nodes.push(v);
        }
        nodes
    };
    if nodes.is_empty() {
        let why = if cpus.is_empty() {
            "the platform has no cpu nodes (the templates are GPU servers only: describe the servers in a platform file, as examples/optcast_4x4.platform does)"
        } else {
            "a reduction server all-reduce needs at least one cpu node with a NIC"
        };
        return Err(bad("reduction_servers", format!("'{select}' selects 0 servers: {why}")));
    }
    for &v in &nodes {
        if nics_of(topo, v).is_empty() {
            return Err(bad(
                "reduction_servers",
                format!("server '{}' has no NIC (link its cpu to a nic node on the network)", topo.node_name(v)),
            ));
        }
    }
    Ok(nodes)
}

/// NIC nodes linked from `cpu`.
fn nics_of(topo: &Platform, cpu: u32) -> Vec<u32> {
    let mut nics: Vec<u32> = topo
        .out_links(cpu)
        .iter()
        .map(|&l| topo.links[l as usize].dst)
        .filter(|&v| topo.kinds[v as usize] == NodeKind::Nic)
        .collect();
    nics.sort_unstable();
    nics.dedup();
    nics
}

/// GB/s from `a` to `b` over their direct links.
fn rate(topo: &Platform, a: u32, b: u32) -> f64 {
    topo.out_links(a).iter().map(|&l| &topo.links[l as usize]).filter(|l| l.dst == b).map(|l| l.bandwidth).sum()
}

/// A server's (out, in) GB/s: over each of its NICs, the slower of the host side and the
/// network side (the NIC's links to every node but this CPU), summed over its NICs.
fn server_rates(topo: &Platform, cpu: u32) -> Result<Server> {
    // GB/s over `links` whose far end (`end`) is not this CPU.
    let network = |links: &[u32], end: fn(&Link) -> u32| -> f64 {
        links.iter().map(|&l| &topo.links[l as usize]).filter(|l| end(l) != cpu).map(|l| l.bandwidth).sum()
    };
    let (mut out, mut inn) = (0.0, 0.0);
    for nic in nics_of(topo, cpu) {
        out += rate(topo, cpu, nic).min(network(topo.out_links(nic), |l| l.dst));
        inn += rate(topo, nic, cpu).min(network(topo.in_links(nic), |l| l.src));
    }
    if !(out > 0.0 && inn > 0.0) {
        return Err(bad(
            "reduction_servers",
            format!("server '{}' has no NIC linked to the network both ways", topo.node_name(cpu)),
        ));
    }
    Ok(Server { node: cpu, out_gbps: out, in_gbps: inn })
}

/// Cap what the NICs of each server in `nodes` deliver into its CPU at `reduce_gbps` in all (the
/// CPU reduces the data as it arrives), scaling its NIC → CPU links down where they sum to more.
pub fn cap_reduction(topo: &mut Platform, nodes: &[u32], reduce_gbps: f64) -> Result<()> {
    if !(reduce_gbps > 0.0 && reduce_gbps.is_finite()) {
        return Err(bad("reduce_gbps", format!("must be a positive number of GB/s, got {reduce_gbps}")));
    }
    for &cpu in nodes {
        let ids: Vec<u32> = topo
            .in_links(cpu)
            .iter()
            .copied()
            .filter(|&l| topo.kinds[topo.links[l as usize].src as usize] == NodeKind::Nic)
            .collect();
        let sum: f64 = ids.iter().map(|&l| topo.links[l as usize].bandwidth).sum();
        if sum > reduce_gbps {
            for l in ids {
                topo.links[l as usize].bandwidth *= reduce_gbps / sum;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "reduction_server_tests.rs"]
mod tests;
