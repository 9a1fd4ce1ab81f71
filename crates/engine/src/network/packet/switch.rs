//! Switches: output queues on a shared buffer, drops when it is full, ECN by RED on the egress
//! queue as packets leave it, PFC pause / resume per ingress port (IEEE 802.1Qbb). See the module doc of `packet`.

use super::{Event, Packet, PacketSim, PfcThreshold, NO_RED};

impl PacketSim {
    /// Data packet `p` came in on link `from` and leaves on link `to`.
    pub(super) fn forward(&mut self, from: u32, to: u32, p: Packet) {
        let node = self.ports[from as usize].dst as usize;
        let wire = u64::from(p.wire);
        if self.held[node].saturating_add(wire) > self.cfg.buffer_bytes {
            self.stats.drops += 1;
            self.free_telemetry_slot(p.telemetry);
            self.qps[p.flow as usize].live -= 1;
            self.maybe_free(p.flow);
            return;
        }
        self.held[node] += wire;
        self.ports[from as usize].ingress += wire;
        if self.cfg.pfc && !self.ports[from as usize].pausing {
            let (xoff, _) = self.pfc_thresholds(node);
            if self.ports[from as usize].ingress > xoff {
                self.ports[from as usize].pausing = true;
                self.stats.pauses += 1;
                let at = self.now + self.ports[from as usize].lat;
                self.push(at, Event::Pfc { link: from, pause: true });
            }
        }
        let port = &mut self.ports[to as usize];
        if self.now >= port.free_at && port.ctrl.is_empty() && !port.paused && port.data.is_empty() {
            // An idle port with nothing ahead: the packet leaves at once (what queueing it and
            // `try_send` would do, without touching the queue).
            let mut p = p;
            self.dequeued(to, &mut p);
            self.transmit(to, p);
        } else {
            port.queued += wire;
            port.data.push_back(p);
            self.try_send(to);
        }
    }

    /// Data packet `p` leaves its queue on link `l`: the switch no longer holds it, and RED marks
    /// it on the bytes it leaves queued behind it (marking as the packet departs, so the mark
    /// tells the receiver about the queue as it is now, not as it was a queueing delay ago).
    pub(super) fn dequeued(&mut self, l: u32, p: &mut Packet) {
        let red = self.ports[l as usize].red;
        if red != NO_RED {
            let prob = self.reds[red as usize].probability(self.ports[l as usize].queued);
            if prob >= 1.0 || (prob > 0.0 && self.uniform() < prob) {
                p.ce = true;
                self.stats.ecn_marks += 1;
            }
        }
        self.stamp_int(l, p);
        let from = self.hops[p.flow as usize * self.stride + p.hop as usize];
        let node = self.ports[l as usize].src as usize;
        let wire = u64::from(p.wire);
        self.held[node] -= wire;
        let port = &mut self.ports[from as usize];
        port.ingress -= wire;
        if port.pausing {
            let (_, xon) = self.pfc_thresholds(node);
            if self.ports[from as usize].ingress <= xon {
                self.ports[from as usize].pausing = false;
                let at = self.now + self.ports[from as usize].lat;
                self.push(at, Event::Pfc { link: from, pause: false });
            }
        }
    }

    /// (pause above, resume at or below) bytes held from one ingress port of `node`.
    fn pfc_thresholds(&self, node: usize) -> (u64, u64) {
        match self.cfg.pfc_threshold {
            PfcThreshold::Static { xoff, xon } => (xoff, xon),
            PfcThreshold::Dynamic { alpha, hysteresis } => {
                let free = self.cfg.buffer_bytes.saturating_sub(self.held[node]);
                let xoff = (alpha * free as f64) as u64;
                (xoff, xoff.saturating_sub(hysteresis))
            }
        }
    }
}
