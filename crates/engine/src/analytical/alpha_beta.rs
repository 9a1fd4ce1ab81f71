//! The default analytical collective model: α–β in the shape of NCCL's tuning model.
//!
//! For a collective of S bytes on n ranks spread over N servers,
//!
//! ```text
//! t = min over protocols p ∈ {LL, LL128, Simple} of
//!       α_p + S · f(n) / (eff_p · ratio(S, N) · B)
//! α_p = base_p + (steps − inter) · hop_intra_p + inter · hop_inter_p
//! ```
//!
//! f(n) is the nccl-tests bus factor (2(n−1)/n all-reduce, (n−1)/n all-gather, reduce-scatter,
//! all-to-all, 1 broadcast/reduce); steps = 2(n−1) for all-reduce, n−1 otherwise; inter = the
//! steps that cross servers (2(N−1) for all-reduce, N−1 otherwise). Base and per-hop latencies
//! and protocol efficiencies (LL 0.5: half of each line is flags; LL128 0.92; Simple 1.0) are
//! NCCL 2.30's for Ring (`src/graph/tuning.cc`, see shared/reference/hardware.md §4).
//!
//! The bandwidth term S · f(n) / B comes from a busbw file (measured B), or from the algorithm's
//! own definition: the schedule NCCL would run ([`crate::collective`]: ring, or direct for
//! all-to-all) priced by [`crate::collective::cost`] with zero α on the group's shape (N servers
//! of g ranks, rings over g channels so that each GPU's NIC carries one channel across servers)
//! with per-GPU NVLink B_nv and NIC share B_nic · NICs / GPUs per server. That gives
//!
//! ```text
//! one server:                S · f(n) / B_nv
//! several servers, ring:     S · f(n) / min(g · B_nic_gpu, B_nv · g/(g−1))   (g−1 of g channels stay on NVLink)
//! several servers, all-to-all: max((n−g)/n · S / B_nic_gpu, (g−1)/n · S / B_nv)
//! ```
//!
//! Broadcast and reduce keep S / B of their steady state (the chain's pipeline fill is what the
//! α term already counts). NVLS all-reduce inside a server uses the measured NVLS bus bandwidth
//! when faster (the ideal NVLS schedule, S/B_nv, ignores the switch's 0.85 efficiency that NCCL
//! applies). ratio(S, N) is a measured size efficiency when tables are given (SimAI's, for SimAI
//! workloads), else 1 (training runs: NCCL's α–β model alone); the NVLink table applies where
//! NVLink is the bottleneck. Unlike SimAI's compat mode, GB/s means 10⁹ B/s, every size has a
//! latency term, every collective gets its size efficiency, and sizes beyond the tables are
//! clamped.

use super::busbw_file::BusbwTable;
use super::platform::Platform;
use super::ratio::{RatioTable, RatioTables};
use super::{CollectiveCost, GroupShape};
use crate::collective::choose::{Protocol, RING_LATENCY_US};
use crate::collective::cost::{direct_all_to_all_ns, schedule_ns, Links};
use crate::collective::{schedule, Algorithm, GroupTopo, DIRECT_MAX_RANKS};
use crate::error::InputError;
use crate::workload::Collective;

/// Where bus bandwidths come from.
pub enum Bandwidths {
    /// Derived from the server shape and the NVLink and NIC speeds; scaled by measured
    /// size-efficiency tables when given (SimAI's, measured on its fabric), else the peak.
    Builtin(Option<RatioTables>),
    /// Measured per group and collective (busbw.yaml); DP_EP falls back to the EP section.
    File(BusbwTable),
}

pub struct AlphaBeta {
    pub platform: Platform,
    pub bandwidths: Bandwidths,
    /// NVLS all-reduce bus bandwidth inside a server (GB/s), where the switches reduce in-network.
    pub nvls_busbw: Option<f32>,
}

impl AlphaBeta {
    /// ns the algorithm's schedule spends moving data on group shape `g` at peak link speeds,
    /// and whether NVLink (rather than the NICs) is its bottleneck.
    fn schedule_wire_ns(&self, c: Collective, g: &GroupShape, bytes: u64) -> Result<(f64, bool), InputError> {
        let p = &self.platform;
        let (n, nodes) = (g.size, g.nodes.max(1));
        let gps = p.gpus_per_server.max(g.per_node);
        // N servers holding the group's ranks as evenly as possible (exactly g each for layout groups).
        let ranks: Vec<u32> =
            (0..nodes).flat_map(|s| (0..n / nodes + u32::from(s < n % nodes)).map(move |j| s * gps + j)).collect();
        let topo = GroupTopo { ranks: &ranks, gpus_per_server: gps, nvls: false };
        let links = Links {
            nvlink_gbps: p.nvlink() as f64,
            nic_gbps: p.nic_bw() as f64 * p.nics_per_server as f64 / p.gpus_per_server as f64,
            alpha_nvlink_ns: 0.0,
            alpha_net_ns: 0.0,
        };
        if c == Collective::AllToAll && n > DIRECT_MAX_RANKS {
            // Too many pairs to hold; the schedule's cost by symmetry (uniform shape assumed).
            return Ok((direct_all_to_all_ns(nodes, n.div_ceil(nodes), bytes, &links), false));
        }
        let algo = if c == Collective::AllToAll { Algorithm::Direct } else { Algorithm::Ring };
        // One channel per GPU of a server lets every NIC carry a ring across; inside one server
        // channels change nothing but the schedule's size.
        let channels = if nodes > 1 { g.per_node.max(1) } else { 1 };
        let sched = schedule(c, algo, &topo, bytes, channels)?;
        let t = schedule_ns(&sched, &topo, &links)?;
        let nic_only = schedule_ns(&sched, &topo, &Links { nvlink_gbps: 1e30, ..links })?;
        Ok((t, t > nic_only * (1.0 + 1e-12)))
    }

    /// ns to move a collective of `bytes` on group `g` at full protocol efficiency: S · f(n) / B.
    fn wire_ns(&self, c: Collective, g: &GroupShape, bytes: u64) -> Result<f64, InputError> {
        let wire = bytes as f64 * c.busbw_factor(g.size);
        match &self.bandwidths {
            Bandwidths::File(t) => {
                let key = BusbwTable::key(c);
                let section = if g.name == "DP_EP" && t.get("DP_EP", key).is_err() { "EP" } else { g.name.as_str() };
                t.get(section, key).map(|v| wire / v as f64)
            }
            Bandwidths::Builtin(ratios) => {
                let (b, nodes) = (bytes as f64, g.nodes);
                let eff =
                    |pick: fn(&RatioTables) -> &RatioTable| ratios.as_ref().map_or(1.0, |r| pick(r).value(b, nodes));
                let nvlink_eff = eff(|r| &r.nvlink);
                let steady = matches!(c, Collective::Broadcast | Collective::Reduce);
                if nodes <= 1 && steady {
                    return Ok(wire / (self.platform.nvlink() as f64 * nvlink_eff));
                }
                if steady {
                    // One chain through the servers: the busier of the NIC share and NVLink.
                    let p = &self.platform;
                    let nv = p.nvlink() as f64;
                    let nic = p.nic_bw() as f64 * (g.per_node * p.nics_per_server) as f64 / p.gpus_per_server as f64;
                    let bw = if g.per_node > 1 && nv < nic { nv * nvlink_eff } else { nic * eff(|r| &r.nic) };
                    return Ok(wire / bw);
                }
                let (t, nvlink_bound) = self.schedule_wire_ns(c, g, bytes)?;
                if nodes <= 1 {
                    let ring = t / nvlink_eff;
                    let nvls = self.nvls_busbw.filter(|_| c == Collective::AllReduce && g.size >= 2);
                    return Ok(nvls.map_or(ring, |v| ring.min(wire / (v as f64 * nvlink_eff))));
                }
                if c == Collective::AllToAll {
                    return Ok(t / eff(|r| &r.all_to_all));
                }
                Ok(t / if nvlink_bound { nvlink_eff } else { eff(|r| &r.nic) })
            }
        }
    }
}

impl CollectiveCost for AlphaBeta {
    fn collective_ns(&self, c: Collective, g: &GroupShape, bytes: u64) -> Result<f64, InputError> {
        let n = g.size;
        if n <= 1 || bytes == 0 {
            return Ok(0.0);
        }
        let wire_ns = self.wire_ns(c, g, bytes)?;
        let (steps, inter) = match c {
            Collective::AllReduce => (2 * (n - 1), 2 * (g.nodes - 1)),
            _ => (n - 1, g.nodes - 1),
        };
        Ok(Protocol::ALL
            .into_iter()
            .zip(RING_LATENCY_US)
            .map(|(p, (base, hop_nv, hop_net))| {
                let alpha_us = base + (steps - inter) as f64 * hop_nv + inter as f64 * hop_net;
                alpha_us * 1e3 + wire_ns / p.efficiency()
            })
            .fold(f64::INFINITY, f64::min))
    }

    /// Point-to-point (pipeline) transfer: Simple protocol latency plus size over the link:
    /// NVLink inside a server, the NIC share of one GPU across servers (or the file's PP busbw).
    fn transfer_ns(&self, same_server: bool, bytes: u64) -> Result<f64, InputError> {
        let p = &self.platform;
        let (base, hop_nv, hop_net) = RING_LATENCY_US[2];
        let bw = match &self.bandwidths {
            Bandwidths::File(t) => t.get("PP", "busbw")? as f64,
            Bandwidths::Builtin(_) if same_server => p.nvlink() as f64,
            Bandwidths::Builtin(_) => p.nic_bw() as f64 * p.nics_per_server as f64 / p.gpus_per_server as f64,
        };
        let alpha_us = base + if same_server { hop_nv } else { hop_net };
        Ok(alpha_us * 1e3 + bytes as f64 / bw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytical::platform::{GpuType, NicType};
    use Collective::*;

    const GIB: f64 = 1073741824.0;

    fn model(bandwidths: Bandwidths) -> AlphaBeta {
        let platform = Platform::new(8, 8, GpuType::A100, NicType::Cx7);
        AlphaBeta { platform, bandwidths, nvls_busbw: None }
    }

    fn shape(name: &str, size: u32, nodes: u32, per_node: u32) -> GroupShape {
        GroupShape { name: name.into(), size, nodes, per_node, tp: 8, ep: 1 }
    }

    #[test]
    fn large_messages_pay_simple_latency_plus_bus_time() {
        let m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        // TP 8 in one A100 server, all-gather of 1 GiB: B = 240 GB/s × NVLink ratio 0.77/0.81;
        // Simple wins: α = 8.4 + 7 × 3.4 µs; wire bytes S·7/8.
        let got = m.collective_ns(AllGather, &shape("TP", 8, 1, 8), GIB as u64).unwrap();
        let want = (8.4 + 7.0 * 3.4) * 1e3 + GIB * 7.0 / 8.0 / (240.0 * 0.77 / 0.81);
        assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
        // DP of 16 ranks, one per server: B = one NIC, 48.5 GB/s × NIC ratio at 16 nodes and
        // 1 GiB (0.76/0.96); all-reduce: 30 steps, all crossing servers.
        let got = m.collective_ns(AllReduce, &shape("DP", 16, 16, 1), GIB as u64).unwrap();
        let want = (8.4 + 30.0 * 14.0) * 1e3 + GIB * 2.0 * 15.0 / 16.0 / (48.5 * 0.76 / 0.96);
        assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
    }

    #[test]
    fn small_messages_pay_ll_latency() {
        let m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        // 4 KiB all-reduce in TP 8: LL: 6.6 + 14 × 0.6 = 15 µs, at half of 240 × 0.45/0.81.
        let got = m.collective_ns(AllReduce, &shape("TP", 8, 1, 8), 4096).unwrap();
        let want = 15.0e3 + 4096.0 * 1.75 / (0.5 * 240.0 * 0.45 / 0.81);
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn all_to_all_across_servers_is_limited_by_the_nics() {
        let m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        // EP 16 = 2 servers × 8: B = 8 NICs × 48.5 / 8 · 15 / 8 × all-to-all ratio (2 nodes, 1 GiB: 0.81/0.80).
        let got = m.collective_ns(AllToAll, &shape("EP", 16, 2, 8), GIB as u64).unwrap();
        let bw = 48.5 * 8.0 / 8.0 * 15.0 / 8.0 * 0.81 / 0.80;
        let want = (8.4 + 14.0 * 3.4 + 1.0 * 14.0) * 1e3 + GIB * 15.0 / 16.0 / bw;
        assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
    }

    #[test]
    fn busbw_file_values_are_decimal_gb_per_s() {
        let t =
            BusbwTable::parse("b.yaml", "x\nTP:\nreducescatter,: 200\nEP:\nallgather,: 40\nPP:\nbusbw: 25\n").unwrap();
        let m = model(Bandwidths::File(t));
        let got = m.collective_ns(ReduceScatter, &shape("TP", 8, 1, 8), GIB as u64).unwrap();
        let want = (8.4 + 7.0 * 3.4) * 1e3 + GIB * 7.0 / 8.0 / 200.0;
        assert!((got - want).abs() < 1e-6 * want);
        // DP_EP falls back to the EP section; PP transfers use PP.busbw.
        let got = m.collective_ns(AllGather, &shape("DP_EP", 4, 4, 1), GIB as u64).unwrap();
        let want = (8.4 + 3.0 * 14.0) * 1e3 + GIB * 3.0 / 4.0 / 40.0;
        assert!((got - want).abs() < 1e-6 * want);
        assert_eq!(m.transfer_ns(false, 25_000_000).unwrap(), (8.4 + 14.0) * 1e3 + 1e6);
        assert!(m.collective_ns(AllReduce, &shape("TP", 8, 1, 8), 1).is_err());
    }

    #[test]
    fn bandwidth_term_is_the_ring_schedule_priced_by_cost() {
        // H800: NVLink 8 × 20.6 = 164.8 GB/s < 8 NICs × 48.5. DP 16 = 2 servers × 8, all-reduce of
        // 1 GiB, no ratio tables. 8 rings each leave a server through a different NIC, so 7 of 8
        // channels stay on NVLink: B = min(8 × 48.5, 164.8 × 8/7); Simple wins: 28 NVLink + 2 network hops.
        let platform = Platform::new(8, 8, GpuType::H800, NicType::Cx7);
        let m = AlphaBeta { platform, bandwidths: Bandwidths::Builtin(None), nvls_busbw: None };
        let got = m.collective_ns(AllReduce, &shape("DP", 16, 2, 8), GIB as u64).unwrap();
        let bw = (8.0 * 48.5f32 as f64).min(164.8f32 as f64 * 8.0 / 7.0);
        let want = (8.4 + 28.0 * 3.4 + 2.0 * 14.0) * 1e3 + GIB * 2.0 * 15.0 / 16.0 / bw;
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
        // The same number from the collective module directly.
        let ranks: Vec<u32> = (0..16).collect();
        let g = GroupTopo { ranks: &ranks, gpus_per_server: 8, nvls: false };
        let links =
            Links { nvlink_gbps: 164.8f32 as f64, nic_gbps: 48.5f32 as f64, alpha_nvlink_ns: 0.0, alpha_net_ns: 0.0 };
        let ring = schedule_ns(&schedule(AllReduce, Algorithm::Ring, &g, GIB as u64, 8).unwrap(), &g, &links).unwrap();
        assert!((got - (8.4 + 28.0 * 3.4 + 2.0 * 14.0) * 1e3 - ring).abs() < 1e-9 * ring);
    }

    #[test]
    fn all_to_all_beyond_the_direct_limit_is_priced_by_symmetry() {
        // EP 4096 = 512 servers × 8 (A100, 8 CX7 NICs): a GPU sends 4088/4096 of S over its own
        // NIC (48.5 GB/s); LL128 wins (4095 steps, 511 across servers, at 0.92 of the link).
        let m = model(Bandwidths::Builtin(None));
        let got = m.collective_ns(AllToAll, &shape("EP", 4096, 512, 8), GIB as u64).unwrap();
        let want = (14.0 + 3584.0 * 1.9 + 511.0 * 4.0) * 1e3 + GIB * 4088.0 / 4096.0 / 48.5f32 as f64 / 0.92;
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn nothing_to_do_costs_nothing() {
        let m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        assert_eq!(m.collective_ns(AllReduce, &shape("TP", 8, 1, 8), 0).unwrap(), 0.0);
        assert_eq!(m.collective_ns(AllReduce, &shape("TP", 1, 1, 1), 1 << 20).unwrap(), 0.0);
    }
}
