//! The packet-level network model: RDMA queue pairs sending MTU packets through switch queues,
//! with PFC, ECN and congestion control, one discrete event per packet per hop.
//!
//! *What moves.* A flow is one queue pair (QP) from its path's first node to its last, on a route
//! of directed links chosen by the caller (the schedule player routes with the fabric's seeded
//! ECMP hash, one hash per QP) and shared, never copied: a packet names its flow and its hop.
//! A message of S bytes is cut into packets of at most P payload bytes (`PACKET_PAYLOAD_SIZE`);
//! a packet of p payload bytes occupies p + h + g bytes of a link's time, h and g the transport's
//! header and gap bytes ([`crate::catalog::transport`], one definition). A link of rate C and
//! delay d forwards a packet of w wire bytes in w / C, and it reaches the far node d later; each
//! switch stores and forwards whole packets. So a lone flow of n packets over H equal hops
//! finishes at the receiver after
//!   T = H·d + (H − 1)·w_1 / C + Σ_k w_k / C
//! (the first packet's store-and-forward on the H − 1 later hops, then the line rate), and its
//! goodput tends to C · P / (P + h + g).
//!
//! *Hosts* (`host.rs`): each link's sending port serves, in order, control packets (ACK, NACK,
//! CNP: never paused), forwarded data packets, then its QPs in round robin; a QP is eligible
//! when it has bytes to send, its window (if any) has room, and its pacing time has come: after a
//! packet of w wire bytes its next may leave w / R later, R its current rate (the line rate
//! without congestion control, DCQCN's R_C with it). The receiver acknowledges in-order packets
//! (every `ack_interval`-th and the last) with the next byte it expects; a packet beyond that
//! (one before it was dropped) draws one NACK, and the sender goes back to it (go-back-N); with
//! PFC off a timeout without progress (`rto_ns`) does the same for a lost tail. A flow is
//! *delivered* when its last byte reaches the receiver (what the next step of a collective waits
//! for) and *finished* when the ACK of its last byte reaches the sender (SimAI's FCT, and what
//! the next step waits for in SimAI's mode: [`PacketSim::set_complete_on_ack`]).
//!
//! *Switches* (`switch.rs`): one output queue per link on a shared buffer per switch; a data
//! packet that does not fit in the free buffer is dropped. ECN by RED on the egress queue as the
//! packet leaves it (on the bytes still queued behind it): marked with probability 0 below K_min bytes, p_max (q − K_min)/(K_max − K_min)
//! between, 1 above K_max. PFC (IEEE 802.1Qbb) per ingress port: when the bytes held in the switch
//! that came in through a link pass the threshold (static, or α × the free buffer), the switch
//! sends PAUSE to that link's sender, which takes effect one link delay later, after the packet
//! being sent (the bytes in flight meanwhile land in the headroom, which the buffer must hold);
//! below the threshold less a hysteresis it sends RESUME.
//!
//! *Congestion control* (`dcqcn.rs`, one file per algorithm): the notification point (the
//! receiver) sends a CNP for a CE-marked packet, at most one per `decrease_interval` per QP; the
//! reaction point (the sender) runs DCQCN's rate cuts, α and increase stages. HPCC (`hpcc.rs`:
//! switches stamp INT records as a packet leaves them), TIMELY (`timely.rs`: the RTT of a
//! timestamped packet) and DCTCP (`dctcp.rs`: the ECN mark echoed in the ACK) run on each ACK
//! (`cc.rs`: an enum per queue pair, and the telemetry slots their packets carry). The window
//! (`HAS_WIN`) is the path's bandwidth-delay product, scaled by the current rate with `VAR_WIN`.
//!
//! *Speed* (htsim's lesson): events are small plain values in one calendar queue (`calendar.rs`:
//! earliest first, ties in issue order, so equal inputs give equal runs); per link one
//! cache-aligned record of what forwarding reads (two cache lines) and two queues, per switch one
//! counter, per live QP one record and one row of a flat hop table (its route and the links back,
//! so a packet finds its next link in one cache line); nothing dense per switch, and QP slots are
//! reused once no packet of theirs is left in flight. An idle port sends an arriving packet at
//! once without queueing it. What is left is about one event per packet per hop each way (data,
//! its ACK) plus one when a port was busy: on a k = 32 fat-tree ~17 events per data packet, whose
//! cost is the cache misses of touching two ports, the hop row and the event's bucket.
//!
//! *Hooks for congestion control*: a sender's rate is `Qp::rate`, set from the algorithm's state
//! on a CNP (`sender_receive`), on its timers (`Event::Alpha`, `Event::Increase`) and per packet
//! sent (`send_from_qps`); the receiver's marks arrive in `receive` (`Packet::ce`).

mod calendar;
mod cc;
mod config;
mod dcqcn;
mod dctcp;
mod host;
mod hpcc;
pub mod simai_conf;
mod switch;
mod timely;

pub use config::{CcMode, DcqcnParams, DctcpParams, HpccParams, PacketConfig, PfcThreshold, Red, TimelyParams};

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use crate::due::Due;
use crate::error::{InputError, Result};
use crate::network::flow::Wait;
use crate::platform::{NodeKind, Platform};
use crate::random::Stream;
use calendar::Calendar;
use cc::{AckCc, Telemetry};
use dcqcn::Dcqcn;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data,
    Ack,
    Nack,
    Cnp,
}

/// One packet: data travels `route[hop]`, control packets the reverse route backwards.
#[derive(Debug, Clone, Copy)]
struct Packet {
    /// Data: its first byte; ACK / NACK: the next byte the receiver expects.
    seq: u64,
    flow: u32,
    payload: u32,
    wire: u32,
    hop: u16,
    kind: Kind,
    /// ECN congestion experienced (on an ACK: its data packet's, echoed).
    ce: bool,
    /// The packet's telemetry slot ([`cc::NO_TELEMETRY`]: none), taken over by its ACK.
    telemetry: u32,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// A packet has crossed `link` and is at its far node.
    Arrive {
        link: u32,
        packet: Packet,
    },
    /// `link`'s port has sent its packet.
    PortFree(u32),
    /// A paced QP on `link`'s port may send.
    Wake(u32),
    /// Flow `flow` has waited and starts sending.
    Start(u32),
    /// A flow of no bytes or no link is done (after its wait).
    Empty(u32),
    /// A PFC frame reaches `link`'s sender.
    Pfc {
        link: u32,
        pause: bool,
    },
    Rto {
        flow: u32,
        ver: u32,
    },
    Alpha {
        flow: u32,
        ver: u32,
    },
    Increase {
        flow: u32,
        ver: u32,
        inc: u32,
    },
}

/// The sending side of one directed link, and what its far switch holds from it. Only what the
/// forwarding path reads is here, the fields it reads together first (one link is two cache
/// lines): a host port's round robin of QPs is in `PacketSim::rr`, RED's profile in
/// `PacketSim::reds`.
#[repr(C, align(64))]
struct Port {
    /// The port is sending until then.
    free_at: f64,
    /// Bytes per ns.
    rate: f64,
    lat: f64,
    /// Wire bytes in `data`.
    queued: u64,
    /// Bytes the far switch holds that came in through this link.
    ingress: u64,
    src: u32,
    dst: u32,
    /// Index of RED's profile in `PacketSim::reds` (`NO_RED`: ECN off).
    red: u16,
    /// A `PortFree` event is pending (scheduled only when something waits for the port).
    free_pending: bool,
    /// Data paused by the far end's PFC.
    paused: bool,
    /// The far switch has paused this link.
    pausing: bool,
    /// QPs source on this port (its round robin in `PacketSim::rr` is not empty).
    has_qps: bool,
    ctrl: VecDeque<Packet>,
    data: VecDeque<Packet>,
    /// Time of the pending wake-up (∞: none).
    wake: f64,
}

/// `Port::red` of a link without ECN.
const NO_RED: u16 = u16::MAX;

/// One queue pair.
struct Qp {
    route: Rc<[u32]>,
    size: u64,
    batch: u32,
    ver: u32,
    start: f64,
    /// Rate ceiling (the line rate, or less for a capped reader).
    max_rate: f64,
    rate: f64,
    snd_nxt: u64,
    snd_una: u64,
    /// Highest byte ever sent (what is below it and sent again is a retransmission).
    sent_max: u64,
    next_send: f64,
    window: u64,
    last_progress: f64,
    rto_armed: bool,
    listed: bool,
    rcv_nxt: u64,
    nack_for: u64,
    unacked: u32,
    last_cnp: f64,
    delivered: bool,
    finished: bool,
    /// Packets of this QP in flight or queued: the slot is reused only at 0.
    live: u32,
    dcqcn: Option<Dcqcn>,
    alpha_on: bool,
    inc_ver: u32,
    /// HPCC, TIMELY or DCTCP.
    ack_cc: AckCc,
}

/// A batch's transfers: (route, bytes, rate ceiling).
type BatchFlows = Rc<[(Rc<[u32]>, u64, f64)]>;

struct Batch {
    tag: u64,
    flows: BatchFlows,
    runs_left: u32,
    undelivered: u32,
    wait: Wait,
}

/// Counts over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// Data packets put on a host's link (retransmissions included).
    pub data_packets: u64,
    /// Data packets sent again (go-back-N).
    pub retransmitted: u64,
    pub drops: u64,
    /// PAUSE frames sent.
    pub pauses: u64,
    pub ecn_marks: u64,
    pub cnps: u64,
    pub timeouts: u64,
    pub nacks: u64,
    pub events: u64,
}

/// One finished QP (SimAI's FCT line): nodes, payload bytes, when it started sending, and how
/// long until the ACK of its last byte came back, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowRecord {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub start_ns: f64,
    pub fct_ns: f64,
}

/// Packet-level simulation over a platform's directed links.
pub struct PacketSim {
    cfg: PacketConfig,
    now: f64,
    heap: Calendar<Event>,
    seq: u64,
    ports: Vec<Port>,
    /// Each link's QPs (sourcing on its port) in round-robin order.
    rr: Vec<VecDeque<u32>>,
    /// RED's profiles, one per link rate in use.
    reds: Vec<Red>,
    /// The link back along each link (ACKs take it).
    rev: Vec<u32>,
    /// Bytes held per node (switches).
    held: Vec<u64>,
    qps: Vec<Qp>,
    /// Each QP slot's hops, `stride` entries from `slot × stride`: the route's length n, its n
    /// links, then the n links its control packets take back (the receiver's first): what a
    /// packet at a hop reads to go on, in one cache line, without the QP's record.
    hops: Vec<u32>,
    stride: usize,
    free_qps: Vec<u32>,
    batches: Vec<Batch>,
    free_batches: Vec<u32>,
    carried: Vec<f64>,
    rng: Stream,
    stats: PacketStats,
    records: Vec<FlowRecord>,
    keep_records: bool,
    /// A flow counts as done when the ACK of its last byte is back (SimAI's FCT), not when
    /// its last byte arrives.
    complete_on_ack: bool,
    finished: Vec<(u64, f64)>,
    /// Telemetry slots of packets in flight, and the free ones.
    telemetry: Vec<Telemetry>,
    free_telemetry: Vec<u32>,
    /// Under HPCC: whether each link leaves a network switch, which stamps INT (`cc.rs`).
    int_port: Vec<bool>,
}

impl PacketSim {
    /// A packet simulation on `topo`'s links. Every link needs its reverse (acknowledgements
    /// return on it), and memory and CXL devices are not modelled: both are one-line errors.
    pub fn new(topo: &Platform, cfg: PacketConfig) -> Result<PacketSim> {
        for (node, kind) in topo.kinds.iter().enumerate() {
            if matches!(kind, NodeKind::Memory | NodeKind::CxlSwitch) {
                return Err(InputError::new(
                    "topology",
                    format!(
                        "node {} is a {}, which the packet backend does not model (use --backend flow)",
                        topo.node_name(node as u32),
                        kind.name()
                    ),
                ));
            }
        }
        if cfg.payload_bytes == 0 {
            return Err(InputError::field("packet config", "PACKET_PAYLOAD_SIZE", "must be at least 1 byte"));
        }
        let index: HashMap<(u32, u32), u32> =
            topo.links.iter().enumerate().map(|(i, l)| ((l.src, l.dst), i as u32)).collect();
        let mut rev = Vec::with_capacity(topo.links.len());
        let mut ports = Vec::with_capacity(topo.links.len());
        let mut reds: Vec<Red> = Vec::new();
        for l in &topo.links {
            let Some(&back) = index.get(&(l.dst, l.src)) else {
                return Err(InputError::new(
                    "topology",
                    format!(
                        "link {} -> {} has no link back, which the packet backend needs for acknowledgements",
                        topo.node_name(l.src),
                        topo.node_name(l.dst)
                    ),
                ));
            };
            if !(l.bandwidth > 0.0 && l.bandwidth.is_finite()) {
                return Err(InputError::new(
                    "topology",
                    format!(
                        "link {} -> {} has bandwidth {}; the packet backend needs a positive finite rate",
                        topo.node_name(l.src),
                        topo.node_name(l.dst),
                        l.bandwidth
                    ),
                ));
            }
            rev.push(back);
            let red = match cfg.ecn.then(|| cfg.red_for(l.bandwidth)).flatten() {
                None => NO_RED,
                Some(r) => match reds.iter().position(|x| *x == r) {
                    Some(i) => i as u16,
                    None => {
                        reds.push(r);
                        (reds.len() - 1) as u16
                    }
                },
            };
            ports.push(Port {
                free_at: f64::NEG_INFINITY,
                rate: l.bandwidth,
                lat: l.latency_ns,
                queued: 0,
                ingress: 0,
                src: l.src,
                dst: l.dst,
                red,
                free_pending: false,
                paused: false,
                pausing: false,
                has_qps: false,
                ctrl: VecDeque::new(),
                data: VecDeque::new(),
                wake: f64::INFINITY,
            });
        }
        let rng = Stream::from_state(cfg.seed ^ 0x9E37_79B9_7F4A_7C15);
        let int_port = cc::int_ports(topo, cfg.cc);
        Ok(PacketSim {
            cfg,
            now: 0.0,
            heap: Calendar::new(),
            seq: 0,
            carried: vec![0.0; ports.len()],
            rr: (0..ports.len()).map(|_| VecDeque::new()).collect(),
            reds,
            ports,
            rev,
            held: vec![0; topo.node_count() as usize],
            qps: Vec::new(),
            hops: Vec::new(),
            stride: 16,
            free_qps: Vec::new(),
            batches: Vec::new(),
            free_batches: Vec::new(),
            rng,
            stats: PacketStats::default(),
            records: Vec::new(),
            keep_records: true,
            complete_on_ack: false,
            finished: Vec::new(),
            telemetry: Vec::new(),
            free_telemetry: Vec::new(),
            int_port,
        })
    }

    pub fn config(&self) -> &PacketConfig {
        &self.cfg
    }

    pub fn stats(&self) -> PacketStats {
        self.stats
    }

    /// Finished QPs so far, in finishing order.
    pub fn records(&self) -> &[FlowRecord] {
        &self.records
    }

    /// Keep a [`FlowRecord`] per finished QP (default) or not (a long run's memory).
    pub fn set_keep_records(&mut self, on: bool) {
        self.keep_records = on;
    }

    /// Count a batch's flow done when the ACK of its last byte reaches the sender (SimAI's
    /// completion: its next step waits for the sender's queue pair to finish) instead of when its
    /// last byte reaches the receiver (the default).
    pub fn set_complete_on_ack(&mut self, on: bool) {
        self.complete_on_ack = on;
    }

    /// Wire bytes carried so far by each directed link.
    pub fn carried_bytes(&self) -> &[f64] {
        &self.carried
    }

    /// Wire bytes queued now at the sending end of directed link `link`.
    pub fn queued_bytes(&self, link: u32) -> u64 {
        self.ports[link as usize].queued
    }

    /// The time of the next event, None when nothing is pending.
    pub fn next_time(&self) -> Option<f64> {
        if !self.finished.is_empty() {
            return Some(self.now);
        }
        self.heap.peek().map(|e| e.time)
    }

    /// A batch of flows (route, bytes, rate ceiling in bytes/ns) that runs `repeat` times back to
    /// back, each run's flows waiting `wait` and then sending (the route's propagation is paid by
    /// the packets: a fixed wait, which already holds it, is shortened by the route's latency);
    /// `tag` is reported when the last run is delivered.
    pub fn add_batch(&mut self, now: f64, flows: Vec<(Rc<[u32]>, f64, f64)>, repeat: u32, tag: u64, wait: Wait) {
        let flows: BatchFlows = flows.into_iter().map(|(p, b, c)| (p, b.max(0.0).ceil() as u64, c)).collect();
        let b = match self.free_batches.pop() {
            Some(b) => b,
            None => {
                self.batches.push(Batch { tag: 0, flows: Rc::from([]), runs_left: 0, undelivered: 0, wait });
                (self.batches.len() - 1) as u32
            }
        };
        self.batches[b as usize] = Batch { tag, flows, runs_left: repeat, undelivered: 0, wait };
        self.now = self.now.max(now);
        if repeat == 0 {
            self.finished.push((tag, now));
            self.free_batches.push(b);
            return;
        }
        self.launch_run(b, now);
    }

    /// Start one run of batch `b` at `now`.
    fn launch_run(&mut self, b: u32, now: f64) {
        let flows = self.batches[b as usize].flows.clone();
        let wait = self.batches[b as usize].wait;
        self.batches[b as usize].undelivered = flows.len() as u32;
        if flows.is_empty() {
            self.run_delivered(b, now);
            return;
        }
        for (route, bytes, ceil) in flows.iter() {
            let lat: f64 = route.iter().map(|&l| self.ports[l as usize].lat).sum();
            let f = self.new_qp(route.clone(), *bytes, *ceil, b, now);
            if *bytes == 0 || route.is_empty() {
                let at = match wait {
                    Wait::Path { extra_ns } => now + extra_ns + lat,
                    Wait::Fixed(ns) => now + ns,
                };
                self.push(at, Event::Empty(f));
            } else {
                let at = match wait {
                    Wait::Path { extra_ns } => now + extra_ns,
                    Wait::Fixed(ns) => now + (ns - lat).max(0.0),
                };
                self.push(at, Event::Start(f));
            }
        }
    }

    fn new_qp(&mut self, route: Rc<[u32]>, size: u64, ceil: f64, batch: u32, now: f64) -> u32 {
        let line = route.first().map_or(f64::INFINITY, |&l| self.ports[l as usize].rate);
        let max_rate = line.min(ceil);
        // The path's base round trip: each hop's delay both ways, a full packet stored and
        // forwarded out, an ACK back.
        let extra = cc::header_bytes(self.cfg.cc);
        let w = f64::from(self.cfg.transport.wire_bytes(self.cfg.payload_bytes) + extra);
        let a = f64::from(self.cfg.transport.wire_bytes(0) + extra);
        let rtt: f64 =
            route.iter().map(|&l| 2.0 * self.ports[l as usize].lat + (w + a) / self.ports[l as usize].rate).sum();
        let window = if self.cfg.window && !route.is_empty() {
            // The path's bandwidth-delay product: line rate × its base round trip.
            ((line * rtt).ceil() as u64).max(u64::from(self.cfg.payload_bytes))
        } else {
            u64::MAX
        };
        let dcqcn = (self.cfg.cc == CcMode::Dcqcn).then(|| Dcqcn::new(max_rate));
        let ack_cc = AckCc::new(self.cfg.cc, max_rate, rtt);
        let qp = Qp {
            route,
            size,
            batch,
            ver: 0,
            start: now,
            max_rate,
            rate: max_rate,
            snd_nxt: 0,
            snd_una: 0,
            sent_max: 0,
            next_send: 0.0,
            window,
            last_progress: now,
            rto_armed: false,
            listed: false,
            rcv_nxt: 0,
            nack_for: u64::MAX,
            unacked: 0,
            last_cnp: f64::NEG_INFINITY,
            delivered: false,
            finished: false,
            live: 0,
            dcqcn,
            alpha_on: false,
            inc_ver: 0,
            ack_cc,
        };
        let n = qp.route.len();
        let f = match self.free_qps.pop() {
            Some(f) => {
                let ver = self.qps[f as usize].ver.wrapping_add(1);
                self.qps[f as usize] = Qp { ver, ..qp };
                f
            }
            None => {
                self.qps.push(qp);
                (self.qps.len() - 1) as u32
            }
        };
        if 1 + 2 * n > self.stride {
            // A longer route than any so far: lay every slot out again, wider.
            let wide = (1 + 2 * n).next_power_of_two();
            let mut hops = vec![0; self.qps.len() * wide];
            for (slot, old) in self.hops.chunks(self.stride).enumerate() {
                hops[slot * wide..slot * wide + self.stride].copy_from_slice(old);
            }
            self.hops = hops;
            self.stride = wide;
        }
        let at = f as usize * self.stride;
        if self.hops.len() < at + self.stride {
            self.hops.resize(at + self.stride, 0);
        }
        let route = &self.qps[f as usize].route;
        self.hops[at] = n as u32;
        for (h, &l) in route.iter().enumerate() {
            self.hops[at + 1 + h] = l;
            self.hops[at + 1 + n + (n - 1 - h)] = self.rev[l as usize];
        }
        f
    }

    /// Flow `f` has all its bytes at the receiver.
    fn delivered(&mut self, f: u32) {
        let q = &mut self.qps[f as usize];
        if q.delivered {
            return;
        }
        q.delivered = true;
        if !self.complete_on_ack {
            self.flow_done(f);
        }
    }

    /// Flow `f` is done as its batch counts it (delivered, or acknowledged).
    pub(super) fn flow_done(&mut self, f: u32) {
        let b = self.qps[f as usize].batch;
        let bt = &mut self.batches[b as usize];
        bt.undelivered -= 1;
        if bt.undelivered == 0 {
            self.run_delivered(b, self.now);
        }
    }

    fn run_delivered(&mut self, b: u32, now: f64) {
        let bt = &mut self.batches[b as usize];
        bt.runs_left -= 1;
        if bt.runs_left == 0 {
            self.finished.push((bt.tag, now));
            bt.flows = Rc::from([]);
            self.free_batches.push(b);
        } else {
            self.launch_run(b, now);
        }
    }

    /// Reuse QP `f`'s slot once it is finished and nothing of it is in flight.
    fn maybe_free(&mut self, f: u32) {
        let q = &mut self.qps[f as usize];
        if q.finished && q.delivered && q.live == 0 && !q.listed {
            q.ver = q.ver.wrapping_add(1);
            q.route = Rc::from([]);
            q.finished = false;
            q.delivered = false;
            self.free_qps.push(f);
        }
    }

    fn push(&mut self, time: f64, item: Event) {
        self.seq += 1;
        self.heap.push(Due { time, seq: self.seq, item });
    }

    /// A uniform draw in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.rng.uniform()
    }

    /// Process every event at the earliest pending time; append the tags of batches whose last
    /// run was delivered then. Returns that time, None when nothing is pending.
    pub fn step(&mut self, finished: &mut Vec<(u64, f64)>) -> Option<f64> {
        if !self.finished.is_empty() {
            // Batches done when they were added (no runs, no flows): report them now.
            finished.append(&mut self.finished);
            return Some(self.now);
        }
        let t = self.heap.peek()?.time;
        self.now = t;
        while self.heap.peek().is_some_and(|e| e.time <= t) {
            let e = self.heap.pop().expect("peeked").item;
            self.stats.events += 1;
            self.handle(e);
        }
        finished.append(&mut self.finished);
        Some(t)
    }

    /// Run until nothing is pending; the tags of finished batches with their times.
    pub fn run_to_end(&mut self) -> Vec<(u64, f64)> {
        let mut out = Vec::new();
        while self.step(&mut out).is_some() {}
        out
    }

    fn handle(&mut self, e: Event) {
        match e {
            Event::Arrive { link, packet } => self.arrive(link, packet),
            Event::PortFree(l) => {
                self.ports[l as usize].free_pending = false;
                self.try_send(l);
            }
            Event::Wake(l) => {
                if self.ports[l as usize].wake <= self.now {
                    self.ports[l as usize].wake = f64::INFINITY;
                    self.try_send(l);
                }
            }
            Event::Start(f) => self.start_qp(f),
            Event::Empty(f) => {
                let q = &mut self.qps[f as usize];
                q.finished = true;
                q.delivered = true;
                self.flow_done(f);
                self.maybe_free(f);
            }
            Event::Pfc { link, pause } => {
                self.ports[link as usize].paused = pause;
                if !pause {
                    self.try_send(link);
                }
            }
            Event::Rto { flow, ver } => self.on_rto(flow, ver),
            Event::Alpha { flow, ver } => self.on_alpha(flow, ver),
            Event::Increase { flow, ver, inc } => self.on_increase(flow, ver, inc),
        }
    }

    /// Send the next packet on link `l` if its port is idle: control first, then (unless paused)
    /// forwarded data, then the port's own QPs.
    fn try_send(&mut self, l: u32) {
        let port = &mut self.ports[l as usize];
        if self.now < port.free_at {
            // Busy: come back when it is free.
            if !port.free_pending {
                port.free_pending = true;
                let at = port.free_at;
                self.push(at, Event::PortFree(l));
            }
            return;
        }
        if let Some(p) = port.ctrl.pop_front() {
            self.transmit(l, p);
            return;
        }
        if port.paused {
            return;
        }
        if let Some(mut p) = port.data.pop_front() {
            port.queued -= u64::from(p.wire);
            self.dequeued(l, &mut p);
            self.transmit(l, p);
            return;
        }
        if port.has_qps {
            self.send_from_qps(l);
        }
    }

    /// Control packet `p` joins link `l`'s port: it goes out at once when the port is idle
    /// with no control packet ahead of it (what `try_send` would pick), else it queues.
    fn send_control(&mut self, l: u32, p: Packet) {
        let port = &mut self.ports[l as usize];
        if self.now >= port.free_at && port.ctrl.is_empty() {
            self.transmit(l, p);
        } else {
            port.ctrl.push_back(p);
            self.try_send(l);
        }
    }

    fn transmit(&mut self, l: u32, p: Packet) {
        let port = &mut self.ports[l as usize];
        let ser = f64::from(p.wire) / port.rate;
        let lat = port.lat;
        let now = self.now;
        port.free_at = now + ser;
        // A port with more to send comes back when it is free; an idle one is woken by what
        // next wants it (a packet to forward, a QP, an ACK), so most forwarding costs no event.
        let more = !port.ctrl.is_empty() || (!port.paused && !port.data.is_empty()) || port.has_qps;
        if more && !port.free_pending {
            port.free_pending = true;
            self.push(now + ser, Event::PortFree(l));
        }
        self.carried[l as usize] += f64::from(p.wire);
        self.push(now + ser + lat, Event::Arrive { link: l, packet: p });
    }

    fn arrive(&mut self, l: u32, mut p: Packet) {
        let at = p.flow as usize * self.stride;
        let n = self.hops[at] as usize;
        let h = p.hop as usize;
        if p.kind == Kind::Data {
            if h + 1 == n {
                self.receive(p);
            } else {
                let next = self.hops[at + 2 + h];
                p.hop += 1;
                self.forward(l, next, p);
            }
        } else if h + 1 == n {
            self.sender_receive(p);
        } else {
            let next = self.hops[at + 2 + n + h];
            p.hop += 1;
            self.send_control(next, p);
        }
    }
}

#[cfg(test)]
mod cc_tests;
#[cfg(test)]
mod ns3_tests;
#[cfg(test)]
mod tests;
