//! A TCP-like transport's window: DCTCP (RFC 8257), for messages posted with
//! `Net::post_tcp` (lossy traffic beside RDMA, or forced into its class).
//!
//! The sender keeps a congestion window in bytes. Per RFC 8257 §3.3 it estimates α, the share
//! of bytes that were CE-marked, once per window of data (α ← (1 − g)·α + g·F, g = 1/16,
//! α starting at 1), and on marks cuts the window once per window of data: cwnd ← cwnd·(1 − α/2).
//! The receiver echoes every CE mark exactly (§3.2): its ACKs carry the count of marked
//! packets they cover. Without marks the window grows as Reno's (RFC 5681): slow start below
//! ssthresh, one MSS per window above it. A loss (the receiver's NAK, the engine's equivalent
//! of three duplicate ACKs) halves it once per window (§3.5: DCTCP reacts to loss as
//! standard TCP); a timeout drops it to one MSS. Initial window: 10 MSS (RFC 6928).
//!
//! What is not TCP: retransmission is the engine's go-back-N from the NAK (no SACK), and the
//! timeout is the NIC profile's. The window, not DCQCN, paces the flow (no CNPs are sent for it).

use super::{Ack, CongestionControl, Feedback, Loss, Todo};
use rocelab_model::SimTime;

/// DCTCP's α gain.
pub const G: f64 = 1.0 / 16.0;
/// Initial window, in MSS (RFC 6928).
pub const INITIAL_WINDOW: f64 = 10.0;

#[derive(Clone, Debug, PartialEq)]
pub struct Dctcp {
    mss: f64,
    cwnd: f64,
    ssthresh: f64,
    alpha: f64,
    /// α's observation window ends when this PSN is acknowledged.
    window_end: u32,
    acked: u64,
    marked: u64,
    /// No further cut until this PSN is acknowledged (one cut per window of data).
    cut_end: u32,
    /// Window cuts, for tests and reports.
    pub cuts: u32,
}

impl Dctcp {
    pub fn new(mss: u32) -> Dctcp {
        let mss = mss as f64;
        Dctcp {
            mss,
            cwnd: INITIAL_WINDOW * mss,
            ssthresh: f64::INFINITY,
            alpha: 1.0,
            window_end: 0,
            acked: 0,
            marked: 0,
            cut_end: 0,
            cuts: 0,
        }
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd as u64
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn cut(&mut self, factor: f64, snd_nxt: u32) {
        self.ssthresh = (self.cwnd * factor).max(2.0 * self.mss);
        self.cwnd = self.ssthresh;
        self.cut_end = snd_nxt;
        self.cuts += 1;
    }

    /// An ACK moved the left edge by `newly` packets and echoed `marked` CE marks; `snd_una`
    /// and `snd_nxt` after it.
    pub fn on_ack(&mut self, newly: u32, marked: u32, snd_una: u32, snd_nxt: u32) {
        self.acked += newly as u64;
        self.marked += marked as u64;
        if marked > 0 && snd_una > self.cut_end {
            self.cut(1.0 - self.alpha / 2.0, snd_nxt);
        } else if newly > 0 {
            let bytes = newly as f64 * self.mss;
            if self.cwnd < self.ssthresh {
                self.cwnd += bytes;
            } else {
                self.cwnd += self.mss * bytes / self.cwnd;
            }
        }
        if snd_una > self.window_end {
            let f = if self.acked > 0 { (self.marked as f64 / self.acked as f64).min(1.0) } else { 0.0 };
            self.alpha = (1.0 - G) * self.alpha + G * f;
            self.window_end = snd_nxt;
            self.acked = 0;
            self.marked = 0;
        }
    }

    /// A loss was signalled (NAK): halve, once per window. `snd_max` is the highest PSN sent.
    pub fn on_loss(&mut self, snd_una: u32, snd_max: u32) {
        if snd_una >= self.cut_end {
            self.cut(0.5, snd_max);
        }
    }

    /// The retransmission timer fired.
    pub fn on_timeout(&mut self) {
        self.ssthresh = (self.cwnd / 2.0).max(2.0 * self.mss);
        self.cwnd = self.mss;
        self.cuts += 1;
    }
}

/// DCTCP behind the common interface: it reads ACKs (with their echoed marks) and losses, and
/// binds the QP by its window alone (the port paces it).
impl CongestionControl for Dctcp {
    type Params = ();

    #[inline]
    fn on_ack(&mut self, _now: SimTime, ack: &Ack, _p: &()) -> Todo {
        Dctcp::on_ack(self, ack.newly_acked, ack.ce_echoed, ack.snd_una, ack.snd_max);
        Todo::Nothing
    }

    fn on_loss(&mut self, _now: SimTime, loss: Loss, _p: &()) -> Todo {
        match loss {
            Loss::Nak { snd_una, snd_max } => Dctcp::on_loss(self, snd_una, snd_max),
            Loss::Timeout => self.on_timeout(),
        }
        Todo::Nothing
    }

    fn rate_bps(&self) -> f64 {
        f64::INFINITY
    }

    fn line_rate_bps(&self) -> f64 {
        f64::INFINITY
    }

    #[inline]
    fn window_bytes(&self) -> Option<u64> {
        Some(self.cwnd_bytes())
    }

    fn feedback(&self) -> Feedback {
        Feedback { cnp: false, echo_ce: true, int: false, acks: true, rtt: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_doubles_per_window_then_grows_by_one_mss() {
        let mut d = Dctcp::new(1000);
        assert_eq!(d.cwnd_bytes(), 10_000);
        d.on_ack(10, 0, 10, 20);
        assert_eq!(d.cwnd_bytes(), 20_000, "slow start: +1 MSS per MSS acknowledged");
        d.on_loss(10, 20);
        assert_eq!(d.cwnd_bytes(), 10_000, "a loss halves");
        d.on_loss(12, 20);
        assert_eq!(d.cwnd_bytes(), 10_000, "once per window");
        d.on_ack(10, 0, 22, 30);
        assert_eq!(d.cwnd_bytes(), 11_000, "congestion avoidance: +1 MSS per window");
        d.on_timeout();
        assert_eq!(d.cwnd_bytes(), 1_000);
    }

    #[test]
    fn alpha_follows_the_marked_share_and_sets_the_cut() {
        let mut d = Dctcp::new(1000);
        // Half of every window marked, for many windows: α → 0.5.
        let mut una = 0;
        for _ in 0..200 {
            d.on_ack(5, 0, una + 5, una + 20);
            d.on_ack(5, 5, una + 10, una + 20);
            una += 10;
        }
        assert!((d.alpha() - 0.5).abs() < 0.01, "{}", d.alpha());
        // A cut with α = 0.5 keeps three quarters of the window.
        let mut e = d.clone();
        let before = e.cwnd;
        e.cut_end = 0;
        e.on_ack(1, 1, una + 1, una + 20);
        assert!((e.cwnd / before - (1.0 - d.alpha() / 2.0)).abs() < 1e-9);
    }
}
