//! Ports and wires: serialization onto a link, propagation, arrival at the peer, drops.
//!
//! A port serializes one packet at a time (`busy_until`); packets on the cable form an
//! intrusive list through `Packet::next`, each carrying its arrival time, so one pending
//! arrival event per wire suffices.

use super::*;

impl Sim<'_> {
    #[inline]
    pub(super) fn is_paused(&self, port: u32, prio: u8) -> bool {
        self.ports[port as usize].is_paused(prio, self.now)
    }

    // (Always inlined: into the switch's dequeue and the NIC's send, both per packet.)
    #[inline(always)]
    pub(super) fn put_on_wire(&mut self, port: u32, pkt: u32) {
        let now = self.now;
        let bytes = self.pkts.get(pkt).wire_bytes as u32;
        self.on_wire(port, self.pkts.get(pkt).pcp, bytes);
        let p = &mut self.ports[port as usize];
        let ser = ser_time(p, bytes);
        p.busy_until = now + ser;
        p.tx_bytes += bytes as u64;
        let arrive = now + ser + p.delay;
        if p.nic != NONE && !p.tx_pending {
            // NICs nearly always have more to send. (One TxDone per port at most: a port
            // that sends again at the very instant its previous TxDone is due, before that
            // event runs, already has one coming; it re-arms itself for the new end. A
            // second one here would run early, re-arm, and the duplicates would multiply
            // with every such tie — 50 stale events per packet on a long ring all-reduce.)
            p.tx_pending = true;
            self.q.push(now + ser, Ev::TxDone { port });
        }
        if self.pkts.get(pkt).kind == Kind::Data {
            self.stats.data_hops += 1;
        }
        self.stats.packet_hops += 1;
        if self.ships(port) {
            // The peer is another partition's (`part`).
            self.ship_packet(port, pkt, arrive);
        } else {
            self.wire_append(port, pkt, arrive);
        }
    }

    /// Appends `pkt` to the cable of `port`, due at its peer at `arrive` (after every packet
    /// already on it): one pending arrival event per wire.
    #[inline(always)]
    pub(super) fn wire_append(&mut self, port: u32, pkt: u32, arrive: SimTime) {
        let p = &mut self.ports[port as usize];
        let tail = p.wire_tail;
        let tail_arrive = p.wire_tail_arrive;
        p.wire_tail = pkt;
        p.wire_tail_arrive = arrive;
        if tail == NONE {
            p.wire_head = pkt;
            self.q.push(arrive, Ev::WireArrive { port, pkt, peer: p.peer });
        } else {
            let t = self.pkts.get_mut(tail);
            t.next = pkt;
            t.next_gap = u32::try_from((arrive - tail_arrive).0).unwrap_or(u32::MAX);
        }
        let pk = self.pkts.get_mut(pkt);
        pk.enq_time = arrive;
        pk.next = NONE;
    }

    #[inline]
    pub(super) fn on_tx_done(&mut self, port: u32) {
        self.ports[port as usize].tx_pending = false;
        self.kick(port);
    }

    #[inline(always)]
    pub(super) fn on_wire_arrive(&mut self, port: u32, pkt: u32, peer: u32) {
        // A link that went down emptied its wire; its pending arrival event is stale.
        if self.ports[port as usize].wire_head != pkt || self.pkts.get(pkt).enq_time != self.now {
            return;
        }
        let (next, gap) = {
            let p = self.pkts.get(pkt);
            (p.next, p.next_gap)
        };
        let p = &mut self.ports[port as usize];
        p.wire_head = next;
        if next == NONE {
            p.wire_tail = NONE;
        } else {
            let t = if gap != u32::MAX { self.now + SimTime(gap as u64) } else { self.pkts.get(next).enq_time };
            self.q.push(t, Ev::WireArrive { port, pkt: next, peer });
        }
        let dst = &self.ports[peer as usize];
        if dst.sw != NONE {
            if self.router.is_frozen(dst.sw) {
                self.frozen_drop(peer, pkt);
                return;
            }
            self.switch_arrive(dst.sw, peer, pkt);
        } else {
            let nic = dst.nic;
            self.host_arrive(nic, pkt);
        }
    }

    #[inline]
    pub(super) fn drop_pkt(&mut self, port: u32, queue: u8, pkt: u32, reason: DropReason) {
        let p = self.pkts.get(pkt);
        if p.kind == Kind::Data {
            self.stats.data_dropped += 1;
        }
        self.stats.dropped += 1;
        self.ports[port as usize].st.drops[queue as usize][reason as usize] += 1;
        let qp = self.free_pkt(pkt);
        self.notify(Observed::Drop { time: self.now, port: PortId(port), queue, reason });
        self.maybe_retire(qp);
    }
}

#[cfg(test)]
mod tests {
    //! Serialization and propagation against times worked out by hand: a byte is 8 bits, a
    //! metre of cable 5 ns.
    use super::super::test_support::{idle_sim as sim, model};
    use super::*;

    /// One switch; h0 on a 100 Gb/s link, h1 on a 56 Gb/s (FDR) one, 2 m cables each; one
    /// 100,000 B message h1 → h0, so that QP 0 exists (it is never started); no watchdog, so
    /// nothing else is ever scheduled.
    fn star() -> Model {
        let text = r#"[fabric]
name = "wire"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[topology.explicit]
node = [ { name = "sw0", kind = "switch", model = "sw" }, { name = "h0", kind = "host" }, { name = "h1", kind = "host" } ]
link = [ { a = "h0", b = "sw0", speed_gbps = 100, length_m = 2 }, { a = "h1", b = "sw0", speed_gbps = 56, length_m = 2 } ]
[qos.pfc_watchdog]
enabled = false
"#;
        model("wire.toml", text)
    }

    fn with_message(m: &Model) -> Sim<'_> {
        let mut s = sim(m);
        let (h0, h1) = (m.node_by_name("h0").unwrap(), m.node_by_name("h1").unwrap());
        s.post_flow(FlowSpec {
            src: h1,
            dst: h0,
            size_bytes: 100_000,
            start: SimTime::ZERO,
            class: m.qos.rdma_class(),
            qps: 1,
            origin: usize::MAX,
            tag: 0,
            sport: Some(49_152),
            transport: crate::traffic::Transport::Rdma,
        });
        // Only the QP's start is scheduled (taken off: the tests drive the ports by hand).
        assert_eq!(s.q.pop(), Some((SimTime::ZERO, Ev::QpStart { qp: 0 })));
        s
    }

    /// The switch port facing the host of that port speed (Gb/s).
    fn switch_port(s: &Sim, gbps: u64) -> u32 {
        s.ports.iter().position(|p| p.sw != NONE && p.speed.0 == gbps * 1_000_000_000).unwrap() as u32
    }

    /// A data packet of QP 0 (h1 → h0), `payload` bytes, PSN `psn`.
    fn data(s: &mut Sim, psn: u32, payload: u16) -> u32 {
        let dst = s.m.node_by_name("h0").unwrap().0;
        s.pkts.alloc(Packet {
            enq_time: SimTime::ZERO,
            qp: 0,
            psn,
            dst,
            hash: 0,
            in_port: NONE,
            next: NONE,
            next_gap: u32::MAX,
            wire_bytes: payload + DATA_OVERHEAD as u16,
            payload,
            kind: Kind::Data,
            class: 0,
            pcp: 3,
            ecn: NOT_ECT,
            in_prio: 3,
        })
    }

    #[test]
    fn serialization_in_whole_picoseconds_exact_or_rounded_up() {
        let m = star();
        let s = sim(&m);
        let (p100, p56) = (&s.ports[switch_port(&s, 100) as usize], &s.ports[switch_port(&s, 56) as usize]);
        // 100 Gb/s: 8 bits / 100 Gb/s = 80 ps a byte, exactly; a 4,178 B frame takes 334,240 ps.
        assert_eq!(p100.ps_per_byte, 80);
        assert_eq!(ser_time(p100, 4_178), SimTime(334_240));
        // 56 Gb/s: 142.857… ps a byte does not divide; 4,178·8 bits / 56 Gb/s = 596,857.14 ps,
        // rounded up to 596,858 (never early); one byte: 142.86 → 143.
        assert_eq!(p56.ps_per_byte, 0);
        assert_eq!(ser_time(p56, 4_178), SimTime(596_858));
        assert_eq!(ser_time(p56, 1), SimTime(143));
        // Propagation: 2 m at 5 ns/m.
        assert_eq!((p100.delay, p56.delay), (SimTime(10_000), SimTime(10_000)));
    }

    #[test]
    fn back_to_back_frames_share_one_arrival_event_and_arrive_one_serialization_apart() {
        let m = star();
        let mut s = with_message(&m);
        let port = switch_port(&s, 100);
        // 1,048 B payload + 82 B of headers and preamble/IFG = 1,130 B: 90,400 ps at 100 Gb/s.
        let (a, b) = (data(&mut s, 0, 1_048), data(&mut s, 1, 1_048));
        s.now = SimTime(1_000_000);
        s.put_on_wire(port, a);
        // Busy until 1 µs + 90.4 ns, at h0 10 ns later.
        assert_eq!(s.ports[port as usize].busy_until, SimTime(1_090_400));
        assert_eq!(
            s.q.pop(),
            Some((SimTime(1_100_400), Ev::WireArrive { port, pkt: a, peer: s.ports[port as usize].peer }))
        );
        // The next frame goes out as the first one ends: it arrives 90.4 ns after it, and rides
        // on the first's event (no event of its own).
        s.now = SimTime(1_090_400);
        s.put_on_wire(port, b);
        assert_eq!(s.ports[port as usize].busy_until, SimTime(1_180_800));
        assert_eq!(s.q.len(), 0);
        assert_eq!(s.pkts.get(a).next, b);
        assert_eq!(s.pkts.get(a).next_gap, 90_400);
        assert_eq!(s.ports[port as usize].tx_bytes, 2 * 1_130);
        assert_eq!((s.stats.packet_hops, s.stats.data_hops), (2, 2));
        // The first arrives: delivered in order to h0, and the second's arrival is scheduled.
        let peer = s.ports[port as usize].peer;
        s.now = SimTime(1_100_400);
        s.on_wire_arrive(port, a, peer);
        assert_eq!(s.stats.data_delivered, 1);
        assert_eq!(s.q.pop(), Some((SimTime(1_190_800), Ev::WireArrive { port, pkt: b, peer })));
        // An arrival event for a packet no longer at the head (its link went down and the
        // wire was emptied) is ignored.
        s.on_wire_arrive(port, a, peer);
        assert_eq!(s.stats.data_delivered, 1);
        s.now = SimTime(1_190_800);
        s.on_wire_arrive(port, b, peer);
        assert_eq!(s.stats.data_delivered, 2);
        assert_eq!(s.ports[port as usize].wire_head, NONE);
        assert_eq!(s.ports[port as usize].wire_tail, NONE);
    }

    #[test]
    fn a_nic_port_keeps_one_tx_done_pending() {
        let m = star();
        let mut s = with_message(&m);
        let port = s.host.nics[s.host.qps[0].src_nic as usize].port;
        // From h1's 56 Gb/s port: 1,130 B take 1,130·8/56 ns = 161,428.57 → 161,429 ps.
        let (a, b) = (data(&mut s, 0, 1_048), data(&mut s, 1, 1_048));
        s.put_on_wire(port, a);
        let peer = s.ports[port as usize].peer;
        // A second frame at the instant the first ends, before that TxDone has run: the
        // pending one serves both (it re-arms for the new end when it runs).
        s.now = SimTime(161_429);
        s.put_on_wire(port, b);
        assert_eq!(s.q.pop(), Some((SimTime(161_429), Ev::TxDone { port })));
        assert_eq!(s.q.pop(), Some((SimTime(171_429), Ev::WireArrive { port, pkt: a, peer })));
        assert_eq!(s.q.len(), 0);
    }

    #[test]
    fn paused_while_the_pause_lasts_unless_the_watchdog_overrides_it() {
        let m = star();
        let mut s = sim(&m);
        let port = switch_port(&s, 100);
        s.ports[port as usize].pause_until(3, SimTime(10), s.now);
        s.now = SimTime(9);
        assert!(s.is_paused(port, 3));
        assert!(!s.is_paused(port, 4), "per priority");
        s.now = SimTime(10);
        assert!(!s.is_paused(port, 3), "the pause ends at `until`");
        s.now = SimTime(9);
        s.ports[port as usize].pause[3].wd_until = SimTime(10);
        assert!(!s.is_paused(port, 3), "the watchdog ignores pauses until `wd_until`");
    }

    #[test]
    fn a_drop_is_counted_by_port_queue_and_reason_and_frees_the_packet() {
        let m = star();
        let mut s = with_message(&m);
        let port = switch_port(&s, 100);
        let pkt = data(&mut s, 0, 1_048);
        assert_eq!(s.pkts.live(), 1);
        s.drop_pkt(port, 3, pkt, DropReason::Buffer);
        assert_eq!(s.pkts.live(), 0);
        assert_eq!(s.ports[port as usize].st.drops[3][DropReason::Buffer as usize], 1);
        assert_eq!(s.ports[port as usize].st.drops[3][DropReason::Headroom as usize], 0);
        assert_eq!((s.stats.dropped, s.stats.data_dropped), (1, 1));
    }
}
