//! Ports and wires: serialization onto a link, propagation, arrival at the peer, drops.
//!
//! A port serializes one packet at a time (`busy_until`); packets on the cable form an
//! intrusive list through `Packet::next`, each carrying its arrival time, so one pending
//! arrival event per wire suffices.

use super::*;

impl Sim<'_> {
    #[inline]
    pub(super) fn is_paused(&self, port: u32, prio: u8) -> bool {
        let p = &self.ports[port as usize];
        p.pause[prio as usize].until > self.now && p.pause[prio as usize].wd_until <= self.now
    }

    #[inline]
    pub(super) fn put_on_wire(&mut self, port: u32, pkt: u32) {
        let now = self.now;
        let p = &mut self.ports[port as usize];
        let bytes = self.pkts.get(pkt).wire_bytes as u32;
        let ser = ser_time(p, bytes);
        p.busy_until = now + ser;
        p.tx_bytes += bytes as u64;
        let arrive = now + ser + p.delay;
        let tail = p.wire_tail;
        let tail_arrive = p.wire_tail_arrive;
        p.wire_tail = pkt;
        p.wire_tail_arrive = arrive;
        let first = tail == NONE;
        if first {
            p.wire_head = pkt;
        }
        if p.nic != NONE && !p.tx_pending {
            // NICs nearly always have more to send. (One TxDone per port at most: a port
            // that sends again at the very instant its previous TxDone is due, before that
            // event runs, already has one coming; it re-arms itself for the new end. A
            // second one here would run early, re-arm, and the duplicates would multiply
            // with every such tie — 50 stale events per packet on a long ring all-reduce.)
            p.tx_pending = true;
            self.q.push(now + ser, Ev::TxDone { port });
        }
        if first {
            self.q.push(arrive, Ev::WireArrive { port, pkt, peer: p.peer });
        } else {
            let t = self.pkts.get_mut(tail);
            t.next = pkt;
            t.next_gap = u32::try_from((arrive - tail_arrive).0).unwrap_or(u32::MAX);
        }
        let pk = self.pkts.get_mut(pkt);
        pk.enq_time = arrive;
        pk.next = NONE;
        if pk.kind == Kind::Data {
            self.stats.data_hops += 1;
        }
        self.stats.packet_hops += 1;
    }

    #[inline]
    pub(super) fn on_tx_done(&mut self, port: u32) {
        self.ports[port as usize].tx_pending = false;
        self.kick(port);
    }

    #[inline]
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
        self.pkts.free(pkt);
        self.notify(Observed::Drop { time: self.now, port: PortId(port), queue, reason });
    }
}
