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

    /// Queue `q` of `port` holds packets and none of its priorities is paused.
    #[cfg(test)]
    pub(super) fn queue_eligible(&self, port: u32, q: usize) -> bool {
        queue_eligible(&self.queues, &self.ports[port as usize], q, self.now)
    }

    /// The queue `port` sends from next (`pick_queue`).
    #[inline]
    pub(super) fn pick_queue(&mut self, port: u32) -> Option<usize> {
        pick_queue(&self.queues, &mut self.ports[port as usize], &self.pkts, self.now)
    }

    /// True (and a TxDone is ensured) while the port is still serializing. (Called for every
    /// packet a switch queues: kept inline, a call cost as much as the test.)
    #[inline(always)]
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
        let Some(q) = self.pick(port) else { return };
        // The packet last put on this port's wire gets the new one linked behind it at the
        // end of this function; it left a serialization ago and the fabric has run since, so
        // start loading it now rather than stall on the store.
        self.pkts.prefetch(self.ports[port as usize].wire_tail);
        let now = self.now;
        let sw = self.ports[port as usize].sw;
        let pkt = {
            let p = &mut self.ports[port as usize];
            let pkt = p.queues[q].ring.pop_front(&self.pkts).expect("picked");
            match p.queues[q].ring.front() {
                // The next packet of this queue leaves one serialization from now: start
                // loading it (the queue may have held it long enough to leave the cache).
                Some(next) => self.pkts.prefetch(next),
                None => p.nonempty &= !(1 << q),
            }
            pkt
        };
        let (size, in_port, in_prio, ecn, enq, kind) = {
            let p = self.pkts.get(pkt);
            (p.wire_bytes as u64, p.in_port, p.in_prio, p.ecn, p.enq_time, p.kind)
        };
        // ECN/RED at dequeue on the egress queue length (HPCC ns-3 marks at dequeue).
        let port_ref = &mut self.ports[port as usize];
        let qlen = port_ref.queues[q].bytes;
        port_ref.queues[q].bytes -= size;
        if ecn == ECT0 {
            if let Some(e) = port_ref.ecn[q] {
                if e.marks(qlen, &mut self.mmu.switches[sw as usize].rng) {
                    self.pkts.get_mut(pkt).ecn = CE;
                    self.ports[port as usize].st.ecn_marked[q] += 1;
                    self.notify(Observed::EcnMark { time: self.now, port: PortId(port), queue: q as u8 });
                }
            }
        }
        // (InfiniBand: FECN instead of ECN, on the same queue length.)
        self.dequeued(port, q, pkt, qlen, size);
        let delay = (now - enq).0;
        self.stats.qdelay.record(delay);
        if kind == Kind::Cnp {
            self.stats.cnp_qdelay.record(delay);
        }
        let eq = &mut self.ports[port as usize].queues[q];
        if delay > eq.delay_max {
            eq.delay_max = delay;
        }
        // Release the buffer at this switch.
        self.release(sw, in_port, in_prio, size);
        if self.int_on && kind == Kind::Data {
            self.stamp_int(port, pkt, size);
        }
        self.put_on_wire(port, pkt);
        if self.ports[port as usize].nonempty != 0 {
            self.busy(port);
        }
    }

    /// HPCC's INT at a switch egress: the port's bytes still queued (all queues, after this
    /// packet left), its bytes sent including this packet, the time and the link rate. Kept out
    /// of line: runs without INT must not pay for its code in the dequeue path.
    #[inline(never)]
    fn stamp_int(&mut self, port: u32, pkt: u32, size: u64) {
        let p = &self.ports[port as usize];
        let hop = crate::cc::IntHop {
            qlen_bytes: p.queues.iter().map(|q| q.bytes).sum(),
            tx_bytes: p.tx_bytes + size,
            time: self.now,
            rate_bps: p.speed.0,
        };
        self.int_slot(pkt).push(hop);
    }
}

// The scheduler as a component: what it decides depends only on the queues' properties
// (`Queues`, resolved by the model), the one port's queues, pause and DWRR state, and the
// clock; it takes exactly those.

/// Queue `q` of port `p` holds packets and no priority mapped to it is paused at `now`.
#[inline]
pub(super) fn queue_eligible(plan: &Queues, p: &Port, q: usize, now: SimTime) -> bool {
    if p.nonempty & (1 << q) == 0 {
        return false;
    }
    let mut m = plan.prio_mask[q] & p.paused;
    while m != 0 {
        let prio = m.trailing_zeros() as u8;
        if p.is_paused(prio, now) {
            return false;
        }
        m &= m - 1;
    }
    true
}

/// Strict-priority queues first (highest first), then deficit round robin among the others
/// by their quanta; `None` when no queue may send. Advances `p`'s round-robin state and
/// deficits as a DWRR scheduler does.
#[inline]
pub(super) fn pick_queue(plan: &Queues, p: &mut Port, pkts: &Slab, now: SimTime) -> Option<usize> {
    // Bit q: queue q may send (holds packets and none of its priorities is paused).
    let mut eligible = p.nonempty;
    if p.paused != 0 {
        let mut m = eligible;
        while m != 0 {
            let q = m.trailing_zeros() as usize;
            m &= m - 1;
            if !queue_eligible(plan, p, q, now) {
                eligible &= !(1 << q);
            }
        }
    }
    if eligible == 0 {
        return None;
    }
    for &q in &plan.strict {
        if eligible & (1 << q) != 0 {
            return Some(q as usize);
        }
    }
    let n = plan.dwrr.len();
    if n == 0 || !plan.dwrr.iter().any(|&q| eligible & (1 << q) != 0) {
        return None;
    }
    loop {
        let rr = p.rr as usize % n;
        let q = plan.dwrr[rr] as usize;
        if eligible & (1 << q) == 0 {
            if p.nonempty & (1 << q) == 0 {
                p.queues[q].deficit = 0;
            }
            p.rr = ((rr + 1) % n) as u8;
            p.fresh = true;
            continue;
        }
        let head = pkts.get(p.queues[q].ring.front().expect("eligible")).wire_bytes as i64;
        if p.fresh {
            p.queues[q].deficit += plan.quantum_bytes[q];
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

#[cfg(test)]
mod tests {
    //! The egress scheduler against service orders and byte shares worked out by hand.
    use super::super::test_support::{enqueue, idle_sim as sim, model};
    use super::*;

    /// One switch, two hosts at 100 Gb/s; DWRR queues 3 (weight 3, lossless) and 1 (weight
    /// 1), strict queues 6 and 7.
    fn star() -> Model {
        let text = r#"[fabric]
name = "sched"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[topology.explicit]
node = [ { name = "sw0", kind = "switch", model = "sw" }, { name = "h0", kind = "host" }, { name = "h1", kind = "host" } ]
link = [ { a = "h0", b = "sw0", speed_gbps = 100, length_m = 2 }, { a = "h1", b = "sw0", speed_gbps = 100, length_m = 2 } ]
[[qos.class]]
name = "roce"
dscp = [26]
priority = 3
lossless = true
weight = 3
carries = ["rdma"]
[[qos.class]]
name = "bulk"
dscp = [10]
priority = 1
weight = 1
[[qos.class]]
name = "cnp"
dscp = [48]
priority = 6
scheduler = "strict"
carries = ["cnp"]
[[qos.class]]
name = "ctl"
dscp = [56]
priority = 7
scheduler = "strict"
"#;
        model("sched.toml", text)
    }

    fn switch_port(sim: &Sim) -> u32 {
        sim.ports.iter().position(|p| p.sw != NONE).unwrap() as u32
    }

    /// Picks `n` times without dequeuing (the heads stay, so every queue stays backlogged)
    /// and adds up the head bytes served per queue.
    fn serve(sim: &mut Sim, port: u32, n: usize) -> [u64; 8] {
        let mut bytes = [0u64; 8];
        for _ in 0..n {
            let q = sim.pick_queue(port).expect("a queue is eligible");
            let head = sim.ports[port as usize].queues[q].ring.front().unwrap();
            bytes[q] += sim.pkts.get(head).wire_bytes as u64;
        }
        bytes
    }

    #[test]
    fn config_gives_strict_queues_highest_priority_first_and_quanta_by_weight() {
        let m = star();
        let s = sim(&m);
        assert_eq!(s.queues.strict, vec![7, 6]);
        assert_eq!(s.queues.dwrr, vec![1, 3]);
        // 256 bytes per unit of weight.
        assert_eq!(s.queues.quantum_bytes[3], 3 * 256);
        assert_eq!(s.queues.quantum_bytes[1], 256);
    }

    #[test]
    fn dwrr_with_weights_3_to_1_serves_bytes_3_to_1() {
        let m = star();
        let mut s = sim(&m);
        let port = switch_port(&s);
        // Different packet sizes: the share is in bytes, not packets.
        enqueue(&mut s, port, 3, 1_000);
        enqueue(&mut s, port, 1, 1_500);
        let b = serve(&mut s, port, 40_000);
        assert_eq!(b[3] + b[1], b.iter().sum::<u64>(), "only the backlogged DWRR queues are served");
        let ratio = b[3] as f64 / b[1] as f64;
        assert!((ratio - 3.0).abs() < 0.03, "bytes {} : {} = {ratio:.4}, weights say 3", b[3], b[1]);
        // Packets: 3:1 in bytes with 1,000 B against 1,500 B is 4.5:1 in packets.
        let pkts = (b[3] / 1_000) as f64 / (b[1] / 1_500) as f64;
        assert!((pkts - 4.5).abs() < 0.05, "packets {pkts:.4}");
    }

    #[test]
    fn strict_priority_serves_the_higher_queue_first_always() {
        let m = star();
        let mut s = sim(&m);
        let port = switch_port(&s);
        for q in [1, 3, 6, 7] {
            enqueue(&mut s, port, q, 1_000);
        }
        assert!((0..100).all(|_| s.pick_queue(port) == Some(7)), "queue 7 (priority 7) while backlogged");
        s.ports[port as usize].nonempty &= !(1 << 7);
        assert!((0..100).all(|_| s.pick_queue(port) == Some(6)), "then queue 6");
        s.ports[port as usize].nonempty &= !(1 << 6);
        let b = serve(&mut s, port, 400);
        assert_eq!(b[6] + b[7], 0);
        assert!(b[1] > 0 && b[3] > 0, "then DWRR among the rest: {b:?}");
        s.ports[port as usize].nonempty = 0;
        assert_eq!(s.pick_queue(port), None, "nothing queued");
    }

    #[test]
    fn a_paused_priority_makes_its_queue_ineligible_until_the_pause_ends_or_the_watchdog_overrides() {
        let m = star();
        let mut s = sim(&m);
        let port = switch_port(&s);
        assert!(!s.queue_eligible(port, 3), "empty");
        enqueue(&mut s, port, 3, 1_000);
        enqueue(&mut s, port, 1, 1_000);
        assert!(s.queue_eligible(port, 3));
        // Priority 3 paused for 1 µs from t = 10 µs.
        s.now = SimTime(10_000_000);
        s.ports[port as usize].pause_until(3, SimTime(11_000_000), s.now);
        assert!(!s.queue_eligible(port, 3));
        assert!(s.queue_eligible(port, 1), "other priorities are not paused");
        assert!((0..100).all(|_| s.pick_queue(port) == Some(1)), "DWRR skips the paused queue");
        // Watchdog restoration in force: the pause is ignored.
        s.ports[port as usize].pause[3].wd_until = SimTime(10_500_000);
        assert!(s.queue_eligible(port, 3));
        s.ports[port as usize].pause[3].wd_until = SimTime::ZERO;
        // Last picosecond of the pause, then its end.
        s.now = SimTime(10_999_999);
        assert!(!s.queue_eligible(port, 3));
        s.now = SimTime(11_000_000);
        assert!(s.queue_eligible(port, 3));
        let b = serve(&mut s, port, 1_000);
        assert!(b[3] > 0, "served again once the pause is over");
    }
}
