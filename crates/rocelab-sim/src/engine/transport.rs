//! The host transport as a component: the NICs (one per host port: control and data queues,
//! the receive buffer), the RC queue pairs (segmentation, PSNs, window, pacer, the
//! receiver's state) with each QP's congestion control, the congestion-control tables per NIC
//! profile, and the QP slots' life cycle (reuse under `SimOptions::recycle_qps`). What a NIC
//! does with a packet is `engine::nic`; the algorithms are `cc`.

use super::*;

pub(crate) struct Nic {
    pub node: u32,
    pub(crate) port: u32,
    pub(crate) profile: usize,
    pub(crate) active: Vec<u32>,
    pub(crate) rr: usize,
    pub(crate) cnp_q: VecDeque<u32>,
    pub(crate) ack_q: VecDeque<u32>,
    pub(crate) wake_at: SimTime,
    pub(crate) wake_gen: u32,
    pub(crate) stalled: bool,
    pub(crate) rx_q: VecDeque<u32>,
    pub(crate) rx_bytes: u64,
    pub(crate) rx_xoff: [bool; 8],
    /// A slow drain (`FaultAction::Drain`): the rate the host takes payload at, bits/s (0:
    /// none), and the generation of its pending drain step (`Ev::HostDrain`, if pending).
    pub(crate) drain_bps: u64,
    pub(crate) drain_gen: u32,
    pub(crate) drain_pending: bool,
    pub st: NicStats,
    /// The Ultra Ethernet transport's receiver credits (RCCC) this NIC grants.
    pub(crate) rccc: super::uet::RcccRx,
}

pub(crate) struct Qp {
    pub flow: u32,
    pub(crate) src_nic: u32,
    pub(crate) dst_nic: u32,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub(crate) npkts: u32,
    pub(crate) mtu: u32,
    pub(crate) class: u8,
    pub(crate) pcp: u8,
    pub(crate) hash: u32,
    /// Its UDP source port (the hash is recomputed from it when the hashed fields change).
    pub(crate) sport: u16,
    /// Its QP numbers (source, destination), hashed under `dest-qpn` / `src-qpn`.
    pub(crate) qpn: [u32; 2],
    pub(crate) ect: bool,
    /// In-flight window in bytes (0: none; ConnectX's DCQCN is rate-based and has none).
    pub(crate) window: u64,
    /// Scale the window with the current rate (HPCC's `VAR_WIN`).
    pub(crate) window_var: bool,
    // sender
    pub(crate) snd_nxt: u32,
    pub(crate) snd_una: u32,
    pub(crate) pacer: Pacer,
    pub(crate) rto_gen: u32,
    pub(crate) rto_armed: bool,
    pub(crate) timeouts_in_row: u32,
    /// Destroyed by its NIC's reset, waiting for its application to reconnect
    /// (`engine::faults`).
    pub(crate) torn_down: bool,
    pub(crate) last_progress: SimTime,
    /// Its congestion control (`cc`): DCQCN, DCTCP for TCP-like messages, IB CC ...; `None`:
    /// the port alone paces it.
    pub(crate) cc: Option<Cc>,
    /// The packet timed for the algorithm's RTT sample (`NONE`: none in flight), and when it
    /// left. Only new packets are timed, and a rewind past it drops it (Karn's rule).
    pub(crate) rtt_psn: u32,
    pub(crate) rtt_sent: SimTime,
    /// Bytes of congestion-control header on each data packet and ACK of this QP: HPCC's INT
    /// (42 B), ns-3's TIMELY timestamp (8 B with its header count); 0 otherwise.
    pub(crate) int_bytes: u16,
    /// Receiver: CE-marked packets not yet echoed on an ACK (TCP-like QPs).
    pub(crate) ce_unechoed: u16,
    pub sender_done: Option<SimTime>,
    // receiver
    pub(crate) rcv_nxt: u32,
    /// Packets received ahead of `rcv_nxt`, a bitmap by PSN (allocated at the first
    /// reordered packet; empty otherwise): a ring of `ooo_window` bits rounded up to a power
    /// of two words, or one bit per packet of the message when the window is unbounded.
    pub(crate) ooo: Vec<u64>,
    /// Out-of-order placement: how far ahead of `rcv_nxt` (packets) the receiver places a
    /// packet instead of answering the gap with a NAK (0: in order only; `u32::MAX`:
    /// unbounded, InfiniBand RC over adaptive routing). RoCE: `[nic] ooo_window_packets`
    /// (`rocelab_model::lb`).
    pub(crate) ooo_window: u32,
    pub(crate) nak_for: u32,
    pub(crate) last_cnp: Option<SimTime>,
    pub(crate) since_ack: u32,
    /// Linux TCP's SACK recovery: the hole being resent, `rtx..rtx_end` (`rtx == NONE`:
    /// none); the packets its receiver holds past a hole; segments the receiver acknowledges
    /// at once before it delays ACKs again (Linux's quick-ACK mode), and its last data arrival.
    pub(crate) rtx: u32,
    pub(crate) rtx_end: u32,
    pub(crate) ooo_held: u32,
    pub(crate) quickacks: u8,
    pub(crate) last_rx: SimTime,
    pub finish: Option<SimTime>,
    pub st: QpStats,
    /// Packets of this QP alive (on wires, in queues, in NIC queues) and timer events of it
    /// pending (DCQCN's, a delayed CNP, its start; not the transport timeout, which is
    /// invalidated by generation): its slot may be reused only when both are zero
    /// (`SimOptions::recycle_qps`).
    pub(crate) pkts_out: u32,
    pub(crate) timers: u32,
    /// Done and folded into its message's counters; the slot is free.
    pub(crate) retired: bool,
    /// The Ultra Ethernet transport's sender state (`engine::uet`); `None` on RoCE and IB.
    pub(crate) uet: Option<Box<super::uet::UetQp>>,
}

/// The counters of a message's QPs whose slots were reused, as `snapshot` aggregates live ones.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RetiredQps {
    pub qps: u32,
    pub delivered_bytes: u64,
    pub retransmitted_packets: u64,
    pub cnps: u64,
    pub timeouts: u64,
    /// The latest finish and sender completion among them.
    pub finish: SimTime,
    pub sender_done: SimTime,
}

impl Qp {
    /// Payload bytes of packet `psn` (the last one carries the remainder).
    #[inline]
    pub(crate) fn payload_of(&self, psn: u32) -> u32 {
        if psn + 1 >= self.npkts {
            self.size.saturating_sub(psn as u64 * self.mtu as u64).min(self.mtu as u64) as u32
        } else {
            self.mtu
        }
    }

    /// The first PSN after `psn` the receiver holds (ahead of a hole), or `npkts`. (Linux
    /// TCP's receiver, whose bitmap covers the message.)
    pub(crate) fn ooo_next_after(&self, psn: u32) -> u32 {
        (psn + 1..self.npkts).find(|&p| self.ooo_has(p)).unwrap_or(self.npkts)
    }

    /// The word of the bitmap holding `psn`'s bit. Held PSNs lie within `ooo_window` of
    /// `rcv_nxt` (or in the message), so they never share a bit in the ring.
    #[inline]
    fn ooo_word(&self, psn: u32) -> usize {
        (psn as usize / 64) & self.ooo.len().wrapping_sub(1)
    }

    /// A packet `psn` ahead of `rcv_nxt` is held (placed out of order).
    #[inline]
    pub(crate) fn ooo_has(&self, psn: u32) -> bool {
        !self.ooo.is_empty() && self.ooo[self.ooo_word(psn)] & (1 << (psn % 64)) != 0
    }

    #[cold]
    pub(crate) fn ooo_set(&mut self, psn: u32) {
        if self.ooo.is_empty() {
            // A power of two words, so the ring's index is a mask: the bounded window's
            // (≤ 1024 words) or the whole message's.
            let bits = if self.ooo_window == 0 || self.ooo_window >= self.npkts { self.npkts } else { self.ooo_window };
            self.ooo = vec![0; (bits as usize).div_ceil(64).next_power_of_two()];
        }
        let w = self.ooo_word(psn);
        self.ooo[w] |= 1 << (psn % 64);
    }

    /// Clears and returns whether packet `psn` was held.
    #[inline]
    pub(crate) fn ooo_take(&mut self, psn: u32) -> bool {
        if self.ooo.is_empty() {
            return false;
        }
        let w = self.ooo_word(psn);
        match self.ooo.get_mut(w) {
            Some(w) if *w & (1 << (psn % 64)) != 0 => {
                *w &= !(1 << (psn % 64));
                true
            }
            _ => false,
        }
    }

    /// False while the bytes sent and not yet acknowledged fill the window (HPCC's
    /// `IsWinBound`); an ACK reopens it and kicks the NIC.
    #[inline]
    pub(crate) fn window_open(&self) -> bool {
        let own = self.cc.as_ref().and_then(|c| c.window_bytes());
        if let (Some(u), Some(w)) = (&self.uet, own) {
            // UET: what is acknowledged or reported trimmed is out of flight, holes or not.
            return u.in_flight < w;
        }
        if self.window == 0 && own.is_none() {
            return true;
        }
        let in_flight = self.snd_nxt.saturating_sub(self.snd_una) as u64 * self.mtu as u64;
        if let Some(w) = own {
            return in_flight < w;
        }
        let w = match (&self.cc, self.window_var) {
            (Some(cc), true) => ((self.window as f64 * cc.rate_bps() / cc.line_rate_bps()) as u64).max(1),
            _ => self.window,
        };
        in_flight < w
    }
}

/// The host transport's state (see the module doc).
pub(crate) struct HostTransport {
    pub nics: Vec<Nic>,
    pub qps: Vec<Qp>,
    /// Each NIC profile's congestion-control tables.
    pub cc_params: Vec<CcParams>,
    /// Slots of retired QPs, reused by the next QPs.
    pub free_qps: Vec<u32>,
    /// Per flow, its retired QPs' counters (empty unless `recycle_qps`).
    pub retired: Vec<RetiredQps>,
}

impl HostTransport {
    /// Stores a new QP in a retired one's slot (its timer generation moved past the old
    /// one's, so a stale timeout is ignored) or a new slot; returns its id.
    pub(super) fn store(&mut self, qp: Qp) -> u32 {
        match self.free_qps.pop() {
            Some(id) => {
                let rto_gen = self.qps[id as usize].rto_gen.wrapping_add(1);
                self.qps[id as usize] = Qp { rto_gen, ..qp };
                id
            }
            None => {
                self.qps.push(qp);
                (self.qps.len() - 1) as u32
            }
        }
    }

    /// Folds QP `qi`'s counters into its message's and frees its slot.
    #[cold]
    pub(super) fn retire(&mut self, qi: u32) {
        let q = &mut self.qps[qi as usize];
        q.retired = true;
        let r = &mut self.retired[q.flow as usize];
        r.qps += 1;
        r.delivered_bytes += q.st.bytes_delivered;
        r.retransmitted_packets += q.st.retransmitted_packets;
        r.cnps += q.st.cnps;
        r.timeouts += q.st.timeouts;
        r.finish = r.finish.max(q.finish.unwrap_or(SimTime::ZERO));
        r.sender_done = r.sender_done.max(q.sender_done.unwrap_or(SimTime::ZERO));
        self.free_qps.push(qi);
    }
}
