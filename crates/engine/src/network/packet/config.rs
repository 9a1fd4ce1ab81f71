//! What the packet model is told: framing, switch buffers, PFC, ECN, congestion control.
//!
//! Units: bytes, ns, bytes/ns (= GB/s). Defaults are SimAI 1.6's shipped `SimAI.conf` where it
//! has the key (its file: `tests/data/ns3/*/SimAI.conf`), else the cited specification:
//! - Framing: [`crate::catalog::transport`] (RoCEv2 by default), with the conf's
//!   `PACKET_PAYLOAD_SIZE` (9000) as the payload per packet.
//! - `BUFFER_SIZE` 32 (MB) of shared buffer per switch.
//! - PFC (IEEE 802.1Qbb): an ingress port whose bytes held in the switch pass `xoff` makes the
//!   switch pause the upstream sender; below `xon` it resumes it. The static threshold is a number
//!   of bytes; the dynamic one (Choudhury and Hahne, "Dynamic queue length thresholds for
//!   shared-memory packet switches", IEEE/ACM ToN 1998) is α × the free shared buffer, α = 1/8
//!   here (a common switch default; SimAI.conf does not set it).
//! - ECN by RED (Floyd and Jacobson, ToN 1993, on the instantaneous queue as DCQCN's paper
//!   runs it): `KMIN_MAP`, `KMAX_MAP`, `PMAX_MAP` per link rate (kilobytes of 1000 bytes).
//! - DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015):
//!   `EWMA_GAIN` g, `RATE_AI`, `RATE_HAI`, `MIN_RATE`, `FAST_RECOVERY_TIMES` F, `RP_TIMER`
//!   (µs), `ALPHA_RESUME_INTERVAL` (µs: the paper's K), `RATE_DECREASE_INTERVAL` (µs: the
//!   shortest gap between two rate cuts, the paper's CNP interval N moved to the sender); the
//!   byte counter B is the paper's 10 MB (SimAI.conf has no key for it); `CLAMP_TARGET_RATE`
//!   as NVIDIA's ConnectX DCQCN parameters define `clamp_tgt_rate` (see [`DcqcnParams`]).

use crate::catalog::transport::{Transport, ROCE_V2};

/// Which congestion control the senders run (SimAI's `CC_MODE`: 1 DCQCN; 0 here: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcMode {
    /// Every queue pair sends at its NIC's line rate (or its ceiling).
    None,
    /// DCQCN: rate cut on CNP, α, fast recovery / additive / hyper increase.
    Dcqcn,
}

/// PFC's pause threshold per ingress port.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PfcThreshold {
    /// Pause above `xoff` bytes held from the port, resume below `xon`.
    Static { xoff: u64, xon: u64 },
    /// Pause above α × (buffer − bytes held in the switch); resume below that less `hysteresis`.
    Dynamic { alpha: f64, hysteresis: u64 },
}

/// RED's marking profile for one link rate: no mark below `kmin` bytes queued, probability rising
/// linearly to `pmax` at `kmax`, every packet above.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Red {
    pub kmin: u64,
    pub kmax: u64,
    pub pmax: f64,
}

impl Red {
    /// The marking probability on a queue of `q` bytes.
    pub fn probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q >= self.kmax {
            1.0
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        }
    }
}

/// DCQCN's reaction point (the sender), SIGCOMM '15 §3: rates in bytes/ns, times in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcqcnParams {
    /// g, the gain of α's moving average.
    pub gain: f64,
    /// R_AI: additive increase step.
    pub rate_ai: f64,
    /// R_HAI: hyper increase step.
    pub rate_hai: f64,
    pub min_rate: f64,
    /// F: increase events before additive (and hyper) increase.
    pub fast_recovery: u32,
    /// T: the rate-increase timer.
    pub timer_ns: f64,
    /// B: the rate-increase byte counter.
    pub byte_counter: u64,
    /// K: α decays once per K without a CNP.
    pub alpha_interval_ns: f64,
    /// Shortest gap between two rate cuts of one queue pair.
    pub decrease_interval_ns: f64,
    /// `CLAMP_TARGET_RATE`: every cut sets R_T ← R_C (the paper). Off (SimAI's shipped 0, and
    /// NVIDIA ConnectX's `clamp_tgt_rate` default), a cut moves R_T only when the timer has
    /// raised the rate since the previous cut (ConnectX's `clamp_tgt_rate_after_time_inc`), so
    /// back-to-back cuts keep the rate the flow had before congestion as its target.
    pub clamp_target: bool,
}

impl Default for DcqcnParams {
    /// SimAI 1.6's shipped conf (rates in Mb/s there: 50 Mb/s = 0.00625 bytes/ns).
    fn default() -> Self {
        DcqcnParams {
            gain: 0.00390625,
            rate_ai: 50e6 / 8e9,
            rate_hai: 100e6 / 8e9,
            min_rate: 100e6 / 8e9,
            fast_recovery: 1,
            timer_ns: 900e3,
            byte_counter: 10_000_000,
            alpha_interval_ns: 1e3,
            decrease_interval_ns: 4e3,
            clamp_target: false,
        }
    }
}

/// The packet model's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketConfig {
    /// Framing: header and gap bytes per packet ([`crate::catalog::transport`]).
    pub transport: Transport,
    /// Payload bytes per packet (SimAI.conf `PACKET_PAYLOAD_SIZE`).
    pub payload_bytes: u32,
    /// Shared buffer per switch, bytes (`BUFFER_SIZE`, MB).
    pub buffer_bytes: u64,
    /// PFC on (lossless) or off (drops, go-back-N).
    pub pfc: bool,
    pub pfc_threshold: PfcThreshold,
    /// ECN marking on (`ENABLE_QCN`).
    pub ecn: bool,
    /// RED per link rate, (bytes/ns, profile), ascending: a link takes the entry of the largest
    /// rate not above its own (the first when it is slower than all).
    pub red: Vec<(f64, Red)>,
    pub cc: CcMode,
    pub dcqcn: DcqcnParams,
    /// The receiver acknowledges every this many in-order packets (`L2_ACK_INTERVAL`), and the
    /// last one.
    pub ack_interval: u32,
    /// Cap each queue pair's bytes in flight at its path's bandwidth-delay product (`HAS_WIN`).
    pub window: bool,
    /// Go-back-N timeout: no acknowledged progress for this long resends from the first
    /// unacknowledged byte.
    pub rto_ns: f64,
    /// ECN's random draws and nothing else.
    pub seed: u64,
}

impl Default for PacketConfig {
    fn default() -> Self {
        // SimAI 1.6's maps: link rate in bit/s -> kilobytes (KMIN, KMAX) or probability (PMAX).
        let rates = [25e9, 50e9, 100e9, 200e9, 400e9, 1600e9];
        let kmin = [100, 200, 400, 300, 800, 600];
        let kmax = [400, 800, 1600, 1200, 3200, 2400];
        let pmax = [0.2, 0.2, 0.2, 0.8, 0.2, 0.2];
        let red = (0..rates.len())
            .map(|i| (rates[i] / 8e9, Red { kmin: kmin[i] * 1000, kmax: kmax[i] * 1000, pmax: pmax[i] }))
            .collect();
        PacketConfig {
            transport: ROCE_V2,
            payload_bytes: 9000,
            buffer_bytes: 32_000_000,
            pfc: true,
            pfc_threshold: PfcThreshold::Dynamic { alpha: 0.125, hysteresis: 2 * 9082 },
            ecn: true,
            red,
            cc: CcMode::Dcqcn,
            dcqcn: DcqcnParams::default(),
            ack_interval: 1,
            window: true,
            rto_ns: 1e6,
            seed: 0,
        }
    }
}

impl PacketConfig {
    /// A plain fabric: no congestion control, no ECN, PFC off, no window, a buffer no traffic fills: each
    /// packet pays only its serialisation and propagation (the case the flow model also prices).
    pub fn plain() -> PacketConfig {
        PacketConfig {
            pfc: false,
            ecn: false,
            cc: CcMode::None,
            window: false,
            buffer_bytes: u64::MAX / 4,
            ..PacketConfig::default()
        }
    }

    /// RED's profile for a link of `rate` bytes/ns.
    pub fn red_for(&self, rate: f64) -> Option<Red> {
        let mut pick = self.red.first()?.1;
        for &(r, red) in &self.red {
            if r <= rate * (1.0 + 1e-9) {
                pick = red;
            }
        }
        Some(pick)
    }
}
