//! The congestion controls driven by ACKs (HPCC, TIMELY, DCTCP: one file each), dispatched by an
//! enum per queue pair, and what their data packets carry for them: a telemetry slot holding the
//! packet's send time (TIMELY's RTT) and the INT records switches stamp (HPCC), echoed by the
//! packet's ACK. DCQCN (CNPs and timers) is `dcqcn.rs`, driven from `host.rs` directly.
//!
//! Slots live in one slab on the simulation and are reused: a data packet takes one when it
//! leaves its sender (only under HPCC and TIMELY), its ACK or NACK takes it over, and it is freed
//! when the sender has read it, or when the packet or its echo is dropped or not acknowledged.
//!
//! INT and timestamps are extra header bytes on the wire, as SimAI's ns-3 sends them (its
//! `IntHeader`: HPCC 5 records of 8 bytes and a 2-byte count, TIMELY an 8-byte timestamp), on
//! data packets and on the ACKs that echo them.

use super::config::CcMode;
use super::dctcp::Dctcp;
use super::hpcc::{Hpcc, Int, IntHop, MAX_HOPS};
use super::timely::Timely;
use super::{Packet, PacketSim};
use crate::platform::{NodeKind, Platform};

/// No telemetry slot.
pub(super) const NO_TELEMETRY: u32 = u32::MAX;

/// What a data packet gathers for its sender's congestion control.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Telemetry {
    pub sent_ns: f64,
    pub int: Int,
}

/// A queue pair's ACK-driven congestion control state (HPCC's is large: boxed).
#[derive(Debug, Clone)]
pub(super) enum AckCc {
    None,
    Hpcc(Box<Hpcc>),
    Timely(Timely),
    Dctcp(Dctcp),
}

impl AckCc {
    /// The state for a queue pair of `mode` starting at `line` bytes/ns on a path of base round
    /// trip `base_rtt` ns.
    pub fn new(mode: CcMode, line: f64, base_rtt: f64) -> AckCc {
        match mode {
            CcMode::Hpcc => AckCc::Hpcc(Box::new(Hpcc::new(line, base_rtt))),
            CcMode::Timely => AckCc::Timely(Timely::new(line)),
            CcMode::Dctcp => AckCc::Dctcp(Dctcp::new(line)),
            CcMode::None | CcMode::Dcqcn => AckCc::None,
        }
    }
}

/// Extra header bytes of data packets and their ACKs under `mode` (SimAI's `IntHeader` sizes).
pub(super) fn header_bytes(mode: CcMode) -> u32 {
    match mode {
        CcMode::Hpcc => (MAX_HOPS * 8 + 2) as u32,
        CcMode::Timely => 8,
        _ => 0,
    }
}

/// Under HPCC, whether each of `topo`'s links leaves a network switch ([`NodeKind::Switch`]):
/// those stamp INT, as the paper's switches do; NVSwitches and hosts do not (nor do SimAI's ns-3
/// NVSwitch nodes). Empty for the other modes.
pub(super) fn int_ports(topo: &Platform, mode: CcMode) -> Vec<bool> {
    if mode != CcMode::Hpcc {
        return Vec::new();
    }
    topo.links.iter().map(|l| topo.kinds[l.src as usize] == NodeKind::Switch).collect()
}

impl PacketSim {
    /// A telemetry slot for a data packet leaving its sender now, or [`NO_TELEMETRY`] when the
    /// congestion control reads none.
    pub(super) fn telemetry_for_send(&mut self) -> u32 {
        if !matches!(self.cfg.cc, CcMode::Hpcc | CcMode::Timely) {
            return NO_TELEMETRY;
        }
        let t = Telemetry { sent_ns: self.now, int: Int::default() };
        match self.free_telemetry.pop() {
            Some(s) => {
                self.telemetry[s as usize] = t;
                s
            }
            None => {
                self.telemetry.push(t);
                (self.telemetry.len() - 1) as u32
            }
        }
    }

    /// Release telemetry slot `s` (a dropped packet, an ACK not sent, an ACK read).
    pub(super) fn free_telemetry_slot(&mut self, s: u32) {
        if s != NO_TELEMETRY {
            self.free_telemetry.push(s);
        }
    }

    /// Data packet `p` leaves a switch on link `l`: under HPCC, a network switch stamps the
    /// port's INT record (the bytes it has sent before this packet, its queue behind it, its rate).
    pub(super) fn stamp_int(&mut self, l: u32, p: &Packet) {
        if p.telemetry == NO_TELEMETRY || !self.int_port.get(l as usize).copied().unwrap_or(false) {
            return;
        }
        let port = &self.ports[l as usize];
        let hop = IntHop { time_ns: self.now, tx_bytes: self.carried[l as usize], qlen: port.queued, rate: port.rate };
        self.telemetry[p.telemetry as usize].int.push(hop);
    }

    /// An ACK or NACK `p` of queue pair `f` has reached the sender (after its `snd_una` and any
    /// go-back): run the ACK-driven congestion control and release the packet's slot.
    pub(super) fn ack_cc(&mut self, f: u32, p: &Packet) {
        let s = p.telemetry;
        let now = self.now;
        let payload = u64::from(self.cfg.payload_bytes);
        let q = &mut self.qps[f as usize];
        let line = q.max_rate;
        let rate = match &mut q.ack_cc {
            AckCc::None => None,
            AckCc::Hpcc(h) if s != NO_TELEMETRY => {
                h.on_ack(&self.cfg.hpcc, p.seq, q.snd_nxt, &self.telemetry[s as usize].int, line)
            }
            AckCc::Timely(t) if s != NO_TELEMETRY => {
                let rtt = now - self.telemetry[s as usize].sent_ns;
                t.on_ack(&self.cfg.timely, p.seq, q.snd_nxt, rtt, line)
            }
            AckCc::Dctcp(d) => d.on_ack(&self.cfg.dctcp, p.seq, q.snd_nxt, p.ce, payload, line),
            _ => None,
        };
        if let Some(r) = rate {
            // The next packet's time was set at the old rate (after a packet of about a full
            // payload): move it to the new one.
            let r = r.min(line);
            let w = f64::from(self.cfg.transport.wire_bytes(self.cfg.payload_bytes) + header_bytes(self.cfg.cc));
            q.next_send += w / r - w / q.rate;
            q.rate = r;
        }
        self.free_telemetry_slot(s);
    }
}
