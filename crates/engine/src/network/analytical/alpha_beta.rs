//! The default analytical collective model: NCCL's tuning model on the algorithms' own schedules.
//!
//! A collective of S bytes on a group is priced exactly as the flow model runs it: NCCL's tuner
//! ([`crate::collective::choose`]) picks the algorithm and protocol of least predicted time, and
//! the price is that prediction — the chosen algorithm's schedule (the same transfers the flow
//! model plays on a fabric) at the server's link speeds with NCCL's per-call latency and
//! protocol efficiency ([`crate::collective::nccl`]):
//!
//! ```text
//! t = lat(a, p) + Σ_phases repeat · busiest port load / (eff(a, p) · ratio(S, N) · B)
//! ```
//!
//! The group is its real ranks on the platform's scale-up domains ([`crate::platform::Placement`]); every GPU has
//! NVLink B_nv and a NIC share B_nic · NICs / GPUs per server; channels are the flow model's
//! default ([`group_channels`]), so on a non-blocking fabric the two models give the same time. ratio(S, N) is a measured size efficiency when tables are given (SimAI's, for
//! SimAI workloads), else 1 (training runs: NCCL's model alone); the NVLink table applies where
//! NVLink is the bottleneck, the all-to-all table to all-to-all. An all-to-all too large for the
//! direct schedule's n(n−1) transfers is priced by symmetry ([`direct_all_to_all_ns`]) with the
//! direct schedule's latency.
//!
//! A busbw file replaces the schedule by measured bus bandwidths: t = min over protocols of
//! NCCL's ring latency + S · f(n) / (eff_p · B_file), f(n) the nccl-tests bus factor. Unlike
//! SimAI's compat mode, GB/s means 10⁹ B/s, every size has a latency term, every collective
//! gets its size efficiency, and sizes beyond the tables are clamped.
//!
//! The tuner's choice is a function of the model (server shape, link speeds, options), the
//! collective, S and where the group's ranks sit (each rank's server and rail): a [`PriceMemo`]
//! shared by the runs of a batch keeps it, so plans with the same group placement (a search's
//! micro-batch, recompute and optimizer variants) price each collective once.

use super::busbw_file::BusbwTable;
use super::ratio::{RatioTable, RatioTables};
use super::server_spec::ServerSpec;
use super::{CollectiveCost, GroupShape};
use crate::collective::choose::{choose, Options};
use crate::collective::cost::{direct_all_to_all_ns, timed_ns, Links};
use crate::collective::nccl::{call_latency_ns, p2p_latency_ns};
use crate::collective::{group_channels, ring_hops, Algorithm, GroupTopo, DIRECT_MAX_RANKS};
use crate::error::InputError;
use crate::int_hash::IntMap;
use crate::workload::Collective;
use std::sync::{Arc, Mutex, MutexGuard};

/// Where bus bandwidths come from.
#[derive(Clone)]
pub enum Bandwidths {
    /// Derived from the server shape and the NVLink and NIC speeds; scaled by measured
    /// size-efficiency tables when given (SimAI's, measured on its fabric), else the peak.
    Builtin(Option<RatioTables>),
    /// Measured per group and collective (busbw.yaml); DP_EP falls back to the EP section.
    File(BusbwTable),
}

#[derive(Clone)]
pub struct AlphaBeta {
    pub platform: ServerSpec,
    pub bandwidths: Bandwidths,
    /// The servers' NVSwitches reduce in-network (NVLS), so the tuner may pick NVLS.
    pub nvls: bool,
    /// The algorithm choice, as the flow model makes it (NCCL_ALGO / NCCL_PROTO / AS_*).
    pub options: Options,
    /// Tuner choices already worked out, shared with other runs, on any thread (None: price
    /// every time).
    pub memo: Option<Arc<Mutex<PriceMemo>>>,
}

/// (collective, S, servers spanned, NVLink-bound wanted, (server, rail) of each group rank).
type MemoKey = (Collective, u64, u32, bool, Vec<(u32, u32)>);

/// Tuner choices (latency, bandwidth term, NVLink-bound) of one model, by everything else they
/// depend on; a model with other server specs or options starts it afresh.
#[derive(Default)]
pub struct PriceMemo {
    model: Option<(ServerSpec, Options, bool)>,
    prices: IntMap<MemoKey, (f64, f64, bool)>,
}

/// The memo, also after a panic elsewhere (its prices are written whole or not at all).
fn lock(memo: &Mutex<PriceMemo>) -> MutexGuard<'_, PriceMemo> {
    memo.lock().unwrap_or_else(|e| e.into_inner())
}

impl AlphaBeta {
    /// NCCL's tuner on `platform`, NVLS offered where its GPUs' NVSwitches reduce (Hopper).
    pub fn nccl(platform: ServerSpec, bandwidths: Bandwidths) -> AlphaBeta {
        let nvls = platform.gpu.nvls_busbw.is_some();
        let options = Options { nvls_enable: nvls, ..Options::default() };
        AlphaBeta { platform, bandwidths, nvls, options, memo: None }
    }

    /// Per-GPU link speeds of the servers; no fabric, so no physical path latency.
    fn links(&self) -> Links {
        let p = &self.platform;
        Links {
            nvlink_gbps: p.nvlink() as f64,
            nic_gbps: p.nic_bw() as f64 * p.nics_per_server as f64 / p.gpus_per_server as f64,
            alpha_nvlink_ns: 0.0,
            alpha_net_ns: 0.0,
            arch: p.gpu.arch,
        }
    }

    /// [`AlphaBeta::tuned`] through the memo, when there is one.
    fn tuned_memo(
        &self,
        c: Collective,
        g: &GroupShape,
        bytes: u64,
        bound: bool,
    ) -> Result<(f64, f64, bool), InputError> {
        let Some(memo) = &self.memo else { return self.tuned(c, g, bytes, bound) };
        // Ranks off the platform are the tuner's error to report.
        let places: Option<Vec<(u32, u32)>> = g
            .ranks
            .iter()
            .map(|&r| (r < g.placement.ranks()).then(|| (g.placement.domain(r), g.placement.rail(r))))
            .collect();
        let Some(places) = places else { return self.tuned(c, g, bytes, bound) };
        let key = (c, bytes, g.nodes, bound, places);
        let model = (self.platform.clone(), self.options.clone(), self.nvls);
        {
            let mut kept = lock(memo);
            if kept.model.as_ref() != Some(&model) {
                *kept = PriceMemo { model: Some(model.clone()), prices: IntMap::default() };
            }
            if let Some(&t) = kept.prices.get(&key) {
                return Ok(t);
            }
        }
        // Worked out unlocked, so other threads go on; one that works out the same key too
        // finds the same price.
        let t = self.tuned(c, g, bytes, bound)?;
        let mut kept = lock(memo);
        if kept.model.as_ref() == Some(&model) {
            kept.prices.insert(key, t);
        }
        Ok(t)
    }

    /// (latency, bandwidth term, NVLink-bound) of the tuner's choice for `c` on `g`, ns; whether
    /// it is NVLink-bound is worked out only when `bound` asks (false otherwise).
    fn tuned(&self, c: Collective, g: &GroupShape, bytes: u64, bound: bool) -> Result<(f64, f64, bool), InputError> {
        let links = self.links();
        let p = &self.platform;
        let topo = GroupTopo::new(&g.ranks, &g.placement, self.nvls);
        if c == Collective::AllToAll && g.size > DIRECT_MAX_RANKS && self.options.forced(c, &topo).is_none() {
            // Too many pairs to hold: the direct schedule's cost by symmetry (uniform shape assumed).
            let inter = u32::from(g.nodes > 1);
            let direct = Algorithm::DIRECT;
            let (p, l) = direct.protocols()[0];
            let lat = call_latency_ns(c, direct, p, l, (1 - inter, inter), g.nodes, (0.0, 0.0));
            let nodes = g.nodes.max(1);
            return Ok((lat, direct_all_to_all_ns(nodes, g.size.div_ceil(nodes), bytes, &links), false));
        }
        let choice = choose(c, &topo, bytes, group_channels(&topo, p.nics_per_server.max(2)), &links, &self.options)?;
        let s = &choice.schedule;
        let lat = s.timing.latency_ns();
        if !bound {
            return Ok((lat, choice.predicted_ns - lat, false));
        }
        let nic_only = timed_ns(s, &s.timing, &topo, &Links { nvlink_gbps: 1e30, ..links })?;
        Ok((lat, choice.predicted_ns - lat, choice.predicted_ns > nic_only * (1.0 + 1e-12)))
    }

    /// Measured size efficiency of this collective on this group, 1 without tables.
    fn ratio(&self, ratios: &RatioTables, c: Collective, g: &GroupShape, bytes: u64, nvlink_bound: bool) -> f64 {
        let table: &RatioTable = if c == Collective::AllToAll && g.nodes > 1 {
            &ratios.all_to_all
        } else if g.nodes <= 1 || nvlink_bound {
            &ratios.nvlink
        } else {
            &ratios.nic
        };
        table.value(bytes as f64, g.nodes)
    }
}

impl CollectiveCost for AlphaBeta {
    fn collective_ns(&self, c: Collective, g: &GroupShape, bytes: u64) -> Result<f64, InputError> {
        if g.size <= 1 || bytes == 0 {
            return Ok(0.0);
        }
        match &self.bandwidths {
            Bandwidths::Builtin(ratios) => {
                let (lat, wire, nvlink_bound) = self.tuned_memo(c, g, bytes, ratios.is_some())?;
                let ratio = ratios.as_ref().map_or(1.0, |r| self.ratio(r, c, g, bytes, nvlink_bound));
                Ok(lat + wire / ratio)
            }
            Bandwidths::File(t) => {
                let key = BusbwTable::key(c);
                let section = if g.name == "DP_EP" && t.get("DP_EP", key).is_err() { "EP" } else { g.name.as_str() };
                let busbw = t.get(section, key)? as f64;
                let wire = bytes as f64 * c.busbw_factor(g.size);
                let h = ring_hops(c, g.size, g.nodes);
                Ok(Algorithm::RING
                    .protocols()
                    .into_iter()
                    .map(|(p, lat)| {
                        call_latency_ns(c, Algorithm::RING, p, lat, h, g.nodes, (0.0, 0.0))
                            + wire / (p.efficiency() * busbw)
                    })
                    .fold(f64::INFINITY, f64::min))
            }
        }
    }

    /// Point-to-point (pipeline) transfer: Simple protocol latency plus size over the link:
    /// NVLink inside a server, the NIC share of one GPU across servers (or the file's PP busbw).
    fn transfer_ns(&self, same_server: bool, bytes: u64) -> Result<f64, InputError> {
        let bw = match &self.bandwidths {
            Bandwidths::File(t) => t.get("PP", "busbw")? as f64,
            Bandwidths::Builtin(_) if same_server => self.links().nvlink_gbps,
            Bandwidths::Builtin(_) => self.links().nic_gbps,
        };
        Ok(p2p_latency_ns(same_server, (0.0, 0.0)) + bytes as f64 / bw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Placement;
    use std::rc::Rc;
    use Collective::*;

    const GIB: f64 = 1073741824.0;

    fn model(bandwidths: Bandwidths) -> AlphaBeta {
        AlphaBeta::nccl(ServerSpec::new(8, 8, "A100", "cx7").unwrap(), bandwidths)
    }

    /// `per_node` ranks on each of `nodes` servers of 8 GPUs.
    fn shape(name: &str, nodes: u32, per_node: u32) -> GroupShape {
        let ranks: Vec<u32> = (0..nodes).flat_map(|s| (0..per_node).map(move |j| s * 8 + j)).collect();
        let placement = Rc::new(Placement::servers(ranks.iter().max().map_or(0, |r| r + 1), 8));
        GroupShape { name: name.into(), size: ranks.len() as u32, nodes, per_node, tp: 8, ep: 1, ranks, placement }
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn large_messages_pay_simple_latency_plus_bus_time() {
        let m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        // TP 8 in one A100 server, all-gather of 1 GiB: ring (the only candidate), Simple:
        // α = 8.4 + 7 × 3.4 µs; S·7/8 at 240 GB/s × NVLink ratio 0.77/0.81.
        let got = m.collective_ns(AllGather, &shape("TP", 1, 8), GIB as u64).unwrap();
        close(got, (8.4 + 7.0 * 3.4) * 1e3 + GIB * 7.0 / 8.0 / (240.0 * 0.77 / 0.81));
        // DP of 16 ranks, one per server, all-reduce: the ring beats the tree at 1 GiB; 30 steps
        // across servers, Simple, × 1.4 (multi-node ring all-reduce); one NIC, 48.5 GB/s × NIC
        // ratio at 16 nodes and 1 GiB (0.76/0.96).
        let got = m.collective_ns(AllReduce, &shape("DP", 16, 1), GIB as u64).unwrap();
        close(got, 1.4 * (8.4 + 30.0 * 14.0) * 1e3 + GIB * 2.0 * 15.0 / 16.0 / (48.5 * 0.76 / 0.96));
    }

    #[test]
    fn small_messages_pay_ll_latency() {
        let m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        // 4 KiB all-reduce in TP 8: LL ring, 6.6 + 14 × 0.6 = 15 µs, at half of 240 × 0.45/0.81.
        let got = m.collective_ns(AllReduce, &shape("TP", 1, 8), 4096).unwrap();
        close(got, 15.0e3 + 4096.0 * 1.75 / (0.5 * 240.0 * 0.45 / 0.81));
    }

    #[test]
    fn all_to_all_across_servers_is_limited_by_the_nics() {
        let mut m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        // EP 16 = 2 servers × 8, direct (NCCL_P2P_PXN_LEVEL=0): one step across servers
        // (8.4 + 14 µs); a GPU sends 8·S/16 over its 48.5 GB/s NIC share; all-to-all ratio
        // (2 nodes, 1 GiB: 0.81/0.80).
        let wire = GIB / 2.0 / 48.5f32 as f64 / (0.81 / 0.80);
        let pxn = m.collective_ns(AllToAll, &shape("EP", 2, 8), GIB as u64).unwrap();
        m.options.p2p_pxn = false;
        let got = m.collective_ns(AllToAll, &shape("EP", 2, 8), GIB as u64).unwrap();
        close(got, (8.4 + 14.0) * 1e3 + wire);
        // PXN (NCCL's default): the same S/2 leaves each NIC, aggregated per destination by the
        // GPU on its rail, in k = S/2 / 512 KiB = 1024 chunks through a pipeline one NVLink hop
        // (3.4 µs) deeper, so k + 1 steps.
        close(pxn, (8.4 + 14.0 + 3.4) * 1e3 + wire * 1025.0 / 1024.0);
    }

    #[test]
    fn busbw_file_values_are_decimal_gb_per_s() {
        let t =
            BusbwTable::parse("b.yaml", "x\nTP:\nreducescatter,: 200\nEP:\nallgather,: 40\nPP:\nbusbw: 25\n").unwrap();
        let m = model(Bandwidths::File(t));
        let got = m.collective_ns(ReduceScatter, &shape("TP", 1, 8), GIB as u64).unwrap();
        close(got, (8.4 + 7.0 * 3.4) * 1e3 + GIB * 7.0 / 8.0 / 200.0);
        // DP_EP falls back to the EP section; PP transfers use PP.busbw.
        let got = m.collective_ns(AllGather, &shape("DP_EP", 4, 1), GIB as u64).unwrap();
        close(got, (8.4 + 3.0 * 14.0) * 1e3 + GIB * 3.0 / 4.0 / 40.0);
        assert_eq!(m.transfer_ns(false, 25_000_000).unwrap(), (8.4 + 14.0) * 1e3 + 1e6);
        assert!(m.collective_ns(AllReduce, &shape("TP", 1, 8), 1).is_err());
    }

    #[test]
    fn the_price_is_the_tuners_prediction_on_the_group() {
        // H800: NVLink 8 × 20.6 = 164.8 GB/s < 8 NICs × 48.5. DP 16 = 2 servers × 8, ring forced,
        // 1 GiB, no ratio tables: 8 channels each leave a server through a different NIC, so 7 of 8
        // stay on NVLink: B = min(8 × 48.5, 164.8 × 8/7); Simple: (8.4 + 28 × 3.4 + 2 × 14) × 1.4 µs.
        let platform = ServerSpec::new(8, 8, "H800", "cx7").unwrap();
        let mut m = AlphaBeta::nccl(platform, Bandwidths::Builtin(None));
        m.options.algorithm = Some(Algorithm::RING);
        let got = m.collective_ns(AllReduce, &shape("DP", 2, 8), GIB as u64).unwrap();
        let bw = (8.0 * 48.5f32 as f64).min(164.8f32 as f64 * 8.0 / 7.0);
        close(got, 1.4 * (8.4 + 28.0 * 3.4 + 2.0 * 14.0) * 1e3 + GIB * 2.0 * 15.0 / 16.0 / bw);
        // Unforced, the price is whatever the tuner predicts for the same group.
        m.options.algorithm = None;
        let g = shape("DP", 2, 8);
        let topo = GroupTopo::on_servers(&g.ranks, 8, true);
        for bytes in [4096u64, 1 << 20, 1 << 30] {
            let channels = group_channels(&topo, 8);
            let want = choose(AllReduce, &topo, bytes, channels, &m.links(), &m.options).unwrap().predicted_ns;
            close(m.collective_ns(AllReduce, &g, bytes).unwrap(), want);
        }
    }

    #[test]
    fn nvls_is_offered_on_hopper_only() {
        let s = shape("TP", 1, 8);
        let hopper = AlphaBeta::nccl(ServerSpec::new(8, 8, "H100", "cx7").unwrap(), Bandwidths::Builtin(None));
        let ampere = model(Bandwidths::Builtin(None));
        // 1 GiB all-reduce in one H100 server: NVLS after 25 µs; 8 channels of k = 256 chunks of
        // 512 KiB pipelined up and down in k + 1 steps, each moving 8 chunks per GPU port, at
        // 370.8 GB/s × Hopper's NVLS efficiency × 15/16, the efficiency that makes an 8×H100
        // board's asymptotic busbw 1.75 × 370.8 × it × 15/16 the catalog's 475 GB/s
        // (collective::nccl::nvls_achieved_hopper).
        let got = hopper.collective_ns(AllReduce, &s, GIB as u64).unwrap();
        let step = 8.0 * 524288.0 / ((20.6f32 * 18.0) as f64 * 475.0 / (1.75 * 370.8));
        close(got, 25.0e3 + 257.0 * step);
        // A100: ring, 2·7/8 S at 240 GB/s.
        let got = ampere.collective_ns(AllReduce, &s, GIB as u64).unwrap();
        close(got, (8.4 + 14.0 * 3.4) * 1e3 + GIB * 1.75 / 240.0);
    }

    #[test]
    fn all_to_all_beyond_the_direct_limit_is_priced_by_symmetry() {
        // EP 4096 = 512 servers × 8 (A100, 8 CX7 NICs): a GPU sends 4088/4096 of S over its own
        // NIC (48.5 GB/s) after the direct schedule's one step across servers (8.4 + 14 µs).
        let m = model(Bandwidths::Builtin(None));
        let got = m.collective_ns(AllToAll, &shape("EP", 512, 8), GIB as u64).unwrap();
        close(got, (8.4 + 14.0) * 1e3 + GIB * 4088.0 / 4096.0 / 48.5f32 as f64);
    }

    #[test]
    fn a_shared_memo_gives_the_unmemoised_prices() {
        let shapes = [shape("TP", 1, 8), shape("DP", 16, 1), shape("DP", 2, 8), shape("EP", 4, 2), shape("EP", 512, 8)];
        let memo = Arc::new(Mutex::new(PriceMemo::default()));
        let a100 = || model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        let h800 = || AlphaBeta::nccl(ServerSpec::new(8, 8, "H800", "cx7").unwrap(), Bandwidths::Builtin(None));
        for (round, fresh) in [a100, h800, a100].into_iter().enumerate() {
            let memoised = AlphaBeta { memo: Some(memo.clone()), ..fresh() };
            for pass in 0..2 {
                for g in &shapes {
                    for c in [AllReduce, AllGather, ReduceScatter, AllToAll] {
                        for bytes in [4096u64, 3 << 20, 1 << 30] {
                            let want = fresh().collective_ns(c, g, bytes).unwrap();
                            let got = memoised.collective_ns(c, g, bytes).unwrap();
                            assert_eq!(got.to_bits(), want.to_bits(), "round {round} pass {pass} {c:?} {g:?} {bytes}");
                        }
                    }
                }
                // Every price worked out once per model: the second pass found them all.
                assert_eq!(lock(&memo).prices.len(), shapes.len() * 4 * 3, "round {round} pass {pass}");
            }
        }
    }

    #[test]
    fn nothing_to_do_costs_nothing() {
        let m = model(Bandwidths::Builtin(Some(RatioTables::builtin())));
        assert_eq!(m.collective_ns(AllReduce, &shape("TP", 1, 8), 0).unwrap(), 0.0);
        assert_eq!(m.collective_ns(AllReduce, &shape("TP", 1, 1), 1 << 20).unwrap(), 0.0);
    }

    const MSCCL_DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/msccl/");

    /// 1 GiB all-reduce on one A100 server of 8 GPUs with `algorithm` forced, priced through `memo`.
    fn price(algorithm: Algorithm, memo: Option<&Arc<Mutex<PriceMemo>>>) -> f64 {
        let mut m = AlphaBeta::nccl(ServerSpec::new(8, 8, "A100", "cx7").unwrap(), Bandwidths::Builtin(None));
        m.options.algorithm = Some(algorithm);
        m.memo = memo.cloned();
        let ranks: Vec<u32> = (0..8).collect();
        let placement = Rc::new(Placement::servers(8, 8));
        let g = GroupShape { name: "TP".into(), size: 8, nodes: 1, per_node: 8, tp: 8, ep: 1, ranks, placement };
        m.collective_ns(Collective::AllReduce, &g, 1 << 30).unwrap()
    }

    #[test]
    fn two_msccl_programs_under_one_name_do_not_share_a_memo_entry() {
        // One path, two programs (a file rewritten, or one relative path from two directories):
        // one name, two algorithms; the price memo, keyed by the tuner's options, keeps them apart.
        let dir = std::env::temp_dir().join(format!("clustersim-memo-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("allreduce.xml");
        let path_text = path.to_str().unwrap();
        let memo = Arc::new(Mutex::new(PriceMemo::default()));
        let mut seen = Vec::new();
        for file in ["allreduce_ndv2.xml", "allreduce_allpairs_ll.xml", "allreduce_ndv2.xml"] {
            std::fs::copy(format!("{MSCCL_DATA}{file}"), &path).unwrap();
            let a = Algorithm::parse(&format!("msccl:{path_text}")).unwrap();
            let alone = price(a, None);
            assert_eq!(price(a, Some(&memo)), alone, "{file}");
            assert_eq!(price(a, Some(&memo)), alone, "{file}, from the memo");
            seen.push((a, alone));
        }
        std::fs::remove_dir_all(&dir).unwrap();
        let [(ndv2, t_ndv2), (pairs, t_pairs), (again, t_again)] = seen[..] else { unreachable!() };
        assert_eq!(ndv2.name(), pairs.name());
        assert_ne!(ndv2, pairs);
        assert_ne!(t_ndv2, t_pairs);
        // The same program read again is the same algorithm (a sweep holds one copy).
        assert_eq!((ndv2, t_ndv2), (again, t_again));
    }
}
