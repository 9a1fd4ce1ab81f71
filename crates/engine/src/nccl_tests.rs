//! nccl-tests on the flow model: one collective over the first n GPUs of a fabric, once per size.
//!
//! A front end, above the driver (it builds a workload and runs it through [`simulate`]), not part
//! of the flow model: the models under [`crate::network`] never call it. What the tuner reads off
//! the fabric (its link rates, the default channel count) is the collectives'
//! ([`crate::collective::tuner_links`]).
//!
//! Each size S runs as its own op of a one-class workload whose single group spans the n ranks,
//! through the real executor and [`FlowNetwork`]. The ops sit on one communicator stream, so each
//! starts when the previous one has finished: every size meets an idle network, as nccl-tests'
//! timed loop does (shared/reference/hardware.md §3). The time of a size is its op's end − start.
//!
//! The algorithm is forced or chosen per size by NCCL's tuning model
//! ([`crate::collective::choose::choose`]) on the fabric's own link rates
//! ([`TunerLinks`](crate::collective::tuner_links::TunerLinks)); the flow model then plays the
//! chosen schedule's bytes on the links. Protocol efficiency (LL, LL128) is a choice criterion
//! only: the flows carry payload at link rate.

use crate::network::packet::PacketConfig;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::collective::choose::Options;
use crate::collective::{Algorithm, Protocol};
use crate::driver::{simulate, Backend};
use crate::error::{InputError, Result};
use crate::network::flow::network::{FlowNetwork, Scheduler, Tuning};
use crate::platform::Platform;
use crate::workload::sweep::sweep_workload;
use crate::workload::Collective;

/// How to run a sweep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepOptions {
    /// Algorithm choice and SimAI's AS_* switches; `choose.algorithm = None` is "auto".
    pub choose: Options,
    /// Channels per ring or tree; 0 = [`default_channels`].
    pub channels: u32,
    /// Ranks: the first n GPUs; None = every GPU.
    pub ranks: Option<u32>,
    /// ECMP seed.
    pub seed: u64,
    /// Queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION; 0 = 1).
    pub qps: u32,
    /// Move the transfers as packets with this configuration (the packet backend); None: flows.
    pub packet: Option<PacketConfig>,
}

/// One measured size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    pub bytes: u64,
    pub ns: f64,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
}

/// Run collective `c` of each S in `sizes` (bytes, nccl-tests convention) over the fabric.
pub fn sweep(topo: Platform, c: Collective, sizes: &[u64], opts: &SweepOptions) -> Result<Vec<SweepPoint>> {
    let gpus = topo.placement.ranks();
    let n = opts.ranks.unwrap_or(gpus);
    if n == 0 || n > gpus {
        return Err(InputError::field(
            "sweep",
            "ranks",
            format!("must be from 1 to the fabric's {gpus} GPUs, got {n}"),
        ));
    }
    if sizes.is_empty() {
        return Ok(Vec::new());
    }
    // Record what the tuner picked for each size (the schedule names its algorithm).
    let picked: Rc<RefCell<HashMap<u64, (Algorithm, Protocol)>>> = Rc::default();
    let record = picked.clone();
    let tuning = Tuning { options: opts.choose.clone(), channels: opts.channels, qps: opts.qps, seed: opts.seed };
    let net = FlowNetwork::tuned(topo, &tuning, |mut inner| -> Scheduler {
        Box::new(move |c, g, bytes| {
            let s = inner(c, g, bytes)?;
            record.borrow_mut().insert(bytes, (s.algorithm, s.timing.protocol));
            Ok(s)
        })
    })?;
    let mut net = net;
    if let Some(config) = &opts.packet {
        net.use_packets(config.clone())?;
    }
    let w = sweep_workload(c, n, sizes);
    let run = simulate(&w, Backend::FlowNetwork(Box::new(net)), &mut |_| true)?.execution;
    let tl = &run.timelines[0];
    let picked = picked.borrow();
    Ok(sizes
        .iter()
        .enumerate()
        .map(|(i, &bytes)| {
            // A one-rank group or S = 0 is never scheduled; nothing ran, call it the forced or ring.
            let (algorithm, protocol) = picked.get(&bytes).copied().unwrap_or((
                opts.choose.algorithm.unwrap_or(Algorithm::RING),
                opts.choose.protocol.unwrap_or(Protocol::Simple),
            ));
            SweepPoint { bytes, ns: tl.end[i] - tl.start[i], algorithm, protocol }
        })
        .collect())
}

/// Parse a collective's name as nccl-tests and clustersim spell it (all_reduce, allreduce, …).
pub fn parse_collective(name: &str) -> Result<Collective> {
    let key = name.to_ascii_lowercase().replace(['_', '-'], "");
    Collective::ALL.into_iter().find(|c| c.name() == key).ok_or_else(|| {
        let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
        InputError::field("sweep", "collective", format!("unknown collective '{name}' (valid: {})", names.join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::choose::algorithm_choice;
    use crate::platform::{Link, NodeKind};

    fn both(links: &mut Vec<Link>, a: u32, b: u32, bandwidth: f64, latency_ns: f64) {
        for (src, dst) in [(a, b), (b, a)] {
            links.push(Link { src, dst, bandwidth, latency_ns, error_rate: 0.0 });
        }
    }

    /// `servers` servers of 8 GPUs, one NVSwitch each (NVLink `nv` GB/s per GPU), every GPU's NIC
    /// (`nic` GB/s) on one non-blocking switch.
    fn cluster(servers: u32, nv: f64, nic: f64) -> Platform {
        let g = servers * 8;
        let kinds =
            [vec![NodeKind::Gpu; g as usize], vec![NodeKind::NvSwitch; servers as usize], vec![NodeKind::Switch]]
                .concat();
        let mut links = Vec::new();
        for i in 0..g {
            both(&mut links, i, g + i / 8, nv, 0.0);
            both(&mut links, i, g + servers, nic, 0.0);
        }
        Platform::from_parts("test", kinds, links, 8, "H100").unwrap()
    }

    fn ring() -> SweepOptions {
        SweepOptions {
            choose: Options {
                algorithm: Some(Algorithm::RING),
                protocol: Some(Protocol::Simple),
                ..Options::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn ring_all_reduce_meets_the_bus_bandwidth_closed_form() {
        // 4 servers on one non-blocking switch. Each channel's ring crosses every server boundary
        // once, on the NIC of the GPU it leaves from, so with c channels (c ≤ 8) the server
        // boundary carries c NICs' worth: busbw = c · B_nic, as long as NVLink keeps up (each GPU
        // forwards c − 1 channels over NVLink: (c − 1)/360 < 1/50). nccl-tests' 2×8 A100 with
        // 8×HDR reaching ≈ 8 × 25 GB/s is this shape (hardware.md §3). NCCL's Simple latency
        // comes first: 56 NVLink hops (3.4 µs) and 6 network hops (14 µs), × 1.4 across servers.
        let n = 32.0;
        let lat = 1.4 * (8.4 + 56.0 * 3.4 + 6.0 * 14.0) * 1e3;
        for channels in [1u32, 4, 8] {
            let opts = SweepOptions { channels, ..ring() };
            let got = sweep(cluster(4, 360.0, 50.0), Collective::AllReduce, &[1 << 24, 1 << 29], &opts).unwrap();
            for p in &got {
                let busbw = p.bytes as f64 / (p.ns - lat) * Collective::AllReduce.busbw_factor(32);
                let want = channels as f64 * 50.0;
                assert!((busbw - want).abs() < 1e-6 * want, "{channels} ch, {} B: {busbw} vs {want}", p.bytes);
                let t = lat + 2.0 * (n - 1.0) / n * p.bytes as f64 / want;
                assert!((p.ns - t).abs() < 1e-6 * t);
                assert_eq!(p.algorithm, Algorithm::RING);
            }
        }
    }

    #[test]
    fn each_size_runs_on_an_idle_network() {
        let one = sweep(cluster(2, 360.0, 50.0), Collective::AllGather, &[1 << 26], &ring()).unwrap();
        let after = sweep(cluster(2, 360.0, 50.0), Collective::AllGather, &[1 << 30, 1 << 26], &ring()).unwrap();
        assert!((one[0].ns - after[1].ns).abs() < 1e-9 * one[0].ns);
    }

    #[test]
    fn auto_picks_nvls_in_one_server_only_when_enabled_and_it_is_faster() {
        let topo = cluster(1, 360.0, 50.0);
        let on = SweepOptions { choose: Options { nvls_enable: true, ..Options::default() }, ..Default::default() };
        let nvls = sweep(topo.clone(), Collective::AllReduce, &[1 << 30], &on).unwrap()[0];
        assert_eq!(nvls.algorithm, Algorithm::NVLS);
        let off = sweep(topo, Collective::AllReduce, &[1 << 30], &SweepOptions::default()).unwrap()[0];
        assert_ne!(off.algorithm, Algorithm::NVLS);
        assert!(nvls.ns < off.ns, "NVLS {} ns vs {:?} {} ns", nvls.ns, off.algorithm, off.ns);
    }

    #[test]
    fn send_lat_delays_every_step() {
        // 8-rank ring all-reduce inside a server: 14 sequential steps, each 10 µs later, in place
        // of NCCL's latency; each step moves S/8 per GPU (8 channels of S/64) over NVLink.
        let topo = cluster(1, 360.0, 50.0);
        let mut late = ring();
        late.choose.send_lat_us = Some(10.0);
        let got = sweep(topo, Collective::AllReduce, &[1 << 20], &late).unwrap()[0].ns;
        let want = 14.0 * (10e3 + (1 << 20) as f64 / 8.0 / 360.0);
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn bad_input_says_what_is_valid() {
        let topo = cluster(1, 360.0, 50.0);
        let many = SweepOptions { ranks: Some(9), ..ring() };
        assert!(sweep(topo.clone(), Collective::AllReduce, &[1], &many).unwrap_err().message.contains("8 GPUs"));
        let a2a = sweep(topo, Collective::AllToAll, &[1 << 20], &ring()).unwrap_err();
        assert!(a2a.message.contains("valid here: direct"), "{a2a}");
        assert!(parse_collective("all_gather").is_ok());
        assert!(parse_collective("gather").unwrap_err().message.contains("allreduce"));
        let bruck = algorithm_choice("bruck").unwrap_err();
        assert!(bruck.message.contains("(valid: auto, ring") && bruck.message.ends_with("auto+extra)"), "{bruck}");
        assert_eq!(algorithm_choice("AUTO").unwrap(), (None, false));
        assert_eq!(algorithm_choice("Auto+Extra").unwrap(), (None, true));
        assert_eq!(algorithm_choice("ring").unwrap(), (Some(Algorithm::RING), false));
    }

    /// Two servers of 4 H100 on an NVSwitch each and a ToR, as a SimAI file (GPUs 0..8 first)
    /// and as a platform file listing switches first, GPUs in reverse and ranks mapped back.
    fn twins() -> (Platform, Platform) {
        let mut simai = String::from("11 4 2 1 16 H100\n8 9 10\n");
        let mut typed = String::from("node tor switch\nnode nvs1 nvswitch\nnode nvs0 nvswitch\n");
        for g in (0..8).rev() {
            typed += &format!("node g{g} gpu type=H100\n");
        }
        for g in 0..8 {
            simai += &format!("{g} {} 2880Gbps 0.000025ms 0\n{g} 10 400Gbps 0.0005ms 0\n", 8 + g / 4);
            typed += &format!("link g{g} nvs{} 2880Gbps 25ns\nlink tor g{g} 400Gbps 500ns\n", g / 4);
            typed += &format!("rank {g} g{g}\n");
        }
        (Platform::parse_simai("t.txt", &simai).unwrap(), crate::platform::file::tests::parse(&typed).unwrap())
    }

    #[test]
    fn a_platform_file_runs_as_its_simai_twin() {
        let (simai, typed) = twins();
        assert_eq!((typed.placement.domain(6), typed.placement.rail(6)), (1, 2));
        assert_eq!(typed.node_name(typed.placement.device(6)), "g6");
        assert_ne!(typed.placement.device(6), 6);
        for c in [Collective::AllReduce, Collective::AllToAll, Collective::AllGather] {
            let sizes = [4096, 1 << 20, 256 << 20];
            let a = sweep(simai.clone(), c, &sizes, &SweepOptions::default()).unwrap();
            let b = sweep(typed.clone(), c, &sizes, &SweepOptions::default()).unwrap();
            for (x, y) in a.iter().zip(&b) {
                assert!((x.ns - y.ns).abs() <= 1e-9 * x.ns, "{c:?} {}: {} vs {}", x.bytes, x.ns, y.ns);
                assert_eq!(x.algorithm, y.algorithm);
            }
        }
        // The typed platform cannot be written as SimAI (ranks are not on GPUs 0..8).
        assert!(typed.to_simai().unwrap_err().message.contains("places ranks otherwise"));
    }
}
