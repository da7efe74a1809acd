//! Egress scheduling: strict-priority queues first, then DWRR among the others, skipping paused
//! priorities; one pending transmit event per port.

use super::*;

impl Sim<'_> {
    #[inline]
    pub(super) fn kick(&mut self, port: u32) {
        let p = &self.ports[port as usize];
        if p.sw != NONE {
            self.switch_try_tx(port);
        } else {
            let nic = p.nic;
            self.nic_try_send(nic);
        }
    }

    #[inline]
    pub(super) fn queue_eligible(&self, port: u32, q: usize) -> bool {
        let p = &self.ports[port as usize];
        if p.nonempty & (1 << q) == 0 {
            return false;
        }
        let mask = self.queue_prio_mask[q];
        let mut m = mask;
        while m != 0 {
            let prio = m.trailing_zeros() as u8;
            if self.is_paused(port, prio) {
                return false;
            }
            m &= m - 1;
        }
        true
    }

    #[inline]
    pub(super) fn pick_queue(&mut self, port: u32) -> Option<usize> {
        for i in 0..self.strict_queues.len() {
            let q = self.strict_queues[i] as usize;
            if self.queue_eligible(port, q) {
                return Some(q);
            }
        }
        let n = self.dwrr_queues.len();
        if n == 0 || !(0..n).any(|i| self.queue_eligible(port, self.dwrr_queues[i] as usize)) {
            return None;
        }
        loop {
            let rr = self.ports[port as usize].rr as usize % n;
            let q = self.dwrr_queues[rr] as usize;
            if !self.queue_eligible(port, q) {
                let p = &mut self.ports[port as usize];
                if p.nonempty & (1 << q) == 0 {
                    p.queues[q].deficit = 0;
                }
                p.rr = ((rr + 1) % n) as u8;
                p.fresh = true;
                continue;
            }
            let head =
                self.pkts.get(*self.ports[port as usize].queues[q].ring.front().expect("eligible")).wire_bytes as i64;
            let quantum = self.quantum[q];
            let p = &mut self.ports[port as usize];
            if p.fresh {
                p.queues[q].deficit += quantum;
                p.fresh = false;
            }
            if p.queues[q].deficit >= head {
                p.queues[q].deficit -= head;
                return Some(q);
            }
            p.rr = ((rr + 1) % n) as u8;
            p.fresh = true;
        }
    }

    /// True (and a TxDone is ensured) while the port is still serializing.
    #[inline]
    pub(super) fn busy(&mut self, port: u32) -> bool {
        let now = self.now;
        let p = &mut self.ports[port as usize];
        if p.busy_until > now {
            if !p.tx_pending {
                p.tx_pending = true;
                let at = p.busy_until;
                self.q.push(at, Ev::TxDone { port });
            }
            return true;
        }
        false
    }

    #[inline]
    pub(super) fn switch_try_tx(&mut self, port: u32) {
        if !self.ports[port as usize].up || self.busy(port) {
            return;
        }
        let Some(q) = self.pick_queue(port) else { return };
        let now = self.now;
        let sw = self.ports[port as usize].sw;
        let pkt = {
            let p = &mut self.ports[port as usize];
            let pkt = p.queues[q].ring.pop_front().expect("picked");
            match p.queues[q].ring.front() {
                // The next packet of this queue leaves one serialization from now: start
                // loading it (the queue may have held it long enough to leave the cache).
                Some(&next) => self.pkts.prefetch(next),
                None => p.nonempty &= !(1 << q),
            }
            pkt
        };
        let (size, in_port, in_prio, ecn, enq) = {
            let p = self.pkts.get(pkt);
            (p.wire_bytes as u64, p.in_port, p.in_prio, p.ecn, p.enq_time)
        };
        // ECN/RED at dequeue on the egress queue length (HPCC ns-3 marks at dequeue).
        let port_ref = &mut self.ports[port as usize];
        let qlen = port_ref.queues[q].bytes;
        port_ref.queues[q].bytes -= size;
        if ecn == ECT0 {
            if let Some(e) = port_ref.ecn[q] {
                let mark = if qlen > e.kmax {
                    true
                } else if qlen > e.kmin {
                    let p = e.pmax * (qlen - e.kmin) as f64 / (e.kmax - e.kmin).max(1) as f64;
                    self.switches[sw as usize].rng.unit() < p
                } else {
                    false
                };
                if mark {
                    self.pkts.get_mut(pkt).ecn = CE;
                    self.ports[port as usize].st.ecn_marked[q] += 1;
                    self.notify(Observed::EcnMark { time: self.now, port: PortId(port), queue: q as u8 });
                }
            }
        }
        let delay = (now - enq).0;
        self.stats.qdelay.record(delay);
        let eq = &mut self.ports[port as usize].queues[q];
        if delay > eq.delay_max {
            eq.delay_max = delay;
        }
        // Release the buffer at this switch.
        self.release(sw, in_port, in_prio, size);
        self.put_on_wire(port, pkt);
        if self.ports[port as usize].nonempty != 0 {
            self.busy(port);
        }
    }
}
