//! What the packet model is told: framing, switch buffers, PFC, ECN, congestion control.
//!
//! Units: bytes, ns, bytes/ns (= GB/s). Defaults are SimAI 1.6's shipped `SimAI.conf` where it
//! has the key (its file: `tests/data/ns3/*/SimAI.conf`), else the cited specification:
//! - Framing: [`crate::catalog::transport`] (RoCEv2 by default), with the conf's
//!   `PACKET_PAYLOAD_SIZE` (9000) as the payload per packet.
//! - `BUFFER_SIZE` 32 (MiB: SimAI multiplies it by 1024 · 1024) of shared buffer per switch.
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
//! - HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019, Algorithm 1):
//!   `U_TARGET` η, `MI_THRESH` (the paper's maxStage), `RATE_AI` (W_AI as a rate), `FAST_REACT`,
//!   `MULTI_RATE` (a rate per hop, the least taken), `SAMPLE_FEEDBACK`; see [`HpccParams`].
//! - TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter", SIGCOMM
//!   2015, Algorithm 1): T_low 50 µs, T_high 500 µs, β 0.8, EWMA weight α 0.875, minRTT 20 µs
//!   (the paper's values, which SimAI's ns-3 also uses: SimAI.conf has no keys for them), with
//!   `RATE_AI` as δ and `RATE_HAI` after 5 increases in a row; see [`TimelyParams`].
//! - DCTCP (Alizadeh et al., "Data Center TCP", SIGCOMM 2010, §3.1) as a rate: α's gain g is
//!   `EWMA_GAIN`, the additive step per window `DCTCP_RATE_AI`; see [`DctcpParams`].
//! - `VAR_WIN`: the window scales with the queue pair's current rate (W × R / line rate), under
//!   HPCC, TIMELY and DCTCP. Not under DCQCN yet, although SimAI's ns-3 scales it there too:
//!   doing so moves the DCN+ 32-GPU all-to-all's FCT p99 from 40 % above ns-3's to 51 % below
//!   (median −11 %), so it waits for DCQCN's calibration against ns-3 (issue 27).

use crate::catalog::transport::{Transport, ROCE_V2};

/// Which congestion control the senders run: SimAI's `CC_MODE` numbers (its ns-3 `RdmaHw`:
/// 1 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP; 10, HPCC-PINT, is not simulated) and 0 here for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcMode {
    /// Every queue pair sends at its NIC's line rate (or its ceiling).
    None,
    /// DCQCN: rate cut on CNP, α, fast recovery / additive / hyper increase.
    Dcqcn,
    /// HPCC: switches stamp INT, the sender sets its rate from the path's utilisation.
    Hpcc,
    /// TIMELY: rate from the RTT and its gradient.
    Timely,
    /// DCTCP: α from the share of ECN-echoing ACKs, a cut by α/2 once per window.
    Dctcp,
}

impl CcMode {
    /// Every mode with its name (the command line's `--cc`) and SimAI's `CC_MODE` number.
    pub const ALL: [(CcMode, &'static str, u32); 5] = [
        (CcMode::None, "none", 0),
        (CcMode::Dcqcn, "dcqcn", 1),
        (CcMode::Hpcc, "hpcc", 3),
        (CcMode::Timely, "timely", 7),
        (CcMode::Dctcp, "dctcp", 8),
    ];

    /// The mode of a `--cc` name.
    pub fn from_name(name: &str) -> Option<CcMode> {
        Self::ALL.iter().find(|m| m.1 == name).map(|m| m.0)
    }

    /// The mode of a SimAI `CC_MODE` number.
    pub fn from_simai(number: u32) -> Option<CcMode> {
        Self::ALL.iter().find(|m| m.2 == number).map(|m| m.0)
    }

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|m| m.0 == self).expect("listed").1
    }
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

/// HPCC's sender (SIGCOMM '19 Algorithm 1, in rates: R = W / T), as SimAI's ns-3 reads its keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HpccParams {
    /// η (`U_TARGET`): the utilisation the sender aims the bottleneck at.
    pub target_util: f64,
    /// maxStage (`MI_THRESH`): additive steps before a multiplicative one; 0 (SimAI's shipped
    /// value): every update is multiplicative.
    pub mi_thresh: u32,
    /// W_AI / T (`RATE_AI`): the additive step, bytes/ns.
    pub rate_ai: f64,
    /// `MIN_RATE`, bytes/ns.
    pub min_rate: f64,
    /// React to every ACK, not only once per round trip (`FAST_REACT`); the reference rate moves
    /// once per round trip either way.
    pub fast_react: bool,
    /// A rate per hop, the least of them sent at (`MULTI_RATE`); off: one rate from the most
    /// utilised hop (the paper's).
    pub multi_rate: bool,
    /// On fast reactions skip hops whose queue is empty (`SAMPLE_FEEDBACK`).
    pub sample_feedback: bool,
}

impl Default for HpccParams {
    /// SimAI 1.6's shipped conf.
    fn default() -> Self {
        HpccParams {
            target_util: 0.95,
            mi_thresh: 0,
            rate_ai: 50e6 / 8e9,
            min_rate: 100e6 / 8e9,
            fast_react: true,
            multi_rate: false,
            sample_feedback: false,
        }
    }
}

/// TIMELY's sender (SIGCOMM '15 Algorithm 1): times in ns, rates in bytes/ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelyParams {
    /// Below T_low the rate grows whatever the gradient.
    pub t_low_ns: f64,
    /// Above T_high: R ← R (1 − β (1 − T_high / RTT)).
    pub t_high_ns: f64,
    /// β, the multiplicative decrease factor.
    pub beta: f64,
    /// α, the weight of a new RTT difference in its moving average.
    pub alpha: f64,
    /// minRTT, the gradient's normaliser.
    pub min_rtt_ns: f64,
    /// δ (`RATE_AI`), the additive step.
    pub rate_ai: f64,
    /// The step after `hai_after` increases in a row (`RATE_HAI`; the paper's N δ).
    pub rate_hai: f64,
    /// N: increases in a row before the hyper step.
    pub hai_after: u32,
    /// `MIN_RATE`.
    pub min_rate: f64,
}

impl Default for TimelyParams {
    /// The paper's constants with SimAI's shipped rates.
    fn default() -> Self {
        TimelyParams {
            t_low_ns: 50e3,
            t_high_ns: 500e3,
            beta: 0.8,
            alpha: 0.875,
            min_rtt_ns: 20e3,
            rate_ai: 50e6 / 8e9,
            rate_hai: 100e6 / 8e9,
            hai_after: 5,
            min_rate: 100e6 / 8e9,
        }
    }
}

/// DCTCP as a rate (SIGCOMM '10 §3.1: α ← (1 − g) α + g F once per window of data, a cut by
/// α / 2 at most once per window; here the window's growth is a rate step per window).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DctcpParams {
    /// g (`EWMA_GAIN`).
    pub gain: f64,
    /// The additive step per window without a mark (`DCTCP_RATE_AI`), bytes/ns.
    pub rate_ai: f64,
    /// `MIN_RATE`.
    pub min_rate: f64,
}

impl Default for DctcpParams {
    /// SimAI 1.6's shipped conf.
    fn default() -> Self {
        DctcpParams { gain: 0.00390625, rate_ai: 1000e6 / 8e9, min_rate: 100e6 / 8e9 }
    }
}

/// The packet model's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketConfig {
    /// Framing: header and gap bytes per packet ([`crate::catalog::transport`]).
    pub transport: Transport,
    /// Payload bytes per packet (SimAI.conf `PACKET_PAYLOAD_SIZE`).
    pub payload_bytes: u32,
    /// Shared buffer per switch, bytes (`BUFFER_SIZE`, MiB).
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
    pub hpcc: HpccParams,
    pub timely: TimelyParams,
    pub dctcp: DctcpParams,
    /// The receiver acknowledges every this many in-order packets (`L2_ACK_INTERVAL`), and the
    /// last one.
    pub ack_interval: u32,
    /// Cap each queue pair's bytes in flight at its path's bandwidth-delay product (`HAS_WIN`).
    pub window: bool,
    /// Scale the window with the current rate (`VAR_WIN`): W × R / line rate.
    pub var_window: bool,
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
            buffer_bytes: 32 << 20,
            pfc: true,
            pfc_threshold: PfcThreshold::Dynamic { alpha: 0.125, hysteresis: 2 * 9082 },
            ecn: true,
            red,
            cc: CcMode::Dcqcn,
            dcqcn: DcqcnParams::default(),
            hpcc: HpccParams::default(),
            timely: TimelyParams::default(),
            dctcp: DctcpParams::default(),
            ack_interval: 1,
            window: true,
            var_window: true,
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
