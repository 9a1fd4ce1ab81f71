//! Hosts: a queue pair's sender (packets, pacing, window, go-back-N, DCQCN's timers) and its
//! receiver (in-order delivery, ACK / NACK, CNP). See the module doc of `packet` for the rules.

use super::cc::{header_bytes, NO_TELEMETRY};
use super::{CcMode, Event, FlowRecord, Kind, Packet, PacketSim};

impl PacketSim {
    /// QP `f` has waited: it joins its first link's port.
    pub(super) fn start_qp(&mut self, f: u32) {
        let now = self.now;
        let q = &mut self.qps[f as usize];
        q.start = now;
        q.next_send = now;
        q.last_progress = now;
        self.list(f);
    }

    /// Put QP `f` in its port's round robin (once) and try the port.
    fn list(&mut self, f: u32) {
        let l = self.hops[f as usize * self.stride + 1];
        let q = &mut self.qps[f as usize];
        if !q.listed {
            q.listed = true;
            self.rr[l as usize].push_back(f);
            self.ports[l as usize].has_qps = true;
        }
        self.try_send(l);
    }

    /// Port `l` is idle with QPs: send one packet of the next eligible one in round robin, or
    /// wake up when the earliest paced one may send.
    pub(super) fn send_from_qps(&mut self, l: u32) {
        let now = self.now;
        let mut earliest = f64::INFINITY;
        let rounds = self.rr[l as usize].len();
        for _ in 0..rounds {
            let f = self.rr[l as usize].pop_front().expect("counted");
            let q = &mut self.qps[f as usize];
            if q.finished || q.snd_nxt >= q.size {
                q.listed = false;
                self.maybe_free(f);
                continue;
            }
            let window = if self.cfg.var_window && q.window != u64::MAX && q.dcqcn.is_none() {
                // VAR_WIN: the window shrinks with the rate (at least a byte); not under DCQCN
                // yet (config.rs says why).
                ((q.window as f64 * q.rate / q.max_rate) as u64).max(1)
            } else {
                q.window
            };
            if q.snd_nxt - q.snd_una >= window {
                // Window full: back in line; an ACK tries the port again.
                self.rr[l as usize].push_back(f);
                continue;
            }
            if q.next_send > now {
                earliest = earliest.min(q.next_send);
                self.rr[l as usize].push_back(f);
                continue;
            }
            let payload = (q.size - q.snd_nxt).min(u64::from(self.cfg.payload_bytes)) as u32;
            let wire = self.cfg.transport.wire_bytes(payload) + header_bytes(self.cfg.cc);
            let p = Packet {
                seq: q.snd_nxt,
                flow: f,
                payload,
                wire,
                hop: 0,
                kind: Kind::Data,
                ce: false,
                telemetry: NO_TELEMETRY,
            };
            if q.snd_nxt < q.sent_max {
                self.stats.retransmitted += 1;
            }
            if q.snd_una == q.snd_nxt {
                q.last_progress = now;
            }
            q.snd_nxt += u64::from(payload);
            q.sent_max = q.sent_max.max(q.snd_nxt);
            q.next_send = now + f64::from(wire) / q.rate;
            q.live += 1;
            let arm = !self.cfg.pfc && !q.rto_armed;
            if arm {
                q.rto_armed = true;
            }
            let ver = q.ver;
            if let Some(d) = q.dcqcn.as_mut() {
                d.on_sent(&self.cfg.dcqcn, u64::from(wire), q.max_rate);
                q.rate = d.rc.min(q.max_rate);
            }
            if q.snd_nxt < q.size {
                self.rr[l as usize].push_back(f);
            } else {
                q.listed = false;
            }
            self.stats.data_packets += 1;
            if arm {
                self.push(now + self.cfg.rto_ns, Event::Rto { flow: f, ver });
            }
            let p = Packet { telemetry: self.telemetry_for_send(), ..p };
            self.ports[l as usize].has_qps = !self.rr[l as usize].is_empty();
            self.transmit(l, p);
            return;
        }
        let port = &mut self.ports[l as usize];
        port.has_qps = !self.rr[l as usize].is_empty();
        if earliest < port.wake {
            port.wake = earliest;
            self.push(earliest, Event::Wake(l));
        }
    }

    /// A control packet of `kind` from QP `f`'s receiver back to its sender; an ACK or NACK
    /// echoes its data packet's ECN mark and telemetry (`echo`: (ce, slot)).
    fn send_ctrl(&mut self, f: u32, kind: Kind, seq: u64, echo: (bool, u32)) {
        self.qps[f as usize].live += 1;
        let extra = if kind == Kind::Cnp { 0 } else { header_bytes(self.cfg.cc) };
        let wire = self.cfg.transport.wire_bytes(0) + extra;
        let (ce, telemetry) = echo;
        let p = Packet { seq, flow: f, payload: 0, wire, hop: 0, kind, ce, telemetry };
        // The first link back: after the route's length and its n links in the hop table.
        let at = f as usize * self.stride;
        let l = self.hops[at + 1 + self.hops[at] as usize];
        self.send_control(l, p);
    }

    /// A data packet reaches its QP's receiver.
    pub(super) fn receive(&mut self, p: Packet) {
        let f = p.flow;
        let now = self.now;
        let ack_interval = self.cfg.ack_interval.max(1);
        let dcqcn = self.cfg.cc == CcMode::Dcqcn;
        let gap = self.cfg.dcqcn.decrease_interval_ns;
        let q = &mut self.qps[f as usize];
        q.live -= 1;
        let mut cnp = false;
        if p.ce && dcqcn && now - q.last_cnp >= gap {
            q.last_cnp = now;
            cnp = true;
        }
        if p.seq == q.rcv_nxt {
            q.rcv_nxt += u64::from(p.payload);
            q.unacked += 1;
            let all = q.rcv_nxt >= q.size;
            let ack = (q.unacked >= ack_interval || all).then_some(q.rcv_nxt);
            if ack.is_some() {
                q.unacked = 0;
            }
            if all {
                self.delivered(f);
            }
            if let Some(seq) = ack {
                self.send_ctrl(f, Kind::Ack, seq, (p.ce, p.telemetry));
            } else {
                self.free_telemetry_slot(p.telemetry);
            }
        } else if p.seq > q.rcv_nxt && q.nack_for != q.rcv_nxt {
            q.nack_for = q.rcv_nxt;
            let seq = q.rcv_nxt;
            self.stats.nacks += 1;
            self.send_ctrl(f, Kind::Nack, seq, (p.ce, p.telemetry));
        } else {
            self.free_telemetry_slot(p.telemetry);
        }
        if cnp {
            self.stats.cnps += 1;
            self.send_ctrl(f, Kind::Cnp, 0, (false, NO_TELEMETRY));
        }
        self.maybe_free(f);
    }

    /// A control packet reaches its QP's sender.
    pub(super) fn sender_receive(&mut self, p: Packet) {
        let f = p.flow;
        let now = self.now;
        let q = &mut self.qps[f as usize];
        q.live -= 1;
        if q.finished {
            self.free_telemetry_slot(p.telemetry);
            self.maybe_free(f);
            return;
        }
        match p.kind {
            Kind::Ack | Kind::Nack => {
                if p.seq > q.snd_una {
                    q.snd_una = p.seq;
                    q.last_progress = now;
                }
                if q.snd_una >= q.size {
                    self.free_telemetry_slot(p.telemetry);
                    let q = &mut self.qps[f as usize];
                    q.finished = true;
                    let src = self.ports[q.route[0] as usize].src;
                    let dst = self.ports[*q.route.last().expect("routed") as usize].dst;
                    if self.keep_records {
                        self.records.push(FlowRecord {
                            src,
                            dst,
                            bytes: q.size,
                            start_ns: q.start,
                            fct_ns: now - q.start,
                        });
                    }
                    if self.complete_on_ack {
                        self.flow_done(f);
                    }
                    self.maybe_free(f);
                    return;
                }
                if p.kind == Kind::Nack && p.seq < q.snd_nxt {
                    q.snd_nxt = p.seq;
                }
                self.ack_cc(f, &p);
                self.list(f);
            }
            Kind::Cnp => {
                let line = q.max_rate;
                let Some(d) = q.dcqcn.as_mut() else { return };
                if d.on_cnp(&self.cfg.dcqcn, now) {
                    q.rate = d.rc.min(line);
                    q.inc_ver = q.inc_ver.wrapping_add(1);
                    let (ver, inc) = (q.ver, q.inc_ver);
                    let alpha = !std::mem::replace(&mut q.alpha_on, true);
                    let p = self.cfg.dcqcn;
                    self.push(now + p.timer_ns, Event::Increase { flow: f, ver, inc });
                    if alpha {
                        self.push(now + p.alpha_interval_ns, Event::Alpha { flow: f, ver });
                    }
                }
            }
            Kind::Data => unreachable!("data packets go to receivers"),
        }
    }

    /// Go-back-N's timer for QP `f`.
    pub(super) fn on_rto(&mut self, f: u32, ver: u32) {
        let now = self.now;
        let rto = self.cfg.rto_ns;
        let q = &mut self.qps[f as usize];
        if q.ver != ver || q.finished {
            return;
        }
        q.rto_armed = false;
        if q.snd_una >= q.snd_nxt {
            return;
        }
        if now - q.last_progress >= rto * (1.0 - 1e-12) {
            q.snd_nxt = q.snd_una;
            q.last_progress = now;
            q.rto_armed = true;
            self.stats.timeouts += 1;
            self.push(now + rto, Event::Rto { flow: f, ver });
            self.list(f);
        } else {
            q.rto_armed = true;
            let at = q.last_progress + rto;
            self.push(at, Event::Rto { flow: f, ver });
        }
    }

    pub(super) fn on_alpha(&mut self, f: u32, ver: u32) {
        let q = &mut self.qps[f as usize];
        if q.ver != ver || q.finished {
            return;
        }
        let Some(d) = q.dcqcn.as_mut() else { return };
        if d.on_alpha_timer(&self.cfg.dcqcn) {
            let at = self.now + self.cfg.dcqcn.alpha_interval_ns;
            self.push(at, Event::Alpha { flow: f, ver });
        } else {
            q.alpha_on = false;
        }
    }

    pub(super) fn on_increase(&mut self, f: u32, ver: u32, inc: u32) {
        let q = &mut self.qps[f as usize];
        if q.ver != ver || q.inc_ver != inc || q.finished {
            return;
        }
        let line = q.max_rate;
        let Some(d) = q.dcqcn.as_mut() else { return };
        d.on_timer(&self.cfg.dcqcn, line);
        q.rate = d.rc.min(line);
        if q.rate < line {
            let at = self.now + self.cfg.dcqcn.timer_ns;
            self.push(at, Event::Increase { flow: f, ver, inc });
        }
    }
}
