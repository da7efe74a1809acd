//! The NIC: per-QP sending (CNPs first, then ACK/NAKs, then data round-robin among QPs, paced
//! by the DCQCN rate), the receiver (in-order delivery, ACK/NAK, CNP generation), DCQCN timers,
//! transport timeouts and go-back-N, and which of a host's ports a QP uses.

use super::*;

/// How far into a NIC's control queue a blocked head is looked past.
const CTRL_LOOKAHEAD: usize = 16;
/// Linux TCP's delayed-ACK timer (`TCP_DELACK_MIN`, HZ/25 in `include/net/tcp.h`): 40 ms.
const DELAYED_ACK: SimTime = SimTime(40_000_000_000);
/// Segments Linux's receiver acknowledges one by one at a connection's start and after a
/// pause longer than its RTO (`tcp_incr_quickack`, `TCP_MAX_QUICKACKS`: 16).
pub(super) const QUICKACKS: u8 = 16;
/// The pause after which Linux's receiver goes back to quick ACKs (`tcp_event_data_recv`:
/// longer than the RTO, at least `TCP_RTO_MIN`).
const QUICKACK_AFTER: SimTime = crate::cc::cubic::RTO_MIN;

impl Sim<'_> {
    #[inline]
    pub(super) fn nic_try_send(&mut self, nic: u32) {
        let now = self.now;
        let port = self.host.nics[nic as usize].port;
        if !self.ports[port as usize].up || self.busy(port) {
            return;
        }
        // A packet sent now is linked behind the last one on the wire (see `switch_try_tx`).
        self.pkts.prefetch(self.ports[port as usize].wire_tail);
        // Control packets first: CNPs (strict), then ACK/NAKs. Each goes on its own priority
        // (VL on IB), as a NIC's per-priority send queues do: the first one not paused (or,
        // on IB, short of credits) goes, so a blocked one does not hold the others of other
        // priorities behind it. (The look-ahead is bounded: such queues stay short.)
        for which in 0..2 {
            let pos = {
                let n = &self.host.nics[nic as usize];
                let q = if which == 0 { &n.cnp_q } else { &n.ack_q };
                q.iter().take(CTRL_LOOKAHEAD).position(|&pkt| {
                    let p = self.pkts.get(pkt);
                    !self.tx_blocked(port, p.pcp, p.wire_bytes as u32)
                })
            };
            if let Some(i) = pos {
                let n = &mut self.host.nics[nic as usize];
                let q = if which == 0 { &mut n.cnp_q } else { &mut n.ack_q };
                let pkt = q.remove(i).expect("found");
                self.put_on_wire(port, pkt);
                return;
            }
        }
        let n_active = self.host.nics[nic as usize].active.len();
        let mut earliest = SimTime::MAX;
        // Round robin from `rr`: the index wraps by a compare, not a division per QP (a NIC
        // of a collective scans dozens of QPs whose window is full, and the division was a
        // tenth of the scan).
        let mut idx = match n_active {
            0 => 0,
            n => self.host.nics[nic as usize].rr % n,
        };
        for _ in 0..n_active {
            let qi = self.host.nics[nic as usize].active[idx];
            let next = if idx + 1 == n_active { 0 } else { idx + 1 };
            // The QP looked at next is usually out of the cache (the NIC last looked at it a
            // packet time ago, and the whole fabric ran in between): start loading the fields
            // its test reads while this one is tested.
            if n_active > 1 {
                let nq = &self.host.qps[self.host.nics[nic as usize].active[next] as usize];
                crate::packet::prefetch(&nq.uet);
                crate::packet::prefetch(&nq.snd_nxt);
            }
            idx = next;
            let q = &self.host.qps[qi as usize];
            if let Some(u) = q.uet.as_deref() {
                if !q.uet_can_send(u) {
                    continue;
                }
            } else if (q.snd_nxt >= q.npkts || !q.window_open()) && q.rtx == NONE {
                continue;
            }
            // (The next packet's size matters only to InfiniBand's credits.)
            let wire = q.payload_of(q.snd_nxt) + self.hdr.data;
            let (pcp, next_send) = (q.pcp, q.pacer.next_send);
            if self.tx_blocked(port, pcp, wire) {
                continue;
            }
            if next_send > now {
                earliest = earliest.min(next_send);
                continue;
            }
            self.host.nics[nic as usize].rr = idx;
            self.send_data(nic, qi);
            return;
        }
        if earliest != SimTime::MAX {
            self.wake_nic_at(nic, earliest);
        }
    }

    /// Makes sure the NIC looks for work again at `at` (one pending wake-up per NIC).
    #[inline]
    pub(super) fn wake_nic_at(&mut self, nic: u32, at: SimTime) {
        let n = &mut self.host.nics[nic as usize];
        if at < n.wake_at {
            n.wake_at = at;
            n.wake_gen = n.wake_gen.wrapping_add(1);
            let gen = n.wake_gen;
            self.q.push(at, Ev::NicWake { host: nic, gen });
        }
    }

    #[inline]
    pub(super) fn send_data(&mut self, nic: u32, qi: u32) {
        let now = self.now;
        let port = self.host.nics[nic as usize].port;
        let prof = self.host.nics[nic as usize].profile;
        let q = &mut self.host.qps[qi as usize];
        let (psn, rtx) = match q.uet.as_deref_mut() {
            // UET: a trimmed (or timed-out) packet on its own, else the next new one.
            Some(u) => u.pick(q.snd_nxt),
            None => {
                // A hole SACK recovery resends (Linux TCP), if one is due and not acknowledged
                // since.
                let mut rtx = q.rtx;
                if rtx != NONE && rtx < q.snd_una {
                    // Acknowledged since: resume from the left edge, still inside the hole.
                    rtx = q.snd_una;
                }
                if rtx != NONE && (rtx >= q.rtx_end || rtx >= q.snd_nxt) {
                    rtx = NONE;
                }
                q.rtx = if rtx != NONE && rtx + 1 < q.rtx_end.min(q.snd_nxt) { rtx + 1 } else { NONE };
                (if rtx != NONE { rtx } else { q.snd_nxt }, rtx)
            }
        };
        if rtx != NONE && rtx == q.rtt_psn {
            // Karn: a resent packet's ACK times neither copy.
            q.rtt_psn = NONE;
        }
        let payload = q.payload_of(psn);
        let wire = payload + self.hdr.data + q.int_bytes as u32;
        if psn < q.st.max_sent_psn_plus1 {
            q.st.retransmitted_packets += 1;
            self.stats.retransmitted += 1;
        } else {
            q.st.max_sent_psn_plus1 = psn + 1;
            if q.rtt_psn == NONE && q.cc.as_ref().is_some_and(|c| c.feedback().rtt) {
                q.rtt_psn = psn;
                q.rtt_sent = now;
            }
        }
        if rtx == NONE {
            q.snd_nxt += 1;
        }
        let hash = match q.uet.as_deref_mut() {
            Some(u) => {
                if rtx != NONE {
                    u.selective_retransmits += 1;
                    self.stats.selective_retransmits += 1;
                }
                u.on_send(psn, now, payload, q.hash, rtx != NONE)
            }
            None => q.hash,
        };
        let pkt = Packet {
            qp: qi,
            psn,
            wire_bytes: wire as u16,
            payload: payload as u16,
            kind: Kind::Data,
            class: q.class,
            pcp: q.pcp,
            ecn: if q.ect { ECT0 } else { NOT_ECT },
            dst: q.dst,
            hash,
            in_port: NONE,
            next: NONE,
            next_gap: u32::MAX,
            in_prio: 0,
            enq_time: now,
        };
        // Pace by the QP's congestion control (DCQCN's rate, IB CC's CCT delay), never faster
        // than the port. (Without one, or with a window only, the port alone paces the QP.)
        if let Some(cc) = &mut q.cc {
            let p = &self.host.cc_params[prof];
            cc.on_sent(now, wire, p);
            if let Some(gap) = cc.send_gap(wire, ser_time(&self.ports[port as usize], wire), p) {
                q.pacer.sent_with_gap(now, wire, gap);
            }
        }
        if !q.rto_armed {
            // The transport's own timeout (Linux TCP's, UET's) or the NIC profile's.
            let uet = q.uet.is_some().then(|| self.m.nics[prof].uet.rto_after(q.timeouts_in_row));
            if let Some(rto) = uet.or(q.cc.as_ref().and_then(|c| c.rto())).or(self.m.nics[prof].retransmit_timeout) {
                q.rto_armed = true;
                q.rto_gen = q.rto_gen.wrapping_add(1);
                q.last_progress = now;
                let gen = q.rto_gen;
                self.q.push(now + rto, Ev::Rto { qp: qi, gen });
            }
        }
        self.stats.data_sent += 1;
        self.stats.sent += 1;
        let id = self.alloc_pkt(pkt);
        if self.int_on {
            self.int_slot(id).n = 0;
        }
        self.put_on_wire(port, id);
    }

    /// A packet reaches a RoCE NIC: taken at once, or while the host does not drain held in
    /// its receive buffer (pausing the priority at XOFF, dropping when full).
    #[inline]
    pub(super) fn host_arrive_eth(&mut self, nic: u32, pkt: u32) {
        let n = &mut self.host.nics[nic as usize];
        if n.stalled && self.pkts.get(pkt).kind == Kind::Data {
            let size = self.pkts.get(pkt).wire_bytes as u64;
            let prof = &self.m.nics[n.profile];
            if n.rx_bytes + size > prof.rx_buffer_bytes {
                n.st.rx_discards += 1;
                let port = n.port;
                self.drop_pkt(
                    port,
                    self.queues.classes[self.pkts.get(pkt).class as usize].queue,
                    pkt,
                    DropReason::Buffer,
                );
                return;
            }
            n.rx_bytes += size;
            n.rx_q.push_back(pkt);
            let prio = self.pkts.get(pkt).pcp;
            if n.rx_bytes >= prof.rx_xoff_bytes && !n.rx_xoff[prio as usize] && prof.qos.pfc_mask & (1 << prio) != 0 {
                n.rx_xoff[prio as usize] = true;
                let port = n.port;
                self.send_pause(port, prio);
            }
            // A slow drain takes it in its turn (a full stall holds it until resumed).
            self.drain_next(nic);
            return;
        }
        self.host_receive(nic, pkt);
    }

    #[inline]
    pub(super) fn host_receive(&mut self, nic: u32, pkt: u32) {
        let now = self.now;
        let p = *self.pkts.get(pkt);
        if self.int_on {
            // (The slot may be reused by the ACK this packet asks for.)
            self.int_rx = *self.int_slot(pkt);
        }
        self.free_pkt(pkt);
        self.stats.delivered += 1;
        let qi = p.qp;
        if self.host.qps[qi as usize].uet.is_some() {
            // The Ultra Ethernet transport's own receiver and sender (`engine::uet`).
            self.uet_receive(nic, &p);
            self.maybe_retire(qi);
            return;
        }
        match p.kind {
            Kind::Data => {
                self.stats.data_delivered += 1;
                if p.ecn == CE {
                    self.ce_received(nic, qi, p.pcp);
                }
                let mut message_done = None;
                let q = &mut self.host.qps[qi as usize];
                // Out-of-order placement (InfiniBand over adaptive routing, RoCE under a
                // per-packet load balancing mode): how far ahead a packet is placed.
                let window = q.ooo_window;
                // Linux TCP's receiver: SACK (what arrives past a hole is kept) and delayed
                // ACKs (every second segment, RFC 5681 §4.2).
                let linux = matches!(q.cc, Some(Cc::Cubic(_)));
                let ack_iv = if linux { 2 } else { self.opts.ack_interval.max(1) };
                if linux && p.psn > q.rcv_nxt {
                    // Kept, and answered at once by a duplicate ACK whose SACK block names the
                    // hole: a NAK of `rcv_nxt`, once per hole.
                    if p.psn < q.npkts && !q.ooo_has(p.psn) {
                        q.st.out_of_sequence += 1;
                        self.stats.out_of_order += 1;
                        q.ooo_set(p.psn);
                        q.ooo_held += 1;
                    } else {
                        q.st.duplicate += 1;
                    }
                    if q.nak_for != q.rcv_nxt {
                        q.nak_for = q.rcv_nxt;
                        let psn = q.rcv_nxt;
                        self.send_sack(qi, psn);
                    }
                } else if window > 0 && p.psn > q.rcv_nxt && p.psn - q.rcv_nxt < window {
                    // Out-of-order placement (InfiniBand RC over adaptive routing, ConnectX's
                    // OOO data placement on RoCE): a packet ahead of the next expected one,
                    // within the window, is kept (placed) and counted, with no NAK and no
                    // go-back-N. (Past the window, or with none, a gap means a loss: NAK and
                    // go-back-N below.)
                    if p.psn < q.npkts && !q.ooo_has(p.psn) {
                        q.st.out_of_sequence += 1;
                        self.stats.out_of_order += 1;
                        q.ooo_set(p.psn);
                    } else {
                        q.st.duplicate += 1;
                    }
                } else if p.psn == q.rcv_nxt {
                    q.rcv_nxt += 1;
                    q.nak_for = NONE;
                    q.st.bytes_delivered += p.payload as u64;
                    self.stats.payload_delivered += p.payload as u64;
                    q.since_ack += 1;
                    if window > 0 || linux {
                        // Packets received ahead now in order.
                        while q.rcv_nxt < q.npkts && q.ooo_take(q.rcv_nxt) {
                            let b = q.payload_of(q.rcv_nxt) as u64;
                            q.rcv_nxt += 1;
                            q.st.bytes_delivered += b;
                            self.stats.payload_delivered += b;
                            q.since_ack += 1;
                            q.ooo_held = q.ooo_held.saturating_sub(1);
                        }
                    }
                    if linux && q.ooo_held > 0 && q.rcv_nxt < q.npkts {
                        // A hole filled, another behind it (its SACK blocks show it): the
                        // cumulative ACK and the next hole go back at once.
                        q.since_ack = 0;
                        q.nak_for = q.rcv_nxt;
                        let psn = q.rcv_nxt;
                        self.send_sack(qi, psn);
                    }
                    let q = &mut self.host.qps[qi as usize];
                    if linux {
                        if now.0.saturating_sub(q.last_rx.0) > QUICKACK_AFTER.0 {
                            q.quickacks = QUICKACKS;
                        }
                        q.last_rx = now;
                    }
                    let quick = linux && q.quickacks > 0 && q.since_ack > 0;
                    if quick {
                        q.quickacks -= 1;
                    }
                    let last = q.rcv_nxt == q.npkts;
                    if last && q.finish.is_none() {
                        q.finish = Some(now);
                        if let Some(p) = &mut self.part {
                            p.end_done(qi);
                        }
                        let fl = q.flow as usize;
                        // (Zero already when another QP of the flow gave up: reported then.)
                        if self.flow_rx_left[fl] > 0 {
                            self.flow_rx_left[fl] -= 1;
                            if self.flow_rx_left[fl] == 0 && !self.flow_failed[fl] {
                                message_done = Some(fl as u32);
                            }
                        }
                    }
                    if last || quick || q.since_ack >= ack_iv {
                        q.since_ack = 0;
                        let psn = q.rcv_nxt - 1;
                        self.send_ctrl(qi, Kind::Ack, psn);
                    } else if linux && q.since_ack == 1 {
                        // A lone segment is acknowledged with the next one, or when Linux's
                        // delayed-ACK timer fires (`TCP_DELACK_MIN`, 40 ms).
                        let psn = q.rcv_nxt;
                        self.push_qp_timer(now + DELAYED_ACK, Ev::DelayedAck { qp: qi, psn }, qi);
                    }
                } else if p.psn > q.rcv_nxt {
                    q.st.out_of_sequence += 1;
                    if q.nak_for != q.rcv_nxt {
                        q.nak_for = q.rcv_nxt;
                        let psn = q.rcv_nxt;
                        self.send_ctrl(qi, Kind::Nak, psn);
                    }
                } else {
                    q.st.duplicate += 1;
                    let psn = q.rcv_nxt - 1;
                    self.send_ctrl(qi, Kind::Ack, psn);
                }
                if let Some(flow) = message_done {
                    self.notify(Observed::MessageDone { time: now, flow });
                    if self.deliveries_wanted {
                        self.deliver(flow);
                    }
                }
            }
            Kind::Ack | Kind::Nak => {
                let q = &mut self.host.qps[qi as usize];
                let (old_una, snd_max) = (q.snd_una, q.snd_nxt);
                let new_una = if p.kind == Kind::Ack { p.psn + 1 } else { p.psn };
                if new_una > q.snd_una {
                    q.snd_una = new_una;
                    q.last_progress = now;
                    q.timeouts_in_row = 0;
                    // Linux re-arms its timer at each ACK of new data, at its current RTO
                    // (`tcp_rearm_rto`): the first one, armed before any RTT sample, was 1 s.
                    if let (true, Some(rto)) = (q.rto_armed, q.cc.as_ref().and_then(|c| c.rto())) {
                        q.rto_gen = q.rto_gen.wrapping_add(1);
                        let gen = q.rto_gen;
                        self.q.push(now + rto, Ev::Rto { qp: qi, gen });
                    }
                }
                // An ACK delayed past a timeout can acknowledge more than was resent.
                q.snd_nxt = q.snd_nxt.max(q.snd_una);
                if p.kind == Kind::Nak && matches!(q.cc, Some(Cc::Cubic(_))) {
                    // Linux TCP with SACK: only the hole is resent; what the receiver holds
                    // past it is not.
                    q.st.naks += 1;
                    // The NAK's payload field carries the hole's length (its SACK block). A
                    // hole already being resent is not resent again (the receiver names it at
                    // each packet that partly fills it); only a longer one extends the range.
                    if p.psn >= q.snd_una && p.psn < q.snd_nxt {
                        let end = p.psn.saturating_add(p.payload.max(1) as u32);
                        if q.rtx_end != NONE && p.psn < q.rtx_end {
                            if end > q.rtx_end {
                                if q.rtx == NONE {
                                    q.rtx = q.rtx_end;
                                }
                                q.rtx_end = end;
                            }
                        } else {
                            q.rtx = p.psn;
                            q.rtx_end = end;
                        }
                    }
                } else if p.kind == Kind::Nak {
                    q.st.naks += 1;
                    // (A stale NAK for a PSN already acknowledged rewinds nothing.)
                    if q.snd_nxt > p.psn && p.psn >= q.snd_una {
                        q.snd_nxt = p.psn;
                    }
                }
                // The timed packet's sample, when this acknowledges it; a rewind past it
                // drops it (its copy would be timed from the first send).
                let mut rtt = None;
                if q.rtt_psn != NONE {
                    if q.snd_una > q.rtt_psn {
                        rtt = Some(now - q.rtt_sent);
                        q.rtt_psn = NONE;
                    } else if q.snd_nxt <= q.rtt_psn {
                        q.rtt_psn = NONE;
                    }
                }
                let mut todos = [Todo::Nothing; 2];
                let mut stepped = false;
                if let Some(cc) = q.cc.as_mut().filter(|c| c.feedback().acks) {
                    let prof = self.host.nics[q.src_nic as usize].profile;
                    let params = &self.host.cc_params[prof];
                    // The ACK's payload field carries the CE marks it echoes.
                    let ack = Ack {
                        newly_acked: q.snd_una.saturating_sub(old_una),
                        ce_echoed: p.payload as u32,
                        snd_una: q.snd_una,
                        snd_max,
                        acked_psn: new_una.saturating_sub(1),
                        rtt,
                        int: self.int_rx.hops(),
                    };
                    todos[0] = cc.on_ack(now, &ack, params);
                    if p.kind == Kind::Nak {
                        todos[1] = cc.on_loss(now, Loss::Nak { snd_una: q.snd_una, snd_max }, params);
                    }
                    stepped = true;
                }
                let src_nic = q.src_nic;
                if q.snd_una >= q.npkts && q.sender_done.is_none() {
                    self.sender_done(qi);
                }
                if stepped {
                    let gen = self.host.qps[qi as usize].cc.as_ref().map_or(0, |c| c.increase_gen());
                    for todo in todos {
                        self.apply_todo(qi, todo, gen);
                    }
                }
                // Kick the QP's own NIC: on a multi-port host the ACK may arrive on another port.
                self.nic_try_send(src_nic);
            }
            Kind::Cnp => {
                // A RoCE CNP, or on InfiniBand a BECN.
                self.host.nics[nic as usize].st.cnp_received += 1;
                let prof = self.host.nics[nic as usize].profile;
                let q = &mut self.host.qps[qi as usize];
                q.st.cnps += 1;
                if let Some(cc) = &mut q.cc {
                    let todo = cc.on_cnp(now, &self.host.cc_params[prof]);
                    let gen = cc.increase_gen();
                    self.apply_todo(qi, todo, gen);
                }
            }
        }
        self.maybe_retire(qi);
    }

    /// Every packet of QP `qi` is acknowledged (RoCE or UET): its congestion control stops,
    /// its timer is cancelled, and it leaves its NIC's active list.
    pub(super) fn sender_done(&mut self, qi: u32) {
        let now = self.now;
        let q = &mut self.host.qps[qi as usize];
        if let Some(cc) = &mut q.cc {
            cc.on_done();
        }
        q.sender_done = Some(now);
        q.rto_gen = q.rto_gen.wrapping_add(1);
        if let Some(p) = &mut self.part {
            p.end_done(qi);
        }
        self.qps_left -= 1;
        self.active_qps -= 1;
        let list = &mut self.host.nics[q.src_nic as usize].active;
        if let Some(pos) = list.iter().position(|x| *x == qi) {
            list.remove(pos);
        }
    }

    /// After a congestion-control step: re-time the QP's pending send at its new rate or
    /// delay (up or down), wake its NIC if that send moved earlier, and arm the timer the step
    /// asks for.
    pub(super) fn apply_todo(&mut self, qp: u32, todo: Todo, gen: u32) {
        let q = &mut self.host.qps[qp as usize];
        if let Some(cc) = &mut q.cc {
            let nic = q.src_nic as usize;
            let (port, prof) = (self.host.nics[nic].port, self.host.nics[nic].profile);
            let wire = q.pacer.last_wire();
            let ser = ser_time(&self.ports[port as usize], wire);
            if let Some(gap) = cc.regap(wire, ser, &self.host.cc_params[prof]) {
                if let Some(at) = q.pacer.regap(gap) {
                    let (nic, at) = (q.src_nic, at.max(self.now));
                    self.wake_nic_at(nic, at);
                }
            }
        }
        match todo {
            Todo::Nothing => {}
            Todo::ArmIncrease(t) => self.push_qp_timer(t, Ev::RateIncrease { qp, gen }, qp),
            Todo::ArmReduce(t) => self.push_qp_timer(t, Ev::RateReduce { qp }, qp),
        }
    }

    pub(super) fn on_rate_increase(&mut self, qi: u32, gen: u32) {
        let now = self.now;
        let prof = self.host.nics[self.host.qps[qi as usize].src_nic as usize].profile;
        let q = &mut self.host.qps[qi as usize];
        if q.sender_done.is_some() {
            return;
        }
        if let Some(cc) = &mut q.cc {
            if cc.increase_gen() != gen {
                return;
            }
            let todo = cc.on_timer(now, Timer::Increase, &self.host.cc_params[prof]);
            let g = cc.increase_gen();
            self.apply_todo(qi, todo, g);
        }
    }

    pub(super) fn on_rate_reduce(&mut self, qi: u32) {
        let now = self.now;
        let prof = self.host.nics[self.host.qps[qi as usize].src_nic as usize].profile;
        let q = &mut self.host.qps[qi as usize];
        if let Some(cc) = &mut q.cc {
            let todo = cc.on_timer(now, Timer::Check, &self.host.cc_params[prof]);
            let g = cc.increase_gen();
            self.apply_todo(qi, todo, g);
        }
    }

    pub(super) fn on_rto(&mut self, qi: u32, gen: u32) {
        let now = self.now;
        let prof = self.host.nics[self.host.qps[qi as usize].src_nic as usize].profile;
        let nic = &self.m.nics[prof];
        let q = &mut self.host.qps[qi as usize];
        // The transport's own timeout and retries (Linux TCP's, UET's: `engine::uet`), or the
        // NIC profile's.
        let own = match q.uet {
            Some(_) => Some(Self::uet_timer(nic, q.timeouts_in_row)),
            None => q.cc.as_ref().map(|c| (c.rto(), c.max_timeouts())),
        };
        let rto = own.and_then(|o| o.0).or(nic.retransmit_timeout).expect("armed only with a timeout");
        let retry_cnt = own.and_then(|o| o.1).unwrap_or(nic.retry_cnt as u32);
        if q.rto_gen != gen || q.sender_done.is_some() {
            return;
        }
        if q.snd_una >= q.snd_nxt && q.snd_nxt >= q.npkts {
            q.rto_armed = false;
            return;
        }
        if q.snd_una >= q.snd_nxt {
            // Nothing outstanding (paced or paused): wait.
            q.last_progress = now;
            if q.uet.as_ref().is_some_and(|u| u.rccc && u.credit <= 0) {
                // (A UET sender starved of RCCC grants, one lost on the way: `engine::uet`.)
                self.rccc_starved(qi);
                self.q.push(now + rto, Ev::Rto { qp: qi, gen });
                return;
            }
        }
        if now >= q.last_progress + rto {
            if let Some(cc) = q.cc.as_mut().filter(|c| c.feedback().acks) {
                // (No timer or rate change follows a timeout in the algorithms that read it.)
                cc.on_loss(now, Loss::Timeout, &self.host.cc_params[prof]);
            }
            q.st.timeouts += 1;
            q.timeouts_in_row += 1;
            if q.timeouts_in_row > retry_cnt {
                // Like an RC QP whose retry count is exhausted: the QP goes to the error state.
                q.st.failed = true;
                if let Some(cc) = &mut q.cc {
                    cc.on_done();
                }
                q.sender_done = Some(now);
                self.qps_left -= 1;
                self.active_qps -= 1;
                let (src_nic, fl) = (q.src_nic, q.flow as usize);
                // The workload hears once that the message will not arrive.
                if !self.flow_failed[fl] && self.flow_rx_left[fl] > 0 {
                    self.flow_failed[fl] = true;
                    self.flow_rx_left[fl] = 0;
                    if self.deliveries_wanted {
                        self.deliver(fl as u32);
                    }
                }
                let list = &mut self.host.nics[src_nic as usize].active;
                if let Some(pos) = list.iter().position(|x| *x == qi) {
                    list.remove(pos);
                }
                return;
            }
            if q.uet.is_some() {
                // UET resends only what was never acknowledged, not everything past the edge.
                self.uet_timeout(qi);
            } else {
                q.snd_nxt = q.snd_una;
            }
            let q = &mut self.host.qps[qi as usize];
            (q.rtx, q.rtx_end) = (NONE, NONE);
            q.last_progress = now;
            let nic = q.src_nic;
            // (A transport that backs off has doubled its timeout in `on_loss`; UET's doubles
            // with the timeouts in a row.)
            let rto = match q.uet {
                Some(_) => self.m.nics[prof].uet.rto_after(q.timeouts_in_row),
                None => q.cc.as_ref().and_then(|c| c.rto()).unwrap_or(rto),
            };
            self.q.push(now + rto, Ev::Rto { qp: qi, gen });
            self.nic_try_send(nic);
        } else {
            let at = q.last_progress + rto;
            self.q.push(at, Ev::Rto { qp: qi, gen });
        }
    }

    /// Linux TCP's receiver reports a hole at `psn` (its `rcv_nxt`): a NAK that acknowledges
    /// everything below and whose payload field carries the hole's length up to the next
    /// packet it holds, as a SACK block would tell the sender.
    fn send_sack(&mut self, qi: u32, psn: u32) {
        let q = &self.host.qps[qi as usize];
        let hole = (q.ooo_next_after(psn) - psn).min(u16::MAX as u32) as u16;
        self.send_ctrl_carrying(qi, Kind::Nak, psn, Some(hole));
    }

    /// Linux TCP's delayed-ACK timer of QP `qi`'s receiver, armed at `rcv_nxt == psn`: the
    /// lone segment still unacknowledged is acknowledged now (unless the next one did it).
    pub(super) fn on_delayed_ack(&mut self, qi: u32, psn: u32) {
        let q = &mut self.host.qps[qi as usize];
        if q.since_ack == 0 || q.rcv_nxt != psn || psn == 0 {
            return;
        }
        q.since_ack = 0;
        self.send_ctrl(qi, Kind::Ack, psn - 1);
    }

    /// A control packet (ACK/NAK/CNP) from the receiver of QP `qi` back to its sender.
    pub(super) fn ctrl_packet(&self, qi: u32, kind: Kind, psn: u32, class: u8, pcp: u8, wire: u32) -> Packet {
        let q = &self.host.qps[qi as usize];
        Packet {
            qp: qi,
            psn,
            wire_bytes: wire as u16,
            payload: 0,
            kind,
            class,
            pcp,
            ecn: NOT_ECT,
            dst: q.src,
            hash: q.hash,
            in_port: NONE,
            next: NONE,
            next_gap: u32::MAX,
            in_prio: 0,
            enq_time: self.now,
        }
    }

    #[inline]
    pub(super) fn send_ctrl(&mut self, qi: u32, kind: Kind, psn: u32) {
        self.send_ctrl_carrying(qi, kind, psn, None);
    }

    /// `send_ctrl` with a value in the payload field (a SACK's hole length).
    fn send_ctrl_carrying(&mut self, qi: u32, kind: Kind, psn: u32, carried: Option<u16>) {
        let q = &self.host.qps[qi as usize];
        let (nic, class, pcp) = (q.dst_nic, q.class, q.pcp);
        let int_bytes = self.host.qps[qi as usize].int_bytes as u32;
        let wire = (self.hdr.ack + int_bytes).max(self.hdr.ack_floor);
        let mut pkt = self.ctrl_packet(qi, kind, psn, class, pcp, wire);
        if let Some(v) = carried {
            pkt.payload = v;
        } else if self.host.qps[qi as usize].cc.as_ref().is_some_and(|c| c.feedback().echo_ce) {
            pkt.payload = std::mem::take(&mut self.host.qps[qi as usize].ce_unechoed);
        }
        self.stats.sent += 1;
        let id = self.alloc_pkt(pkt);
        if self.int_on && self.host.qps[qi as usize].cc.as_ref().is_some_and(|c| c.feedback().int) {
            // The receiver echoes the INT stack of the data packet it answers.
            let stack = self.int_rx;
            *self.int_slot(id) = stack;
        }
        self.host.nics[nic as usize].ack_q.push_back(id);
        self.nic_try_send(nic);
    }

    /// A RoCE receiver got a CE-marked packet of QP `qi` on priority `pcp`: a TCP-like
    /// receiver echoes it on its next ACK; a notification point sends a CNP, at most one per
    /// interval per QP (after the NIC's CNP delay, if any).
    pub(super) fn ce_received_eth(&mut self, nic: u32, qi: u32, pcp: u8) {
        let now = self.now;
        let prof_i = self.host.nics[nic as usize].profile;
        let prof = &self.m.nics[prof_i];
        if self.host.qps[qi as usize].cc.as_ref().is_some_and(|c| c.feedback().echo_ce) {
            // A TCP-like receiver echoes the mark on its next ACK (no CNP).
            let q = &mut self.host.qps[qi as usize];
            q.ce_unechoed = q.ce_unechoed.saturating_add(1);
        } else if prof.qos.ecn_np_mask & (1 << pcp) != 0 {
            let q = &mut self.host.qps[qi as usize];
            let iv = self.host.cc_params[prof_i].dcqcn.cnp_interval;
            if q.last_cnp.is_none_or(|t| now >= t + iv) {
                q.last_cnp = Some(now);
                let delay = self.host.cc_params[prof_i].dcqcn.cnp_delay;
                if delay == SimTime::ZERO {
                    self.send_cnp(qi);
                } else {
                    self.push_qp_timer(now + delay, Ev::CnpSend { qp: qi }, qi);
                }
            }
        }
    }

    /// The receiver of QP `qi` notifies its sender of congestion: a RoCE CNP in the NIC's CNP
    /// class and priority, or on InfiniBand a BECN on the QP's own VL.
    pub(super) fn send_cnp(&mut self, qi: u32) {
        let q = &self.host.qps[qi as usize];
        let nic = q.dst_nic;
        let (class, pcp) = self.cnp_class(qi, nic);
        let pkt = self.ctrl_packet(qi, Kind::Cnp, 0, class, pcp, self.hdr.cnp);
        self.stats.sent += 1;
        self.host.nics[nic as usize].st.cnp_sent += 1;
        let flow = self.host.qps[qi as usize].flow;
        self.notify(Observed::CnpSent { time: self.now, flow });
        let id = self.alloc_pkt(pkt);
        self.host.nics[nic as usize].cnp_q.push_back(id);
        self.nic_try_send(nic);
    }
}

#[cfg(test)]
mod tests {
    //! The NIC's sending and receiving rules against values worked out by hand: a 4,096 B
    //! payload is a 4,178 B frame (82 B of preamble/IFG, Ethernet, IPv4, UDP, BTH and ICRC),
    //! 80 ps a byte at 100 Gb/s.
    use super::super::test_support::{idle_sim as sim, model};
    use super::*;

    /// One switch, h0 and h1 on 100 Gb/s links (2 m), 4,096 B MTU, DCQCN with CNPs at most
    /// every 50 µs per QP and sent at once; no watchdog (nothing scheduled but what a test does).
    fn pair() -> Model {
        pair_with("")
    }

    /// `pair` with more `[nic]` keys.
    fn pair_with(nic: &str) -> Model {
        let text = format!(
            r#"[fabric]
name = "nic"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {{ name = "h0", kind = "host" }}, {{ name = "h1", kind = "host" }} ]
link = [ {{ a = "h0", b = "sw0", speed_gbps = 100, length_m = 2 }}, {{ a = "h1", b = "sw0", speed_gbps = 100, length_m = 2 }} ]
[nic]
mtu = 4096
{nic}
[nic.dcqcn]
cnp_interval_us = 50
cnp_delay_us = 0
[qos.pfc_watchdog]
enabled = false
"#
        );
        model("nic.toml", &text)
    }

    /// An engine holding one message of `size` bytes h0 → h1 on QP 0, created but not started
    /// (its start event is taken off), so only what a test calls happens.
    fn with_message(m: &Model, size: u64) -> Sim<'_> {
        let mut s = sim(m);
        let (h0, h1) = (m.node_by_name("h0").unwrap(), m.node_by_name("h1").unwrap());
        s.post_flow(FlowSpec {
            src: h0,
            dst: h1,
            size_bytes: size,
            start: SimTime::ZERO,
            class: m.qos.rdma_class(),
            qps: 1,
            origin: usize::MAX,
            tag: 0,
            sport: Some(49_152),
            transport: crate::traffic::Transport::Rdma,
        });
        assert_eq!(s.q.pop(), Some((SimTime::ZERO, Ev::QpStart { qp: 0 })));
        assert_eq!(s.q.len(), 0);
        s
    }

    /// The packets on `port`'s wire, oldest first: (PSN, payload, wire bytes).
    fn on_wire(s: &Sim, port: u32) -> Vec<(u32, u16, u16)> {
        let mut out = Vec::new();
        let mut id = s.ports[port as usize].wire_head;
        while id != NONE {
            let p = s.pkts.get(id);
            out.push((p.psn, p.payload, p.wire_bytes));
            id = p.next;
        }
        out
    }

    /// Sends QP 0's next packet when its port is free, as the NIC would.
    fn send_next(s: &mut Sim) {
        let nic = s.host.qps[0].src_nic;
        let port = s.host.nics[nic as usize].port;
        s.now = s.now.max(s.ports[port as usize].busy_until);
        s.send_data(nic, 0);
    }

    fn set_rate(s: &mut Sim, bps: f64) {
        match s.host.qps[0].cc.as_mut().expect("DCQCN is on") {
            Cc::Paper(c) => c.state.rc = bps,
            Cc::Mlx5(c) => c.state.rc = bps,
            other => panic!("not DCQCN: {other:?}"),
        }
    }

    #[test]
    fn a_message_is_cut_into_mtu_packets_the_remainder_last() {
        let m = pair();
        let mut s = with_message(&m, 10_000);
        // 10,000 B at 4,096 B a packet: 4,096 + 4,096 + 1,808.
        assert_eq!(s.host.qps[0].npkts, 3);
        for _ in 0..3 {
            send_next(&mut s);
        }
        let port = s.host.nics[s.host.qps[0].src_nic as usize].port;
        assert_eq!(on_wire(&s, port), vec![(0, 4_096, 4_178), (1, 4_096, 4_178), (2, 1_808, 1_890)]);
        // Back to back at line rate: the last left at 2 × 334,240 ps and takes 151,200 ps.
        assert_eq!(s.now, SimTime(668_480));
        assert_eq!(s.ports[port as usize].busy_until, SimTime(819_680));
        // At line rate the pacer adds no gap: the port alone paces the QP.
        assert_eq!(s.host.qps[0].pacer.next_send, SimTime(668_480));
        assert_eq!(s.host.qps[0].snd_nxt, 3);
        assert_eq!((s.stats.data_sent, s.stats.retransmitted), (3, 0));
    }

    #[test]
    fn below_line_rate_the_next_packet_waits_its_serialization_time_at_the_rate() {
        let m = pair();
        let mut s = with_message(&m, 100_000);
        let nic = s.host.qps[0].src_nic;
        set_rate(&mut s, 25e9);
        s.now = SimTime(1_000_000);
        send_next(&mut s);
        // 4,178 B at 25 Gb/s: 4,178 × 320 ps = 1,336,960 ps after it left.
        assert_eq!(s.host.qps[0].pacer.next_send, SimTime(2_336_960));
        // The QP is active; when its port frees (334,240 ps later) it is not yet due, so the
        // NIC sleeps until it is.
        s.host.nics[nic as usize].active.push(0);
        s.now = SimTime(1_334_240);
        s.nic_try_send(nic);
        assert_eq!(s.host.qps[0].snd_nxt, 1, "nothing sent early");
        assert_eq!(s.host.nics[nic as usize].wake_at, SimTime(2_336_960));
        // The rate recovers to 50 Gb/s: the pending send is re-timed from the last one,
        // 4,178 × 160 ps = 668,480 ps after 1 µs: due at 1,668,480 ps instead of 2,336,960,
        // so the NIC must wake earlier than it planned.
        set_rate(&mut s, 50e9);
        let inc = s.host.qps[0].cc.as_ref().unwrap().increase_gen();
        s.apply_todo(0, Todo::Nothing, inc);
        assert_eq!(s.host.qps[0].pacer.next_send, SimTime(1_668_480));
        assert_eq!(s.host.nics[nic as usize].wake_at, SimTime(1_668_480));
        // Scheduled: the port's TxDone, the packet's arrival at the switch 10 ns later, the
        // new wake-up, and the old one, now stale (its generation is behind the NIC's).
        let (port, peer) = (s.host.nics[nic as usize].port, s.ports[s.host.nics[nic as usize].port as usize].peer);
        assert_eq!(s.q.pop(), Some((SimTime(1_334_240), Ev::TxDone { port })));
        assert!(
            matches!(s.q.pop(), Some((SimTime(1_344_240), Ev::WireArrive { port: p, peer: q, .. })) if (p, q) == (port, peer))
        );
        assert_eq!(s.q.pop(), Some((SimTime(1_668_480), Ev::NicWake { host: nic, gen: 2 })));
        assert_eq!(s.q.pop(), Some((SimTime(2_336_960), Ev::NicWake { host: nic, gen: 1 })));
        assert_eq!(s.host.nics[nic as usize].wake_gen, 2);
    }

    #[test]
    fn the_window_closes_on_bytes_in_flight_and_scales_with_the_rate() {
        let m = pair();
        let mut s = with_message(&m, 100_000);
        s.host.qps[0].window = 8_192; // two MTUs
        assert!(s.host.qps[0].window_open());
        send_next(&mut s);
        assert!(s.host.qps[0].window_open(), "4,096 B in flight < 8,192");
        send_next(&mut s);
        assert!(!s.host.qps[0].window_open(), "8,192 B in flight: full");
        s.host.qps[0].snd_una = 1;
        assert!(s.host.qps[0].window_open(), "an ACK for PSN 0 leaves 4,096 B in flight");
        // Scaled by rate / line: at 50 Gb/s of 100 the window is 4,096 B, full again...
        s.host.qps[0].window_var = true;
        set_rate(&mut s, 50e9);
        assert!(!s.host.qps[0].window_open());
        // ...at 75 Gb/s it is 6,144 B, and 4,096 B in flight fit.
        set_rate(&mut s, 75e9);
        assert!(s.host.qps[0].window_open());
    }

    /// A data packet of QP 0 with PSN `psn` arrives at h1, CE-marked if `ce`.
    fn receive(s: &mut Sim, psn: u32, ce: bool) {
        let (class, pcp, dst) = (s.host.qps[0].class, s.host.qps[0].pcp, s.host.qps[0].dst);
        let pkt = s.pkts.alloc(Packet {
            enq_time: s.now,
            qp: 0,
            psn,
            dst,
            hash: 0,
            in_port: NONE,
            next: NONE,
            next_gap: u32::MAX,
            wire_bytes: 4_178,
            payload: 4_096,
            kind: Kind::Data,
            class,
            pcp,
            ecn: if ce { CE } else { ECT0 },
            in_prio: 0,
        });
        let nic = s.host.qps[0].dst_nic;
        s.host_receive(nic, pkt);
    }

    #[test]
    fn at_most_one_cnp_per_interval_per_qp() {
        let m = pair();
        let mut s = with_message(&m, 100_000);
        let rx = s.host.qps[0].dst_nic as usize;
        receive(&mut s, 0, true);
        assert_eq!(s.host.nics[rx].st.cnp_sent, 1, "the first CE mark answers at once");
        // 1 ps short of the 50 µs interval: marked, counted, not answered.
        s.now = SimTime(49_999_999);
        receive(&mut s, 1, true);
        assert_eq!((s.host.nics[rx].st.ecn_marked_rx, s.host.nics[rx].st.cnp_sent), (2, 1));
        // An unmarked packet at 50 µs asks for nothing; a marked one does.
        s.now = SimTime(50_000_000);
        receive(&mut s, 2, false);
        assert_eq!(s.host.nics[rx].st.cnp_sent, 1);
        receive(&mut s, 3, true);
        assert_eq!((s.host.nics[rx].st.ecn_marked_rx, s.host.nics[rx].st.cnp_sent), (3, 2));
    }

    #[test]
    fn the_receiver_acks_every_fourth_packet_naks_a_gap_once_and_reacks_duplicates() {
        let m = pair();
        let mut s = with_message(&m, 100_000);
        // Hold h1's port so that the ACK/NAKs stay queued where the test can read them.
        let port = s.host.nics[s.host.qps[0].dst_nic as usize].port;
        s.ports[port as usize].busy_until = SimTime(1 << 50);
        for psn in 0..4 {
            receive(&mut s, psn, false);
        }
        // PSN 5 while 4 is expected: one NAK for 4; PSN 6 repeats no NAK (go-back-N keeps
        // neither); then 4 arrives (one in order since the ACK: no ACK yet); then a duplicate
        // of 2 is answered with an ACK of everything so far (PSN 4).
        for psn in [5, 6, 4, 2] {
            receive(&mut s, psn, false);
        }
        let ctrl: Vec<(Kind, u32)> = s.host.nics[s.host.qps[0].dst_nic as usize]
            .ack_q
            .iter()
            .map(|&id| (s.pkts.get(id).kind, s.pkts.get(id).psn))
            .collect();
        assert_eq!(ctrl, vec![(Kind::Ack, 3), (Kind::Nak, 4), (Kind::Ack, 4)]);
        let q = &s.host.qps[0];
        assert_eq!((q.rcv_nxt, q.st.out_of_sequence, q.st.duplicate), (5, 2, 1));
        assert_eq!(q.st.bytes_delivered, 5 * 4_096);
        assert_eq!(s.pkts.get(s.host.nics[q.dst_nic as usize].ack_q[0]).wire_bytes as u32, ACK_WIRE);
    }

    /// An ACK or NAK for QP 0 arrives back at h0.
    fn ack(s: &mut Sim, kind: Kind, psn: u32) {
        let (class, pcp) = (s.host.qps[0].class, s.host.qps[0].pcp);
        let pkt = s.ctrl_packet(0, kind, psn, class, pcp, ACK_WIRE);
        let id = s.pkts.alloc(pkt);
        let nic = s.host.qps[0].src_nic;
        s.host_receive(nic, id);
    }

    #[test]
    fn acks_advance_the_sender_and_a_nak_rewinds_it_to_the_missing_psn() {
        let m = pair();
        let mut s = with_message(&m, 100_000);
        for _ in 0..3 {
            send_next(&mut s);
        }
        let una_nxt = |s: &Sim| (s.host.qps[0].snd_una, s.host.qps[0].snd_nxt);
        ack(&mut s, Kind::Ack, 0);
        assert_eq!(una_nxt(&s), (1, 3), "ACK 0: PSN 0 is done");
        ack(&mut s, Kind::Nak, 1);
        assert_eq!(una_nxt(&s), (1, 1), "NAK 1: 1 is missing, resend from it");
        assert_eq!(s.host.qps[0].st.naks, 1);
        // The resent PSN 1 counts as a retransmission.
        send_next(&mut s);
        assert_eq!(una_nxt(&s), (1, 2));
        assert_eq!((s.host.qps[0].st.retransmitted_packets, s.stats.retransmitted), (1, 1));
        // A stale NAK for PSN 0 (already acknowledged) rewinds nothing.
        ack(&mut s, Kind::Nak, 0);
        assert_eq!(una_nxt(&s), (1, 2));
        // An ACK delayed past the rewind acknowledges PSN 2: nothing before 3 is resent.
        ack(&mut s, Kind::Ack, 2);
        assert_eq!(una_nxt(&s), (3, 3));
        assert!(s.host.qps[0].sender_done.is_none(), "25 packets, 3 acknowledged");
    }

    #[test]
    fn a_timeout_resends_from_the_oldest_unacknowledged_and_the_retry_count_ends_the_qp() {
        // 100 µs timeout, one retry.
        let m = pair_with("retransmit_timeout_us = 100\nretry_cnt = 1");
        let mut s = with_message(&m, 100_000);
        // Started, as its start event would have done.
        let nic = s.host.qps[0].src_nic;
        s.host.nics[nic as usize].active.push(0);
        s.active_qps = 1;
        send_next(&mut s);
        send_next(&mut s);
        // The first send armed the timer 100 µs out; the second did not arm another. (The
        // rest: the port's TxDone and the first frame's arrival, carrying the second's.)
        let port = s.host.nics[nic as usize].port;
        let peer = s.ports[port as usize].peer;
        let mut evs = Vec::new();
        while let Some(e) = s.q.pop() {
            evs.push(e);
        }
        assert_eq!(
            evs,
            vec![
                (SimTime(334_240), Ev::TxDone { port }),
                (SimTime(344_240), Ev::WireArrive { port, pkt: s.ports[port as usize].wire_head, peer }),
                (SimTime(100_000_000), Ev::Rto { qp: 0, gen: 1 }),
            ]
        );
        // No ACK by 100 µs: the first timeout rewinds to PSN 0 and re-arms 100 µs out. (The NIC
        // resends PSN 0 at once.)
        s.now = SimTime(100_000_000);
        s.on_rto(0, 1);
        assert_eq!((s.host.qps[0].st.timeouts, s.host.qps[0].snd_una), (1, 0));
        assert_eq!(on_wire(&s, port).last(), Some(&(0, 4_096, 4_178)), "PSN 0 again");
        assert!(!s.host.qps[0].st.failed);
        // Still nothing by 200 µs: a second timeout in a row is past retry_cnt = 1, the QP
        // gives up (the IB error state) and the message is failed once.
        s.now = SimTime(200_000_000);
        s.on_rto(0, 1);
        let q = &s.host.qps[0];
        assert_eq!((q.st.timeouts, q.st.failed, q.sender_done), (2, true, Some(SimTime(200_000_000))));
        assert!(s.flow_failed[0]);
        assert_eq!((s.flow_rx_left[0], s.active_qps, s.qps_left), (0, 0, 0));
        assert!(s.host.nics[nic as usize].active.is_empty());
    }
}
