//! Congestion control at the sender: one interface, one file per algorithm.
//!
//! The engine feeds a QP's algorithm every signal a sender can see and nothing else:
//!
//! | signal | call | who reads it |
//! |---|---|---|
//! | a CNP (RoCE) or BECN (InfiniBand) | [`CongestionControl::on_cnp`] | DCQCN, IB CC |
//! | an ACK: packets it acknowledges, CE marks it echoes, an RTT sample, INT hop records | [`CongestionControl::on_ack`] | DCTCP, HPCC, TIMELY |
//! | a loss: a NAK, or the transport timeout | [`CongestionControl::on_loss`] | DCTCP |
//! | a timer the algorithm asked for earlier | [`CongestionControl::on_timer`] | DCQCN, IB CC |
//! | a packet sent | [`CongestionControl::on_sent`] | DCQCN's byte counter |
//!
//! and reads back how the QP may send: a rate (the pacer's gap after each packet), a window
//! of bytes in flight, or both. Each step returns a [`Todo`]: the timer to arm, if any; after
//! a step the engine re-times the QP's pending send at the new rate. What the receiver must
//! return (a CNP per CE mark, the marks echoed on ACKs, the INT stack on ACKs) each
//! algorithm declares once in [`CongestionControl::feedback`].
//!
//! Each algorithm has its own parameters, resolved by `rocelab-model` from its own table
//! (`[nic.dcqcn]`, `[nic.hpcc]`, `[nic.timely]`, `[infiniband.cc]`); a NIC profile's tables
//! are gathered in [`CcParams`] and every call gets the algorithm's own one.
//!
//! # Why an enum, not a trait object
//!
//! A QP holds a [`Cc`], an enum over the algorithms, built by the `algorithms!` registry at
//! the bottom of this file: each call is a `match` the compiler turns into a jump table and
//! inlines, the state sits inline in the QP (no `Box`, no vtable, no pointer chase per ACK),
//! and the set of algorithms is closed at compile time, which is what a deterministic engine
//! wants. A `dyn CongestionControl` would cost an indirect call and a heap object per QP on
//! the hottest path there is (every ACK, every packet sent), against the design's rule of no
//! `dyn` dispatch per event.
//!
//! # Adding an algorithm
//!
//! One file in this directory implementing [`CongestionControl`] (its state, its steps, its
//! `start`), and one line in the `algorithms!` list naming its module, its variant, its type
//! and the field of [`CcParams`] that holds its parameters. Its parameter table is a new file of
//! `rocelab-model` registered on the NIC profile; `Cc::choose` picks it from the profile's
//! `congestion_control`.
//!
//! NSCC (`nscc`) is not chosen by `congestion_control` but by the profile's
//! `transport = "uet"`; `engine::uet` feeds it one ACK per packet, with its RTT and CE mark.

pub mod cubic;
pub mod dcqcn;
pub mod dctcp;
pub mod dctcp_rate;
pub mod hpcc;
pub mod ibcc;
pub mod nscc;
pub mod timely;

use rocelab_model::cc::{DctcpRate, Hpcc, Timely};
use rocelab_model::config::{CongestionControl as CcKind, DcqcnVariant};
use rocelab_model::infiniband::IbCc;
use rocelab_model::uet::{Transport, Uet};
use rocelab_model::{Dcqcn, NicProfile, SimTime};

/// What the engine must schedule after a congestion-control step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Todo {
    Nothing,
    /// (Re)arm the increase timer at this time with the current timer generation; a timer armed
    /// under an older generation is stale and dropped ([`Timer::Increase`]).
    ArmIncrease(SimTime),
    /// Run a check at this time ([`Timer::Check`]; not generation-checked: the algorithm keeps
    /// at most one pending).
    ArmReduce(SimTime),
}

/// Which of an algorithm's timers fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// The timer armed by [`Todo::ArmIncrease`], its generation already checked.
    Increase,
    /// The check armed by [`Todo::ArmReduce`].
    Check,
}

/// One switch hop's in-band telemetry, stamped as the packet leaves the egress port (HPCC's
/// INT: queue length, bytes sent so far, time, link rate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Bytes queued at the egress port (all its queues) when the packet left.
    pub qlen_bytes: u64,
    /// Bytes the port has sent since the start of the run.
    pub tx_bytes: u64,
    /// When the packet left.
    pub time: SimTime,
    /// The link's rate, bits/s.
    pub rate_bps: u64,
}

/// The most INT hops a packet carries (HPCC's `IntHeader::maxHop`).
pub const INT_MAX_HOPS: usize = 5;

/// Bytes the INT header adds to a data packet and to its ACK: HPCC's ns-3 header in its
/// normal mode, 5 hop records of 8 bytes and a 2-byte hop count (`int-header.cc`).
pub const INT_HEADER_BYTES: u32 = 42;

/// The INT records a packet carries, first hop first.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntStack {
    pub n: u8,
    pub hops: [IntHop; INT_MAX_HOPS],
}

impl IntStack {
    /// The records stamped so far.
    pub fn hops(&self) -> &[IntHop] {
        &self.hops[..self.n as usize]
    }

    /// Stamps one more hop; past the fifth the stack is full and the record is dropped.
    #[inline]
    pub fn push(&mut self, hop: IntHop) {
        if (self.n as usize) < INT_MAX_HOPS {
            self.hops[self.n as usize] = hop;
            self.n += 1;
        }
    }
}

/// An ACK as the sender sees it.
#[derive(Clone, Copy, Debug)]
pub struct Ack<'a> {
    /// Packets newly acknowledged (the left edge's move).
    pub newly_acked: u32,
    /// CE marks the receiver echoes on it (DCTCP's exact echo).
    pub ce_echoed: u32,
    /// The left edge after the ACK.
    pub snd_una: u32,
    /// One past the highest PSN sent, before a NAK's rewind.
    pub snd_max: u32,
    /// The PSN it acknowledges (everything below `acked_psn + 1` arrived).
    pub acked_psn: u32,
    /// Time since the acknowledged packet was sent, when the QP timed it.
    pub rtt: Option<SimTime>,
    /// The INT stack of the data packet it answers (empty without INT).
    pub int: &'a [IntHop],
}

/// A loss the sender learns of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// A NAK (the receiver saw a gap): `snd_una` and the highest PSN sent before the rewind.
    Nak { snd_una: u32, snd_max: u32 },
    /// The transport timeout fired.
    Timeout,
}

/// What the receiver returns for an algorithm (declared once per algorithm).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feedback {
    /// CE-marked packets are answered with CNPs (RoCE's notification point, IB's BECN).
    pub cnp: bool,
    /// CE marks are counted onto the next ACK (DCTCP's echo); no CNP.
    pub echo_ce: bool,
    /// Switches stamp INT on the data packets and the receiver echoes the stack on the ACK.
    pub int: bool,
    /// The algorithm reads ACKs, NAKs and timeouts (`on_ack`, `on_loss`); without it the
    /// engine does not call them.
    pub acks: bool,
    /// The QP times one packet per round trip for `Ack::rtt`.
    pub rtt: bool,
}

impl Feedback {
    /// CNPs only (DCQCN, IB CC).
    pub const CNP: Feedback = Feedback { cnp: true, echo_ce: false, int: false, acks: false, rtt: false };
}

/// A sender-side congestion control of one QP, as the engine drives it. Every step has a
/// default that ignores the signal, so an algorithm writes only what it reads.
pub trait CongestionControl {
    /// The knobs, shared by every QP of a NIC profile and passed on each call.
    type Params;
    /// A CNP (RoCE) or BECN (InfiniBand) arrived for this QP.
    fn on_cnp(&mut self, _now: SimTime, _p: &Self::Params) -> Todo {
        Todo::Nothing
    }
    /// An ACK arrived.
    fn on_ack(&mut self, _now: SimTime, _ack: &Ack, _p: &Self::Params) -> Todo {
        Todo::Nothing
    }
    /// A loss was signalled.
    fn on_loss(&mut self, _now: SimTime, _loss: Loss, _p: &Self::Params) -> Todo {
        Todo::Nothing
    }
    /// A timer the algorithm asked for fired.
    fn on_timer(&mut self, _now: SimTime, _which: Timer, _p: &Self::Params) -> Todo {
        Todo::Nothing
    }
    /// `wire` bytes left the NIC at `now`.
    fn on_sent(&mut self, _now: SimTime, _wire: u32, _p: &Self::Params) {}
    /// The sender has nothing left to send (all acknowledged, or the QP failed).
    fn on_done(&mut self) {}
    /// The gap after a packet of `wire` bytes just sent (`ser`: its serialization at the
    /// port); `None` leaves the pacer alone (the port paces).
    fn send_gap(&self, _wire: u32, _ser: SimTime, _p: &Self::Params) -> Option<SimTime> {
        None
    }
    /// After a step: the gap the pending send must now keep after the last packet (`wire`
    /// bytes, `ser` at the port), if the step changed how the QP is paced; `None` leaves it.
    /// (A rate-based algorithm answers its gap at the current rate: re-timing at an unchanged
    /// rate changes nothing.)
    fn regap(&mut self, wire: u32, ser: SimTime, p: &Self::Params) -> Option<SimTime> {
        self.send_gap(wire, ser, p)
    }
    /// The rate the QP may send at now, bits/s (its line rate when only a window binds it).
    fn rate_bps(&self) -> f64;
    /// Its line rate, bits/s.
    fn line_rate_bps(&self) -> f64;
    /// The algorithm's own window of bytes in flight, if it keeps one.
    fn window_bytes(&self) -> Option<u64> {
        None
    }
    /// The generation of the increase timer: a timer armed under another one is stale.
    fn increase_gen(&self) -> u32 {
        0
    }
    /// The retransmission timeout its transport keeps, if its own (Linux TCP's, from its RTT
    /// estimate); `None`: the NIC profile's transport timeout.
    fn rto(&self) -> Option<SimTime> {
        None
    }
    /// Timeouts in a row after which its transport gives up, if its own; `None`: the NIC
    /// profile's `retry_cnt`.
    fn max_timeouts(&self) -> Option<u32> {
        None
    }
    /// What the receiver returns for it.
    fn feedback(&self) -> Feedback;
}

/// The pacer's gap at `rate_bps` for `wire` bytes: none at line rate (the port paces).
#[inline]
pub fn rate_gap(wire: u32, rate_bps: f64, line_bps: f64) -> SimTime {
    crate::pacer::gap(wire, rate_bps, line_bps)
}

/// A NIC profile's congestion-control tables, one per algorithm, resolved by the model.
#[derive(Clone, Debug)]
pub struct CcParams {
    pub dcqcn: Dcqcn,
    /// DCTCP's constants are RFC 8257's: no table.
    pub dctcp: (),
    /// CUBIC's constants are RFC 9438's: no table.
    pub cubic: (),
    /// `[infiniband.cc]` (meaningful on an InfiniBand fabric with it enabled).
    pub ib: IbCc,
    pub hpcc: Hpcc,
    pub timely: Timely,
    /// `[nic.dctcp]`: DCTCP as a rate on RDMA QPs.
    pub dctcp_rate: DctcpRate,
    /// `[nic.uet]`: NSCC's knobs, on QPs of a `transport = "uet"` profile.
    pub uet: Uet,
}

impl CcParams {
    /// The tables of NIC profile `prof` on a fabric whose IB congestion control is `ib`.
    pub fn of(prof: &NicProfile, ib: Option<&IbCc>) -> Self {
        CcParams {
            dcqcn: prof.dcqcn.clone(),
            dctcp: (),
            cubic: (),
            ib: ib.cloned().unwrap_or_else(no_ib),
            hpcc: prof.hpcc.clone(),
            timely: prof.timely.clone(),
            dctcp_rate: prof.dctcp.clone(),
            uet: prof.uet.clone(),
        }
    }
}

/// IB congestion control's table where it is off (never read: no QP runs it then).
fn no_ib() -> IbCc {
    IbCc {
        marking_threshold_bytes: 0,
        ccti_increase: 0,
        ccti_limit: 0,
        ccti_timer: SimTime::ZERO,
        cct_step: SimTime::ZERO,
    }
}

/// How a QP's messages were posted, as far as the choice of algorithm goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpKind {
    /// RDMA on RoCE, with the reaction point enabled on its priority.
    Rdma,
    /// RDMA on RoCE whose priority has no reaction point: no congestion control.
    RdmaUnmanaged,
    /// RDMA on InfiniBand.
    Ib { cc: bool },
    /// TCP-like (`Net::post_tcp`, `Net::post_with`): a DCTCP window (under the CCT's pacing
    /// on InfiniBand with congestion control), or with `cubic` Linux's TCP: a CUBIC window.
    Tcp { ib_cc: bool, cubic: bool },
}

/// Declares the algorithms: the enum a QP holds and its dispatch. One line per algorithm:
/// `Variant(module::Type, params_field)`.
macro_rules! algorithms {
    ($($var:ident($ty:ty, $field:ident)),* $(,)?) => {
        /// The congestion control a QP holds: one of the algorithms, chosen once when the QP is
        /// created, called by a `match` (static dispatch, the state inline in the QP).
        #[derive(Clone, Debug)]
        pub enum Cc {
            $($var($ty),)*
        }

        impl CongestionControl for Cc {
            type Params = CcParams;
            #[inline]
            fn on_cnp(&mut self, now: SimTime, p: &CcParams) -> Todo {
                match self { $(Cc::$var(c) => CongestionControl::on_cnp(c, now, &p.$field),)* }
            }
            #[inline]
            fn on_ack(&mut self, now: SimTime, ack: &Ack, p: &CcParams) -> Todo {
                match self { $(Cc::$var(c) => CongestionControl::on_ack(c, now, ack, &p.$field),)* }
            }
            #[inline]
            fn on_loss(&mut self, now: SimTime, loss: Loss, p: &CcParams) -> Todo {
                match self { $(Cc::$var(c) => CongestionControl::on_loss(c, now, loss, &p.$field),)* }
            }
            #[inline]
            fn on_timer(&mut self, now: SimTime, which: Timer, p: &CcParams) -> Todo {
                match self { $(Cc::$var(c) => CongestionControl::on_timer(c, now, which, &p.$field),)* }
            }
            #[inline]
            fn on_sent(&mut self, now: SimTime, wire: u32, p: &CcParams) {
                match self { $(Cc::$var(c) => CongestionControl::on_sent(c, now, wire, &p.$field),)* }
            }
            #[inline]
            fn on_done(&mut self) {
                match self { $(Cc::$var(c) => CongestionControl::on_done(c),)* }
            }
            #[inline]
            fn send_gap(&self, wire: u32, ser: SimTime, p: &CcParams) -> Option<SimTime> {
                match self { $(Cc::$var(c) => CongestionControl::send_gap(c, wire, ser, &p.$field),)* }
            }
            #[inline]
            fn regap(&mut self, wire: u32, ser: SimTime, p: &CcParams) -> Option<SimTime> {
                match self { $(Cc::$var(c) => CongestionControl::regap(c, wire, ser, &p.$field),)* }
            }
            #[inline]
            fn rate_bps(&self) -> f64 {
                match self { $(Cc::$var(c) => CongestionControl::rate_bps(c),)* }
            }
            #[inline]
            fn line_rate_bps(&self) -> f64 {
                match self { $(Cc::$var(c) => CongestionControl::line_rate_bps(c),)* }
            }
            #[inline]
            fn window_bytes(&self) -> Option<u64> {
                match self { $(Cc::$var(c) => CongestionControl::window_bytes(c),)* }
            }
            #[inline]
            fn increase_gen(&self) -> u32 {
                match self { $(Cc::$var(c) => CongestionControl::increase_gen(c),)* }
            }
            #[inline]
            fn rto(&self) -> Option<SimTime> {
                match self { $(Cc::$var(c) => CongestionControl::rto(c),)* }
            }
            #[inline]
            fn max_timeouts(&self) -> Option<u32> {
                match self { $(Cc::$var(c) => CongestionControl::max_timeouts(c),)* }
            }
            #[inline]
            fn feedback(&self) -> Feedback {
                match self { $(Cc::$var(c) => CongestionControl::feedback(c),)* }
            }
        }
    };
}

algorithms! {
    Paper(dcqcn::PaperDcqcn, dcqcn),
    Mlx5(dcqcn::Mlx5Dcqcn, dcqcn),
    Dctcp(dctcp::Dctcp, dctcp),
    IbCc(ibcc::IbCcState, ib),
    DctcpIb(ibcc::DctcpOverIb, ib),
    Hpcc(hpcc::HpccState, hpcc),
    Timely(timely::TimelyState, timely),
    DctcpRate(dctcp_rate::DctcpRateState, dctcp_rate),
    Cubic(cubic::Cubic, cubic),
    Nscc(nscc::Nscc, uet),
}

impl Cc {
    /// DCQCN in the variant `p` names, starting at line rate.
    pub fn dcqcn(line_bps: f64, p: &Dcqcn) -> Self {
        match p.variant {
            DcqcnVariant::Paper => Cc::Paper(dcqcn::PaperDcqcn::new(line_bps, p)),
            DcqcnVariant::Mlx5 => Cc::Mlx5(dcqcn::Mlx5Dcqcn::new(line_bps, p)),
        }
    }

    /// The algorithm a new QP runs: by how it was posted, then by its NIC profile's
    /// `congestion_control`. `None`: the port alone paces it. `base_rtt`: the QP's path round
    /// trip, asked for only where an algorithm needs it (HPCC without `base_rtt_us`).
    pub fn choose(
        kind: QpKind,
        prof: &NicProfile,
        p: &CcParams,
        line_bps: f64,
        mtu: u32,
        base_rtt: impl FnOnce() -> SimTime,
    ) -> Option<Cc> {
        match kind {
            QpKind::Tcp { cubic: true, .. } => Some(Cc::Cubic(cubic::Cubic::new(mtu))),
            QpKind::Tcp { ib_cc: false, .. } => Some(Cc::Dctcp(dctcp::Dctcp::new(mtu))),
            QpKind::Tcp { ib_cc: true, .. } => Some(Cc::DctcpIb(ibcc::DctcpOverIb {
                window: dctcp::Dctcp::new(mtu),
                pace: ibcc::IbCcState::new(line_bps),
            })),
            QpKind::Ib { cc } => cc.then(|| Cc::IbCc(ibcc::IbCcState::new(line_bps))),
            // The Ultra Ethernet transport runs its own congestion control, whatever the
            // profile's `congestion_control` (and whether the priority has a reaction point).
            QpKind::Rdma | QpKind::RdmaUnmanaged if prof.transport == Transport::Uet => {
                Some(Cc::Nscc(nscc::Nscc::new(line_bps, mtu, base_rtt(), &p.uet)))
            }
            QpKind::RdmaUnmanaged => None,
            QpKind::Rdma => match prof.congestion_control {
                CcKind::Dcqcn => Some(Cc::dcqcn(line_bps, &p.dcqcn)),
                CcKind::None => None,
                CcKind::Hpcc => {
                    Some(Cc::Hpcc(hpcc::HpccState::new(line_bps, p.hpcc.base_rtt.unwrap_or_else(base_rtt))))
                }
                CcKind::Timely => Some(Cc::Timely(timely::TimelyState::new(line_bps))),
                CcKind::Dctcp => Some(Cc::DctcpRate(dctcp_rate::DctcpRateState::new(line_bps))),
            },
        }
    }
}

#[cfg(test)]
impl CcParams {
    /// The tables of a profile with DCQCN `d` and every other table at its defaults.
    pub fn for_dcqcn(d: Dcqcn) -> Self {
        CcParams {
            dcqcn: d,
            dctcp: (),
            cubic: (),
            ib: no_ib(),
            hpcc: Hpcc::default(),
            timely: Timely::default(),
            dctcp_rate: DctcpRate::default(),
            uet: Uet::default(),
        }
    }
}
