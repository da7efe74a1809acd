//! Invariants of the engine's state, recounted from the packets themselves.
//!
//! The run's counters (`sent`, `delivered`, `dropped`) are updated at the same sites, so a
//! check built on them alone cannot catch a packet that leaks out of every queue. These checks
//! walk the structures that hold packets — egress rings, wires, NIC queues — and compare what
//! they find with the packet slab and with the byte counters the MMU keeps:
//!
//! * every live packet sits in exactly one place (queue, wire or NIC queue), and no packet is
//!   both held somewhere and on the slab's free list (a packet in two places would be freed
//!   twice and then handed out twice);
//! * an egress queue's byte counter equals the wire bytes of the packets in its ring;
//! * a switch's buffer use equals the bytes queued on its ports and the bytes its ingress
//!   accounting holds (priority groups and headroom), and its shared-pool use equals what the
//!   priority groups hold above their reserve;
//! * after a run in which every QP completed, all of it is zero.
//!
//! `Sim::check_invariants` runs in the physics and random-fabric tests and, in debug builds,
//! at every sample.

use super::{LinkLayer, Sim, NONE};

impl Sim<'_> {
    /// Checks the invariants above; `Err` lists every one that fails.
    pub fn check_invariants(&self) -> Result<(), Vec<String>> {
        let mut errs = Vec::new();
        let mut held = 0usize;
        // Where each slab slot was found; a second sighting is a packet in two places.
        let mut seen = vec![false; self.pkts.capacity_used()];
        let mut twice = Vec::new();
        let mut sight = |id: u32| match seen.get_mut(id as usize) {
            Some(s) if !*s => *s = true,
            _ => twice.push(id),
        };
        for &id in self.pkts.free_ids() {
            sight(id);
        }
        let mut queued = vec![0u64; self.mmu.switches.len()];
        let mut ingress = vec![0u64; self.mmu.switches.len()];
        let mut shared = vec![0u64; self.mmu.switches.len()];
        for (i, p) in self.ports.iter().enumerate() {
            for (q, eq) in p.queues.iter().enumerate() {
                let mut bytes = 0u64;
                for id in eq.ring.iter(&self.pkts) {
                    sight(id);
                    bytes += self.pkts.get(id).wire_bytes as u64;
                }
                if bytes != eq.bytes {
                    errs.push(format!("port {i} queue {q}: counter {} B, ring holds {bytes} B", eq.bytes));
                }
                held += eq.ring.len();
                if p.sw != NONE {
                    queued[p.sw as usize] += eq.bytes;
                }
            }
            let mut at = p.wire_head;
            while at != NONE {
                sight(at);
                held += 1;
                at = self.pkts.get(at).next;
            }
            if p.sw != NONE {
                let s = &self.mmu.switches[p.sw as usize];
                for pg in &p.pg {
                    ingress[p.sw as usize] += pg.ing + pg.hdrm;
                    shared[p.sw as usize] += pg.ing.saturating_sub(s.reserve);
                }
            }
        }
        for n in &self.host.nics {
            held += n.cnp_q.len() + n.ack_q.len() + n.rx_q.len();
            n.cnp_q.iter().chain(&n.ack_q).chain(&n.rx_q).for_each(|&id| sight(id));
            let rx: u64 = n.rx_q.iter().map(|&id| self.pkts.get(id).wire_bytes as u64).sum();
            if rx != n.rx_bytes {
                errs.push(format!("NIC of node {}: rx counter {} B, receive queue holds {rx} B", n.node, n.rx_bytes));
            }
        }
        if let Some(id) = twice.first() {
            errs.push(format!("{} packet slots found in two places (first: slot {id})", twice.len()));
        }
        if held != self.pkts.live() {
            errs.push(format!("{} packets live, {held} found in queues, wires and NICs", self.pkts.live()));
        }
        for (i, s) in self.mmu.switches.iter().enumerate() {
            if s.used != queued[i] || s.used != ingress[i] {
                errs.push(format!(
                    "switch node {}: buffer use {} B, queued on its ports {} B, ingress accounting {} B",
                    s.node, s.used, queued[i], ingress[i]
                ));
            }
            if s.shared_used != shared[i] {
                errs.push(format!(
                    "switch node {}: shared pool use {} B, priority groups above reserve {} B",
                    s.node, s.shared_used, shared[i]
                ));
            }
        }
        // InfiniBand credits: per port and VL, what the port may still send, what is on its
        // wire, what the receiver holds and the credits on their way back add up to the
        // receiver's buffer.
        if let LinkLayer::Ib(ib) = &self.link {
            for (i, p) in self.ports.iter().enumerate() {
                let r = &self.ports[p.peer as usize];
                let mut acc = [0u64; 8];
                let mut at = p.wire_head;
                while at != NONE {
                    let k = self.pkts.get(at);
                    acc[k.pcp as usize & 7] += k.wire_bytes as u64;
                    at = k.next;
                }
                if r.sw != NONE {
                    for (v, a) in acc.iter_mut().enumerate() {
                        *a += r.pg[v].ing;
                    }
                } else if r.nic != NONE {
                    for &id in &self.host.nics[r.nic as usize].rx_q {
                        let k = self.pkts.get(id);
                        acc[k.pcp as usize & 7] += k.wire_bytes as u64;
                    }
                }
                let c = &self.ib_ports[i];
                for (v, held) in acc.iter().enumerate() {
                    let total = held + c.credits[v] as u64 + c.credit_in_flight[v] as u64;
                    if total != ib.initial_credits[v] as u64 {
                        errs.push(format!(
                            "port {i} VL {v}: credits {} + returning {} + on the wire and held by the peer {} = {total} B, \
                             the peer's buffer is {} B",
                            c.credits[v], c.credit_in_flight[v], held, ib.initial_credits[v]
                        ));
                    }
                }
            }
        }
        // A run that ended because every QP completed (none gave up, none cut short) leaves
        // nothing behind.
        // (A partition's replica counts its own QPs only: another's packets may cross it.)
        let completed =
            self.qps_left == 0 && !self.stopped_no_progress && !self.stopped_at_duration && self.part.is_none();
        if completed && self.pkts.live() != 0 && !self.host.qps.iter().any(|q| q.st.failed) {
            errs.push(format!("every QP completed but {} packets are still live", self.pkts.live()));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs)
        }
    }

    /// Test hook: loses one queued packet's bytes from its queue counter, as a bookkeeping bug
    /// would, so a test can prove `check_invariants` catches it. Returns false when nothing is
    /// queued.
    #[cfg(test)]
    pub(crate) fn leak_for_test(&mut self) -> bool {
        for p in &mut self.ports {
            for q in &mut p.queues {
                if let Some(id) = q.ring.pop_front(&self.pkts) {
                    q.bytes -= self.pkts.get(id).wire_bytes as u64;
                    return true;
                }
            }
        }
        false
    }

    /// Test hook: puts a queued packet on the slab's free list while it stays queued, as a
    /// double free would. Returns false when nothing is queued.
    #[cfg(test)]
    pub(crate) fn double_free_for_test(&mut self) -> bool {
        let queued = self.ports.iter().flat_map(|p| p.queues.iter()).find_map(|q| q.ring.front());
        match queued {
            Some(id) => {
                self.pkts.free(id);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{build, SimOptions};
    use rocelab_model::{load_str, SimTime};

    const INCAST: &str = r#"[fabric]
name = "t"
[topology.leaf_spine]
leaves = 2
spines = 1
hosts_per_leaf = 9
host_link = { speed_gbps = 100, length_m = 2 }
fabric_link = { speed_gbps = 100, length_m = 2 }
[[lint.disable]]
code = "TOP001"
reason = "test"
[[traffic]]
pattern = "incast"
dst = "host0"
hosts = ["host*"]
senders = 8
size_bytes = 500000
"#;

    #[test]
    fn invariants_hold_during_and_after_a_run() {
        let m = load_str("t.toml", INCAST).unwrap();
        let mut sim = build(&m, SimOptions::default()).unwrap();
        for step in 1..=40 {
            sim.run_until(SimTime::from_us(5 * step));
            sim.check_invariants().unwrap_or_else(|e| panic!("at {} µs: {e:?}", 5 * step));
        }
        sim.run(&mut |_| {});
        assert!(sim.all_done());
        sim.check_invariants().unwrap();
        assert_eq!(sim.pkts.live(), 0);
    }

    #[test]
    fn a_leaked_packet_is_caught() {
        let m = load_str("t.toml", INCAST).unwrap();
        let mut sim = build(&m, SimOptions::default()).unwrap();
        sim.run_until(SimTime::from_us(50));
        sim.check_invariants().unwrap();
        assert!(sim.leak_for_test(), "the incast must have queued packets at 50 µs");
        let errs = sim.check_invariants().unwrap_err();
        let all = errs.join("\n");
        assert!(all.contains("packets live") && all.contains("buffer use"), "{all}");
    }

    #[test]
    fn a_packet_both_queued_and_freed_is_caught() {
        let m = load_str("t.toml", INCAST).unwrap();
        let mut sim = build(&m, SimOptions::default()).unwrap();
        sim.run_until(SimTime::from_us(50));
        sim.check_invariants().unwrap();
        assert!(sim.double_free_for_test(), "the incast must have queued packets at 50 µs");
        let all = sim.check_invariants().unwrap_err().join("\n");
        assert!(all.contains("1 packet slots found in two places"), "{all}");
    }
}
