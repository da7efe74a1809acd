//! The Ultra Ethernet transport (`[nic] transport = "uet"`), as far as rocelab models it: a
//! reliable, unordered delivery (UEC Specification 1.0, packet delivery sublayer, RUD)
//! with packet spraying, trimming and selective retransmission, under NSCC (`cc::nscc`).
//!
//! - **Spraying** (entropy values, REPS): every data packet carries its own entropy value (EV),
//!   which the switches hash instead of the QP's 5-tuple, so consecutive packets take different
//!   ECMP members. The sender picks EVs REPS-style (Bonato et al., "REPS: Recycled Entropy
//!   Packet Spraying", arXiv 2407.21625): an EV whose packet was acknowledged without a CE mark
//!   is kept in a small buffer and reused; one whose packet was marked or trimmed is forgotten;
//!   with the buffer empty a fresh random EV explores another path.
//! - **Out-of-order placement**: the receiver places each packet where it belongs (the QP's
//!   reorder bitmap, as InfiniBand's adaptive routing uses) and acknowledges it at once,
//!   echoing its CE mark: every ACK is selective.
//! - **Trimming** (the specification's packet trimming): a switch that would drop a UET data
//!   packet for want of buffer cuts it to its first `trim_bytes` and forwards it in the CNP
//!   class (strict, high priority); the receiver answers a trimmed packet with a NACK, and the
//!   sender resends exactly that packet (selective retransmission; never go-back-N). A timeout
//!   resends only what was never acknowledged.
//! - **Control ahead of data**: ACKs and NACKs also travel in the CNP class, as htsim's
//!   composite queue (`compositequeue.cpp`, which uet-htsim's switches use) serves header-only
//!   packets ahead of data.
//! - **RCCC** (`[nic.uet] rccc`, optional): past its first BDP a sender sends only what its
//!   receiver grants; the receiving NIC grants an MTU at a time, its senders in turn, keeping
//!   at most one BDP granted and not yet arrived (a receiver-paced credit loop, as uet-htsim's
//!   RCCC pull pacer). Grants ride the CNP kind, which a UET QP otherwise never receives.
//!
//! Simplified: one QP per message (no PDC pool or semantic layer); an ACK per packet, not
//! coalesced, on the QP's own hash, with no cumulative PSN or SACK bitmap (a lost ACK is
//! repaired by the timeout); RCCC without credit requests or targets; no link-level retry;
//! switches trim a UET packet as `[nic.uet] trimming` of its sender says.

use super::*;
use crate::rng::mix64;

/// Bit 7 of a packet's `ecn` byte: the packet was trimmed to its header. (The ECN codepoint,
/// bits 0–1, is cleared: a trimmed packet is never marked.)
pub(crate) const TRIMMED: u8 = 0x80;

/// The REPS entropy buffer of one sender.
#[derive(Clone, Debug)]
pub(crate) struct Reps {
    /// EVs whose packets came back unmarked, oldest first.
    cache: VecDeque<u16>,
    cap: usize,
    rng: Rng,
    /// Packets sent on a recycled EV and on a fresh one; EVs forgotten after a mark or trim.
    pub recycled: u64,
    pub fresh: u64,
    pub discarded: u64,
}

impl Reps {
    pub(crate) fn new(cap: usize, rng: Rng) -> Reps {
        Reps { cache: VecDeque::with_capacity(cap), cap: cap.max(1), rng, recycled: 0, fresh: 0, discarded: 0 }
    }

    /// The EV of the next packet: the oldest good one, else a fresh random one.
    #[inline]
    pub(crate) fn next(&mut self) -> u16 {
        match self.cache.pop_front() {
            Some(ev) => {
                self.recycled += 1;
                ev
            }
            None => {
                self.fresh += 1;
                self.rng.below(1 << 16) as u16
            }
        }
    }

    /// A packet sent on `ev` was acknowledged, `ce`-marked or not.
    #[inline]
    pub(crate) fn on_ack(&mut self, ev: u16, ce: bool) {
        if ce {
            self.discarded += 1;
            return;
        }
        if self.cache.len() == self.cap {
            self.cache.pop_front();
        }
        self.cache.push_back(ev);
    }

    /// A packet sent on `ev` was trimmed or lost: its path is congested, the EV is forgotten.
    pub(crate) fn on_trim(&mut self) {
        self.discarded += 1;
    }

    /// The EVs kept for reuse, oldest first.
    #[cfg(test)]
    pub(crate) fn cached(&self) -> impl Iterator<Item = u16> + '_ {
        self.cache.iter().copied()
    }
}

/// One send of a packet remembered until its ACK: when it left (for NSCC's RTT) and its EV.
#[derive(Clone, Copy, Debug)]
struct Sent {
    psn: u32,
    /// `SimTime::MAX`: a resend, not timed (Karn).
    at: SimTime,
    ev: u16,
}

/// The UET state of one QP (boxed on the QP: RoCE QPs carry only a null pointer).
#[derive(Clone, Debug)]
pub(crate) struct UetQp {
    pub reps: Reps,
    pub spray: bool,
    /// Bytes switches trim its packets to; 0: no trimming.
    pub trim_bytes: u16,
    /// The latest sends, by PSN modulo the ring's length (a power of two, four windows: a send
    /// older than that has lost its slot and gives no RTT sample, which costs nothing else).
    ring: Vec<Sent>,
    /// Sender: PSNs acknowledged (bit per PSN).
    acked: Vec<u64>,
    /// PSNs to resend (NACKed or timed out), not yet acknowledged.
    pub rtx_q: VecDeque<u32>,
    /// Payload bytes sent and neither acknowledged nor reported trimmed.
    pub in_flight: u64,
    /// NACKs of trimmed packets received, and packets resent on their own.
    pub nacks: u64,
    pub selective_retransmits: u64,
    /// RCCC (`[nic.uet] rccc`): the sender's bytes it may still send (its first BDP, then
    /// what the receiver grants); the receiver's bytes still to grant, bytes granted and not
    /// yet arrived, whether the QP is on its NIC's list of senders, and the grant budget.
    pub rccc: bool,
    pub credit: i64,
    demand: i64,
    scheduled_out: i64,
    listed: bool,
    budget: i64,
}

/// A receiving NIC's RCCC state: the senders it grants to, in turn, and the bytes it granted
/// that have not arrived (kept at most one BDP, so an incast's queue drains after its first
/// round trip instead of standing at N windows).
#[derive(Default)]
pub(crate) struct RcccRx {
    senders: VecDeque<u32>,
    granted_out: i64,
}

impl UetQp {
    /// The state of a QP of `size` bytes in `npkts` packets whose window holds at most
    /// `window_pkts`, over a path of `bdp` bytes.
    pub(crate) fn new(
        size: u64,
        npkts: u32,
        window_pkts: u32,
        bdp: u64,
        p: &rocelab_model::uet::Uet,
        rng: Rng,
    ) -> UetQp {
        let bdp = bdp.min(i64::MAX as u64) as i64;
        let size = size.min(i64::MAX as u64) as i64;
        // (Per QP, so an all-to-all of a million QPs must not hold a thousand sends each.)
        let ring = (npkts.min(window_pkts.saturating_mul(4).max(64)).max(1) as usize).next_power_of_two();
        UetQp {
            reps: Reps::new(p.reps_buffer as usize, rng),
            spray: p.spray,
            trim_bytes: if p.trimming { p.trim_bytes.min(u16::MAX as u32) as u16 } else { 0 },
            ring: vec![Sent { psn: NONE, at: SimTime::MAX, ev: 0 }; ring],
            acked: vec![0; (npkts as usize).div_ceil(64)],
            rtx_q: VecDeque::new(),
            in_flight: 0,
            nacks: 0,
            selective_retransmits: 0,
            rccc: p.rccc,
            // The first BDP goes unsolicited; the rest waits for the receiver's grants.
            credit: bdp,
            demand: (size - bdp).max(0),
            scheduled_out: 0,
            listed: false,
            budget: bdp,
        }
    }

    #[inline]
    pub(crate) fn is_acked(&self, psn: u32) -> bool {
        self.acked.get(psn as usize / 64).is_some_and(|w| w & (1 << (psn % 64)) != 0)
    }

    /// The next PSN to send and, for a resend, the PSN again (`NONE` for a new packet).
    #[inline]
    pub(crate) fn pick(&mut self, snd_nxt: u32) -> (u32, u32) {
        match self.rtx_q.pop_front() {
            Some(psn) => (psn, psn),
            None => (snd_nxt, NONE),
        }
    }

    /// Packet `psn` (`payload` bytes) leaves now; returns the hash the switches see.
    #[inline]
    pub(crate) fn on_send(&mut self, psn: u32, now: SimTime, payload: u32, qp_hash: u32, resend: bool) -> u32 {
        self.in_flight += payload as u64;
        if self.rccc {
            self.credit -= payload as i64;
        }
        let ev = if self.spray { self.reps.next() } else { 0 };
        let slot = psn as usize & (self.ring.len() - 1);
        self.ring[slot] = Sent { psn, at: if resend { SimTime::MAX } else { now }, ev };
        if self.spray {
            // The EV stands in for the UDP source port in the switches' hash.
            (mix64(qp_hash as u64 ^ ((ev as u64) << 32)) >> 32) as u32
        } else {
            qp_hash
        }
    }

    /// What the send of `psn` left behind, if its slot was not reused since: (RTT sample, EV).
    fn sent(&self, psn: u32, now: SimTime) -> Option<(Option<SimTime>, u16)> {
        let s = self.ring[psn as usize & (self.ring.len() - 1)];
        (s.psn == psn).then(|| ((s.at != SimTime::MAX).then(|| now.saturating_sub(s.at)), s.ev))
    }

    /// A timeout: everything sent and not acknowledged is resent (and no longer in flight).
    /// (Under RCCC the sender grants itself what it resends: the receiver never saw those
    /// packets, so no grant would come for them.)
    fn requeue_unacked(&mut self, snd_una: u32, snd_nxt: u32, mtu: u32) {
        for psn in snd_una..snd_nxt {
            if !self.is_acked(psn) && !self.rtx_q.contains(&psn) {
                self.rtx_q.push_back(psn);
                if self.rccc {
                    self.credit = self.credit.max(0) + mtu as i64;
                }
            }
        }
        self.in_flight = 0;
    }
}

impl Qp {
    /// A UET QP has work: a resend due, or a new packet, within NSCC's window.
    #[inline]
    pub(crate) fn uet_can_send(&self, u: &UetQp) -> bool {
        (!u.rtx_q.is_empty() || self.snd_nxt < self.npkts) && self.window_open() && (!u.rccc || u.credit > 0)
    }
}

impl Sim<'_> {
    /// The UET state of a new QP of flow `fi` (its `k`-th), if its congestion control is
    /// NSCC (a `transport = "uet"` profile's RDMA message on RoCE).
    pub(super) fn uet_qp(
        &self,
        cc: Option<&Cc>,
        prof: usize,
        (fi, k): (u32, u32),
        size: u64,
        npkts: u32,
    ) -> Option<Box<UetQp>> {
        let Some(Cc::Nscc(n)) = cc else { return None };
        let window_pkts = n.max_window_bytes().div_ceil(self.m.nics[prof].mtu as u64).min(u32::MAX as u64) as u32;
        let rng = Rng::new(self.opts.seed, 0x5545_5400_0000_0000 ^ ((fi as u64) << 20) ^ k as u64);
        let p = &self.m.nics[prof].uet;
        Some(Box::new(UetQp::new(size, npkts, window_pkts, n.bdp() as u64, p, rng)))
    }

    /// A packet of a UET QP reaches its NIC (after the NIC counted it delivered).
    pub(super) fn uet_receive(&mut self, nic: u32, p: &Packet) {
        match p.kind {
            Kind::Data => self.uet_data(nic, p),
            Kind::Ack => self.uet_ack(p.qp, p.psn, p.payload & 1 != 0),
            Kind::Nak => self.uet_nack(p.qp, p.psn),
            // (No CNP is ever sent for a UET QP, NSCC reads the marks echoed on ACKs: the
            // kind carries RCCC's grants.)
            Kind::Cnp => self.rccc_grant_in(p.qp, p.payload),
        }
    }

    /// The receiver: a trimmed packet is NACKed at high priority; a whole one is placed where
    /// it belongs and acknowledged on its own, its CE mark echoed.
    fn uet_data(&mut self, nic: u32, p: &Packet) {
        let now = self.now;
        let qi = p.qp;
        self.stats.data_delivered += 1;
        self.rccc_arrival(nic, qi, p.psn, p.ecn & TRIMMED != 0);
        if p.ecn & TRIMMED != 0 {
            self.stats.trim_nacks += 1;
            self.uet_ctrl(qi, Kind::Nak, p.psn, 0);
            return;
        }
        let ce = p.ecn == CE;
        if ce {
            self.host.nics[nic as usize].st.ecn_marked_rx += 1;
        }
        let q = &mut self.host.qps[qi as usize];
        if p.psn >= q.npkts {
            return;
        }
        if p.psn < q.rcv_nxt || q.ooo_has(p.psn) {
            q.st.duplicate += 1;
        } else if p.psn == q.rcv_nxt {
            q.rcv_nxt += 1;
            let mut bytes = p.payload as u64;
            while q.rcv_nxt < q.npkts && q.ooo_take(q.rcv_nxt) {
                bytes += q.payload_of(q.rcv_nxt) as u64;
                q.rcv_nxt += 1;
            }
            q.st.bytes_delivered += bytes;
            self.stats.payload_delivered += bytes;
        } else {
            // Placed ahead of a hole: kept, counted, acknowledged like any other.
            q.ooo_set(p.psn);
            q.st.out_of_sequence += 1;
            self.stats.out_of_order += 1;
        }
        self.uet_ctrl(qi, Kind::Ack, p.psn, ce as u16);
        let q = &mut self.host.qps[qi as usize];
        if q.rcv_nxt == q.npkts && q.finish.is_none() {
            q.finish = Some(now);
            let fl = q.flow as usize;
            // (Zero already when another QP of the flow gave up: reported then.)
            if self.flow_rx_left[fl] > 0 {
                self.flow_rx_left[fl] -= 1;
                if self.flow_rx_left[fl] == 0 && !self.flow_failed[fl] {
                    self.notify(Observed::MessageDone { time: now, flow: fl as u32 });
                    if self.deliveries_wanted {
                        self.deliver(fl as u32);
                    }
                }
            }
        }
    }

    /// An ACK or NACK of QP `qi` from its receiver, in the CNP class: control packets go ahead
    /// of data, as uet-htsim's switches queue ACKs, NACKs and trimmed headers in their
    /// high-priority queue (`compositequeue.cpp`). `carried`: the CE echo.
    fn uet_ctrl(&mut self, qi: u32, kind: Kind, psn: u32, carried: u16) {
        let nic = self.host.qps[qi as usize].dst_nic;
        let (class, pcp) = self.cnp_class(qi, nic);
        let wire = self.hdr.ack.max(self.hdr.ack_floor);
        let mut pkt = self.ctrl_packet(qi, kind, psn, class, pcp, wire);
        pkt.payload = carried;
        self.stats.sent += 1;
        let id = self.alloc_pkt(pkt);
        self.host.nics[nic as usize].ack_q.push_back(id);
        self.nic_try_send(nic);
    }

    /// The sender: packet `psn` arrived (`ce`: it was marked). Its bytes leave the window, its
    /// EV is recycled or forgotten, NSCC takes the sample, and the left edge moves past
    /// everything acknowledged.
    fn uet_ack(&mut self, qi: u32, psn: u32, ce: bool) {
        let now = self.now;
        let q = &mut self.host.qps[qi as usize];
        if psn >= q.npkts || q.sender_done.is_some() {
            return;
        }
        let payload = q.payload_of(psn) as u64;
        let Some(u) = q.uet.as_deref_mut() else { return };
        if u.is_acked(psn) {
            return;
        }
        u.acked[psn as usize / 64] |= 1 << (psn % 64);
        u.in_flight = u.in_flight.saturating_sub(payload);
        if let Some(i) = u.rtx_q.iter().position(|&x| x == psn) {
            // Resent on a timeout, and the first copy arrived after all.
            u.rtx_q.remove(i);
        }
        let sent = u.sent(psn, now);
        let rtt = sent.and_then(|s| s.0);
        if let (true, Some((_, ev))) = (u.spray, sent) {
            u.reps.on_ack(ev, ce);
        }
        while q.snd_una < q.npkts && u.is_acked(q.snd_una) {
            q.snd_una += 1;
        }
        q.last_progress = now;
        q.timeouts_in_row = 0;
        let prof = self.host.nics[q.src_nic as usize].profile;
        let mut todo = Todo::Nothing;
        if let Some(cc) = q.cc.as_mut() {
            let ack = Ack {
                newly_acked: 1,
                ce_echoed: ce as u32,
                snd_una: q.snd_una,
                snd_max: q.snd_nxt,
                acked_psn: psn,
                rtt,
                int: &[],
            };
            todo = cc.on_ack(now, &ack, &self.host.cc_params[prof]);
        }
        let src_nic = q.src_nic;
        if q.snd_una >= q.npkts {
            self.sender_done(qi);
        }
        let gen = self.host.qps[qi as usize].cc.as_ref().map_or(0, |c| c.increase_gen());
        self.apply_todo(qi, todo, gen);
        self.nic_try_send(src_nic);
    }

    /// The sender: the receiver got packet `psn` trimmed. Only that packet is resent; its
    /// bytes leave the window and NSCC shrinks the window by one packet.
    fn uet_nack(&mut self, qi: u32, psn: u32) {
        let now = self.now;
        let q = &mut self.host.qps[qi as usize];
        if psn >= q.npkts || q.sender_done.is_some() {
            return;
        }
        let payload = q.payload_of(psn) as u64;
        let Some(u) = q.uet.as_deref_mut() else { return };
        if u.is_acked(psn) || u.rtx_q.contains(&psn) {
            return;
        }
        u.in_flight = u.in_flight.saturating_sub(payload);
        u.rtx_q.push_back(psn);
        u.nacks += 1;
        if u.spray {
            u.reps.on_trim();
        }
        q.st.naks += 1;
        // The receiver answered: the QP is alive (no timeout while NACKs come back).
        q.last_progress = now;
        let prof = self.host.nics[q.src_nic as usize].profile;
        let mut todo = Todo::Nothing;
        if let Some(cc) = q.cc.as_mut() {
            let loss = Loss::Nak { snd_una: q.snd_una, snd_max: q.snd_nxt };
            todo = cc.on_loss(now, loss, &self.host.cc_params[prof]);
        }
        let src_nic = q.src_nic;
        let gen = self.host.qps[qi as usize].cc.as_ref().map_or(0, |c| c.increase_gen());
        self.apply_todo(qi, todo, gen);
        self.nic_try_send(src_nic);
    }

    /// A UET QP's own retransmission timer on NIC profile `nic` after `timeouts` in a row, and
    /// the timeouts it may take in a row before it fails: UET retries every 100 µs (uet-htsim's
    /// minimum RTO; `[nic.uet] rto_us`, doubling up to `rto_max_us` if set) instead of waiting
    /// out the RoCE profile's `ack_timeout` (4.3 s at NCCL's 20), and gives up only when a
    /// RoCE QP of the profile would have (its timeout × (retry count + 1)): a NIC reset of
    /// seconds ends no UET QP, and its resends follow the link's return within one timeout.
    pub(super) fn uet_timer(nic: &rocelab_model::NicProfile, timeouts: u32) -> (Option<SimTime>, Option<u32>) {
        let give_up = nic.retransmit_timeout.map(|t| SimTime(t.0.saturating_mul(nic.retry_cnt as u64 + 1)));
        (Some(nic.uet.rto_after(timeouts)), Some(nic.uet.timeouts_within(give_up)))
    }

    /// The transport timeout of a UET QP: resend only what was never acknowledged.
    pub(super) fn uet_timeout(&mut self, qi: u32) {
        let q = &mut self.host.qps[qi as usize];
        let (una, nxt, mtu) = (q.snd_una, q.snd_nxt, q.mtu);
        if let Some(u) = q.uet.as_deref_mut() {
            u.requeue_unacked(una, nxt, mtu);
        }
    }

    /// RCCC at the receiving NIC: packet `psn` of QP `qi` arrived (`trimmed`: as a header,
    /// so it will be resent and needs a grant). What it used of a grant returns to the
    /// budget, and the NIC grants again.
    fn rccc_arrival(&mut self, nic: u32, qi: u32, psn: u32, trimmed: bool) {
        let HostTransport { nics, qps, .. } = &mut self.host;
        let q = &mut qps[qi as usize];
        let bytes = q.payload_of(psn) as i64;
        let Some(u) = q.uet.as_deref_mut().filter(|u| u.rccc) else { return };
        let used = u.scheduled_out.min(bytes);
        u.scheduled_out -= used;
        if trimmed {
            u.demand += bytes;
        }
        let rx = &mut nics[nic as usize].rccc;
        rx.granted_out = (rx.granted_out - used).max(0);
        if !u.listed && u.demand > 0 {
            u.listed = true;
            rx.senders.push_back(qi);
        }
        self.rccc_pump(nic, qi);
    }

    /// Grants, one MTU at a time and the senders in turn, while the bytes granted and not
    /// arrived stay below the budget (one BDP of the QP that just arrived).
    fn rccc_pump(&mut self, nic: u32, arrived: u32) {
        let budget = self.host.qps[arrived as usize].uet.as_ref().map_or(0, |u| u.budget);
        loop {
            let HostTransport { nics, qps, .. } = &mut self.host;
            let rx = &mut nics[nic as usize].rccc;
            if rx.granted_out >= budget {
                return;
            }
            let Some(qi) = rx.senders.pop_front() else { return };
            let q = &mut qps[qi as usize];
            let mtu = q.mtu as i64;
            // (A slot reused since by another QP, under `recycle_qps`, is no longer ours.)
            if q.dst_nic != nic || q.retired {
                continue;
            }
            let Some(u) = q.uet.as_deref_mut() else { continue };
            if u.demand <= 0 || q.sender_done.is_some() {
                // Off the list until a trimmed packet asks for more.
                u.listed = false;
                continue;
            }
            let g = u.demand.min(mtu);
            u.demand -= g;
            u.scheduled_out += g;
            rx.granted_out += g;
            rx.senders.push_back(qi);
            self.stats.rccc_grants += 1;
            self.uet_ctrl(qi, Kind::Cnp, 0, g as u16);
        }
    }

    /// RCCC at a sender with nothing in flight and no credit for a whole timeout: a grant was
    /// lost (grants are not resent), so it grants itself one MTU, as a timeout's resend does.
    pub(super) fn rccc_starved(&mut self, qi: u32) {
        let q = &mut self.host.qps[qi as usize];
        let mtu = q.mtu as i64;
        if let Some(u) = q.uet.as_deref_mut() {
            u.credit = u.credit.max(0) + mtu;
        }
        let src = q.src_nic;
        self.nic_try_send(src);
    }

    /// RCCC at the sender: the receiver granted `bytes` more.
    fn rccc_grant_in(&mut self, qi: u32, bytes: u16) {
        let q = &mut self.host.qps[qi as usize];
        let Some(u) = q.uet.as_deref_mut() else { return };
        u.credit += bytes as i64;
        let src = q.src_nic;
        self.nic_try_send(src);
    }

    /// At switch `sw`, packet `pkt` (bound for port `out`) was refused buffer: a UET data
    /// packet whose sender asks for trimming is cut to its header and queued in the CNP class
    /// instead. False: not trimmed (drop it).
    #[cold]
    #[inline(never)]
    pub(super) fn try_trim(&mut self, sw: u32, in_port: u32, pkt: u32, out: u32) -> bool {
        let p = *self.pkts.get(pkt);
        if p.kind != Kind::Data || p.ecn & TRIMMED != 0 {
            return false;
        }
        let trim = match self.host.qps.get(p.qp as usize).and_then(|q| q.uet.as_deref()) {
            Some(u) if u.trim_bytes > 0 => u.trim_bytes,
            _ => return false,
        };
        let class = self.m.qos.cnp_class;
        let cp = self.queues.classes[class];
        let ip = &mut self.ports[in_port as usize];
        if self.mmu.admit(sw, &mut ip.pg[cp.prio as usize], ip.headroom, cp.lossless, trim as u64).is_err() {
            return false;
        }
        let t = self.pkts.get_mut(pkt);
        t.wire_bytes = trim;
        t.payload = 0;
        t.ecn = TRIMMED;
        t.class = class as u8;
        self.stats.trimmed += 1;
        self.enqueue_egress(pkt, in_port, cp.prio, out, cp.queue, trim as u64);
        if cp.lossless {
            self.check_pause(sw, in_port, cp.prio);
        }
        self.switch_try_tx(out);
        true
    }
}

#[cfg(test)]
mod tests {
    //! The transport against physics: bytes are conserved through trimming, recovery resends
    //! exactly the trimmed packets, sprayed flows reach their line rate minus headers.
    use super::super::test_support::model;
    use super::*;
    use crate::packet::DATA_OVERHEAD;

    #[test]
    fn reps_recycles_entropies_that_came_back_unmarked_and_forgets_marked_or_trimmed_ones() {
        let mut r = Reps::new(4, Rng::new(7, 1));
        // Nothing learned yet: every packet explores a fresh entropy.
        let evs: Vec<u16> = (0..6).map(|_| r.next()).collect();
        assert_eq!((r.fresh, r.recycled), (6, 0));
        // Packets 0, 2, 4 came back clean; 1 was CE-marked, 3 trimmed: only the clean ones are
        // reused, oldest first.
        r.on_ack(evs[0], false);
        r.on_ack(evs[1], true);
        r.on_ack(evs[2], false);
        r.on_trim();
        r.on_ack(evs[4], false);
        assert_eq!(r.cached().collect::<Vec<_>>(), vec![evs[0], evs[2], evs[4]]);
        assert_eq!(r.discarded, 2);
        assert_eq!((r.next(), r.next()), (evs[0], evs[2]));
        // After ECN on the recycled path, the set changes: evs[2] is not cached again, and
        // once the cache runs dry a fresh entropy replaces it.
        r.on_ack(evs[2], true);
        assert_eq!(r.cached().collect::<Vec<_>>(), vec![evs[4]]);
        assert_eq!(r.next(), evs[4]);
        let fresh = r.next();
        assert_eq!(r.fresh, 7);
        assert!(!r.cached().any(|e| e == evs[2]));
        // The buffer holds at most `cap` entropies, dropping the oldest.
        for ev in [10, 11, 12, 13, 14] {
            r.on_ack(ev, false);
        }
        assert_eq!(r.cached().collect::<Vec<_>>(), vec![11, 12, 13, 14]);
        let _ = fresh;
    }

    #[test]
    fn each_sprayed_packet_hashes_by_its_entropy_and_an_unsprayed_one_by_its_qp() {
        let p = rocelab_model::uet::Uet::default();
        let mut u = UetQp::new(40_960, 10, 4, 16_384, &p, Rng::new(1, 2));
        let hashes: Vec<u32> = (0..4).map(|psn| u.on_send(psn, SimTime::ZERO, 4096, 0xabcd, false)).collect();
        let distinct: std::collections::BTreeSet<u32> = hashes.iter().copied().collect();
        assert_eq!(distinct.len(), 4, "four fresh entropies, four hashes: {hashes:?}");
        assert!(!hashes.contains(&0xabcd));
        assert_eq!(u.in_flight, 4 * 4096);
        // Packet 1's entropy comes back clean: the next packet reuses it, and so its hash.
        u.reps.on_ack(u.sent(1, SimTime::ZERO).unwrap().1, false);
        assert_eq!(u.on_send(4, SimTime::ZERO, 4096, 0xabcd, false), hashes[1]);
        let mut flat =
            UetQp::new(40_960, 10, 4, 16_384, &rocelab_model::uet::Uet { spray: false, ..p }, Rng::new(1, 2));
        assert!((0..4).all(|psn| flat.on_send(psn, SimTime::ZERO, 4096, 0xabcd, false) == 0xabcd));
    }

    /// `n` senders h1.. → h0 on one switch with a `buffer`-byte buffer, 100 Gb/s, 100 m cables
    /// (500 ns), MTU 4096, `transport = "uet"`, the RDMA class lossy with ECN from 20 KB.
    fn incast(n: usize, size: u64, buffer: u64, uet: &str) -> Model {
        model("uet-incast.toml", &incast_text(n, size, buffer, uet, ""))
    }

    /// `incast`'s file, with more `[nic]` keys.
    fn incast_text(n: usize, size: u64, buffer: u64, uet: &str, nic: &str) -> String {
        let nodes: Vec<String> = (0..=n).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
        let links: Vec<String> =
            (0..=n).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 100 }}")).collect();
        let flows: String = (1..=n)
            .map(|i| format!("[[traffic]]\npattern = \"flow\"\nsrc = \"h{i}\"\ndst = \"h0\"\nsize_bytes = {size}\n"))
            .collect();
        let text = format!(
            r#"[fabric]
name = "uet-incast"
[switch_models.sw]
preset = "ns3-reference"
ports = {}
buffer_bytes = {buffer}
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {} ]
link = [ {} ]
[nic]
mtu = 4096
transport = "uet"
{nic}
[nic.uet]
{uet}
[[qos.class]]
name = "uet"
dscp = [26]
priority = 3
carries = ["rdma"]
ecn = {{ kmin_bytes = 20000, kmax_bytes = 200000, pmax = 0.2 }}
[[qos.class]]
name = "cnp"
dscp = [48]
priority = 6
scheduler = "strict"
carries = ["cnp"]
[[qos.class]]
name = "default"
dscp = [0]
priority = 0
[qos.pfc_watchdog]
enabled = false
{flows}"#,
            n + 1,
            nodes.join(", "),
            links.join(", ")
        );
        text
    }

    fn run(m: &Model) -> Sim<'_> {
        let mut s = crate::build(m, SimOptions::default()).unwrap();
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        s
    }

    /// The issue's trimming test: a 16:1 incast into a 300 KB buffer overflows it. Every
    /// overflowing packet is trimmed (none dropped), NACKed, and resent on its own: the resent
    /// packets are exactly the NACKed ones (no go-back-N, no timeout), and every byte sent
    /// arrives once. The incast takes no less than 16 · size at the line rate minus headers.
    #[test]
    fn trimming_never_loses_a_byte_and_an_incast_recovers_by_selective_retransmission_only() {
        let (n, size) = (16, 1_000_000u64);
        let m = incast(n, size, 300_000, "");
        let s = run(&m);
        assert!(s.all_done());
        let st = &s.stats;
        println!(
            "trimmed {}, NACKs {}, resent {}, out of order {}, dropped {}",
            st.trimmed, st.trim_nacks, st.retransmitted, st.out_of_order, st.dropped
        );
        assert!(st.trimmed > 0, "the buffer overflows: something must be trimmed");
        assert_eq!(st.dropped, 0, "trimmed, never dropped");
        assert_eq!(st.trim_nacks, st.trimmed, "each trimmed header reaches the receiver and is NACKed");
        assert_eq!(st.retransmitted, st.trim_nacks, "exactly the trimmed packets are resent");
        assert_eq!(st.selective_retransmits, st.retransmitted);
        assert_eq!(s.host.qps.iter().map(|q| q.st.timeouts).sum::<u64>(), 0, "no timeout");
        // Delivered = sent, per QP and in total.
        assert_eq!(st.payload_delivered, n as u64 * size);
        for q in &s.host.qps {
            assert_eq!(q.st.bytes_delivered, size);
            assert_eq!(q.st.duplicate, 0, "nothing arrives twice");
        }
        // Physics: 16 MB through one 100 Gb/s port in 4,178-byte frames of 4,096 B.
        let pkts = size.div_ceil(4096);
        let wire = n as u64 * (size + pkts * DATA_OVERHEAD as u64);
        let bound_ps = wire * 80; // 80 ps a byte at 100 Gb/s
        let last = s.host.qps.iter().map(|q| q.finish.unwrap().0).max().unwrap();
        println!("incast done in {:.1} µs, bound {:.1} µs", last as f64 / 1e6, bound_ps as f64 / 1e6);
        assert!(last > bound_ps, "cannot beat the receiver's link");
        assert!((last as f64) < bound_ps as f64 * 1.25, "trimming keeps the bottleneck busy: {last} ps");
        // The report carries the counters.
        let r = crate::RunReport::from_sim(&s);
        let uet = r.totals.uet.as_ref().expect("a UET fabric reports its counters");
        assert_eq!((uet.trimmed_packets, uet.selective_retransmits), (st.trimmed, st.selective_retransmits));
        let metric = r.metrics.iter().find(|m| m.name == "rocelab_trimmed_packets_total").map(|m| m.value);
        assert_eq!(metric, Some(st.trimmed as f64));
    }

    /// RCCC on the same 16:1 incast: past each sender's first BDP the receiver grants at most
    /// one BDP in flight over all of them, so only the first round trip overflows the buffer:
    /// far fewer trims than NSCC alone, every byte once, and the receiver's link still busy.
    #[test]
    fn rccc_grants_keep_an_incast_from_trimming_past_its_first_round_trip() {
        let (n, size) = (16, 1_000_000u64);
        let plain = incast(n, size, 300_000, "");
        let without = run(&plain);
        let m = incast(n, size, 300_000, "rccc = true");
        let s = run(&m);
        assert!(s.all_done());
        let st = &s.stats;
        println!(
            "RCCC: trimmed {} (NSCC alone {}), grants {}, resent {}, dropped {}",
            st.trimmed, without.stats.trimmed, st.rccc_grants, st.retransmitted, st.dropped
        );
        assert_eq!(st.payload_delivered, n as u64 * size);
        assert_eq!(st.dropped, 0);
        assert_eq!(st.retransmitted, st.trim_nacks, "only trimmed packets are resent");
        assert!(st.rccc_grants > 0);
        assert!(st.trimmed * 4 < without.stats.trimmed, "{} vs {}", st.trimmed, without.stats.trimmed);
        let pkts = size.div_ceil(4096);
        let bound_ps = n as u64 * (size + pkts * DATA_OVERHEAD as u64) * 80;
        let last = s.host.qps.iter().map(|q| q.finish.unwrap().0).max().unwrap();
        println!("RCCC incast done in {:.1} µs, bound {:.1} µs", last as f64 / 1e6, bound_ps as f64 / 1e6);
        assert!(last > bound_ps && (last as f64) < bound_ps as f64 * 1.1, "{last} ps");
    }

    /// A sender whose grants never come (as if each were lost) is not stuck: at each timeout
    /// with nothing in flight it grants itself an MTU, so the message still completes.
    #[test]
    fn an_rccc_sender_starved_of_grants_recovers_at_its_timeout() {
        let text_m = incast_text(1, 5 * 4096, 300_000, "rccc = true", "retransmit_timeout_us = 100");
        let m = model("starved.toml", &text_m);
        let mut s = crate::build(&m, SimOptions::default()).unwrap();
        {
            let u = s.host.qps[0].uet.as_deref_mut().unwrap();
            // One packet's credit, and a receiver that will never grant more.
            (u.credit, u.demand) = (4096, 0);
        }
        s.run(&mut |_| {});
        assert!(s.all_done());
        assert_eq!(s.stats.payload_delivered, 5 * 4096);
        assert_eq!(s.stats.rccc_grants, 0);
        // Four self-grants, one per 100 µs timeout.
        let fin = s.host.qps[0].finish.unwrap();
        assert!(fin > SimTime::from_us(400) && fin < SimTime::from_us(500), "{fin:?}");
    }

    /// Without trimming the same incast drops, and recovers by the timeout, resending only what
    /// was never acknowledged: still every byte once.
    #[test]
    fn without_trimming_drops_are_repaired_by_the_timeout_resending_only_the_missing_packets() {
        let (n, size) = (8, 400_000u64);
        let m = incast(n, size, 150_000, "trimming = false");
        let s = run(&m);
        assert!(s.all_done());
        assert_eq!(s.stats.trimmed, 0);
        assert!(s.stats.data_dropped > 0, "the buffer overflows");
        assert_eq!(s.stats.payload_delivered, n as u64 * size);
        // Resent: at most what was dropped plus what was still queued when the timeout hit
        // (never the whole window behind the first hole, as go-back-N would).
        let timeouts: u64 = s.host.qps.iter().map(|q| q.st.timeouts).sum();
        assert!(timeouts > 0);
        println!("dropped {}, resent {}, timeouts {timeouts}", s.stats.data_dropped, s.stats.retransmitted);
        assert!(s.stats.retransmitted >= s.stats.data_dropped);
    }

    /// 4 leaves × 4 hosts, 4 spines, one 100G uplink per spine: 1:1. The transpose permutation
    /// (host j of leaf L → host L of leaf j) sends three flows out of each leaf.
    fn transpose(uet: &str, size: u64) -> Model {
        super::super::test_support::transpose_leaf_spine(
            "uet-transpose",
            "mtu = 4096\ntransport = \"uet\"",
            &format!("[nic.uet]\n{uet}\n[qos.pfc_watchdog]\nenabled = false"),
            size,
        )
    }

    /// Each flow's goodput over its own completion time, over the line rate minus headers.
    fn shares(s: &Sim, size: u64) -> Vec<f64> {
        let goodput_bps = 100e9 * 4096.0 / (4096.0 + DATA_OVERHEAD as f64);
        s.host
            .qps
            .iter()
            .map(|q| {
                let fct = q.finish.unwrap().0 as f64 * 1e-12;
                size as f64 * 8.0 / fct / goodput_bps
            })
            .collect()
    }

    /// The issue's spraying test: on a 1:1 two-tier fabric a permutation sprayed by UET gets
    /// at least 95 % of the line rate minus header overhead per flow, on the default (lossy)
    /// classes, with nothing dropped.
    #[test]
    fn a_sprayed_permutation_on_a_one_to_one_two_tier_fabric_reaches_95_percent_of_line_rate_per_flow() {
        let size = 4_000_000;
        let m = transpose("", size);
        assert!(!m.queues.classes[m.qos.rdma_class()].lossless, "UET on the default classes runs lossy");
        let s = run(&m);
        assert!(s.all_done());
        let sh = shares(&s, size);
        let worst = sh.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "spray: worst flow {:.1} % of line rate minus headers, out of order {}, trimmed {}",
            worst * 100.0,
            s.stats.out_of_order,
            s.stats.trimmed
        );
        assert!(worst >= 0.95, "worst flow {:.3}", worst);
        assert!(sh.iter().all(|&x| x <= 1.0), "no flow beats its link: {sh:?}");
        assert_eq!(s.stats.dropped, 0);
        assert_eq!(s.stats.payload_delivered, 12 * size);
        assert!(s.stats.out_of_order > 0, "sprayed packets overtake each other");
    }

    /// Under the switches' own per-packet spraying (`load_balancing = "spray"`, whose RoCE
    /// placement window is 1,024 packets) UET still places every packet, however far ahead:
    /// its bitmap spans the message.
    #[test]
    fn uet_under_switch_spraying_places_every_packet_and_delivers_every_byte() {
        let size = 1_000_000;
        let m = transpose("[routing]\nload_balancing = \"spray\"", size);
        let s = run(&m);
        assert!(s.all_done());
        assert!(s.host.qps.iter().all(|q| q.ooo_window == u32::MAX));
        assert_eq!(s.stats.payload_delivered, 12 * size);
        assert_eq!((s.stats.dropped, s.stats.retransmitted), (0, 0));
    }

    #[test]
    fn the_flow_engine_declines_uet_at_its_key() {
        let m = incast(2, 100_000, 300_000, "");
        let opts = SimOptions { engine: crate::EngineKind::Flow, ..SimOptions::default() };
        let Err(d) = crate::build_run(&m, opts) else { panic!("the flow engine must decline UET") };
        assert_eq!(d[0].path, "nic.transport");
        assert!(d[0].message.contains("sprays every packet"), "{}", d[0].message);
    }

    #[test]
    fn same_seed_same_summary_byte_for_byte() {
        let m = incast(8, 300_000, 200_000, "");
        let a = crate::RunReport::from_sim(&run(&m)).to_json();
        let b = crate::RunReport::from_sim(&run(&m)).to_json();
        assert_eq!(a, b);
        assert!(a.contains("\"trimmed_packets\""));
    }

    /// A NIC reset of 3 s (the checklist's firmware update) in the middle of a UET flow: the
    /// packets on the wire are lost with the link, and UET's own timer (100 µs, doubling to
    /// 1 ms here) keeps resending into the dead link instead of waiting out the RoCE
    /// profile's 4.3 s; the QP survives (a RoCE QP of the profile would wait 8 × 4.3 s in
    /// all) and its resends follow the link's return by at most one capped timeout.
    #[test]
    fn a_three_second_nic_reset_ends_no_uet_qp_and_its_resends_follow_the_link_within_a_millisecond() {
        let size = 2_000_000u64;
        let text = incast_text(1, size, 4_000_000, "rto_max_us = 1000", "")
            + "[[fault]]\nkind = \"nic-reset\"\nat_us = 50\na = \"h1\"\nduration_us = 3000000\n";
        let m = rocelab_model::load_str("reset.toml", &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.nics[0].retransmit_timeout, Some(SimTime(4_096_000u64 << 20)), "NCCL's RoCE timer");
        let s = run(&m);
        let q = &s.host.qps[0];
        assert!(s.all_done() && !q.st.failed, "the QP outlives the outage");
        assert_eq!(q.st.bytes_delivered, size);
        let back = SimTime::from_secs_f64(3.00005);
        let finish = q.finish.expect("the flow completes after the reset");
        // What was left at 50 µs (about 600 KB sent at 100 Gb/s) moves at line rate once the
        // link is back: ≤ 140 µs on the wire, after at most one 1 ms timeout.
        let after_us = (finish.0 - back.0) as f64 * 1e-6;
        assert!(after_us > 0.0 && after_us < 1000.0 + 140.0 + 10.0, "{after_us} µs after the link returned");
        // 100 + 200 + 400 + 800 µs, then one timeout a millisecond while the link was down.
        let t = q.st.timeouts;
        assert!((2_990..=3_010).contains(&t), "{t} timeouts in 3 s");
        // At the default (no backoff) the resends follow within 100 µs: 30,000 timeouts.
        let m = rocelab_model::load_str("reset.toml", &text.replace("rto_max_us = 1000", "")).unwrap();
        let s = run(&m);
        let q = &s.host.qps[0];
        assert!(s.all_done() && !q.st.failed);
        let after_us = (q.finish.expect("completes").0 - back.0) as f64 * 1e-6;
        assert!(after_us > 0.0 && after_us < 100.0 + 140.0 + 10.0, "{after_us} µs after the link returned");
        assert!((29_990..=30_010).contains(&q.st.timeouts), "{} timeouts in 3 s", q.st.timeouts);
    }
}
