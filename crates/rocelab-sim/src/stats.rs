//! Counters the engine writes on the hot path: preallocated, plain integers, no names.
//! Names from the metric schema (docs/metrics.md) are attached at report time.

use rocelab_model::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DropReason {
    Buffer = 0,
    Headroom = 1,
    LinkDown = 2,
    Wred = 3,
    Watchdog = 4,
}

pub const DROP_REASONS: [(DropReason, &str); 5] = [
    (DropReason::Buffer, "buffer"),
    (DropReason::Headroom, "headroom"),
    (DropReason::LinkDown, "link_down"),
    (DropReason::Wred, "wred"),
    (DropReason::Watchdog, "watchdog"),
];

#[derive(Clone, Debug, Default)]
pub struct PortStats {
    pub pfc_tx: [u64; 8],
    pub pfc_rx: [u64; 8],
    /// Picoseconds this port's priority was paused by its peer.
    pub paused_ps: [u64; 8],
    pub ecn_marked: [u64; 8],
    /// `[queue][reason]`
    pub drops: [[u64; 5]; 8],
    pub storms: [u64; 8],
    pub link_state_changes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct NicStats {
    pub cnp_sent: u64,
    pub cnp_received: u64,
    pub ecn_marked_rx: u64,
    pub rx_discards: u64,
}

#[derive(Clone, Debug, Default)]
pub struct QpStats {
    pub bytes_delivered: u64,
    pub retransmitted_packets: u64,
    pub max_sent_psn_plus1: u32,
    pub out_of_sequence: u64,
    pub duplicate: u64,
    pub naks: u64,
    pub timeouts: u64,
    pub cnps: u64,
    /// Retries exhausted: the QP went to the error state.
    pub failed: bool,
}

#[derive(Clone, Debug, Default)]
pub struct GlobalStats {
    /// Every packet created by a NIC (data, ACK, NAK, CNP).
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub data_sent: u64,
    pub data_delivered: u64,
    /// Payload bytes delivered in order, all QPs (progress of a run to completion).
    pub payload_delivered: u64,
    pub data_dropped: u64,
    pub retransmitted: u64,
    /// Packets put on a wire, counted per link crossed.
    pub packet_hops: u64,
    pub data_hops: u64,
    pub storms: u64,
    /// Data packets received ahead of the next expected one and placed (reordered, not lost):
    /// adaptive routing or spraying on InfiniBand or RoCE, and UET.
    pub out_of_order: u64,
    /// The Ultra Ethernet transport: data packets switches trimmed instead of dropping, the
    /// NACKs receivers returned for them, and packets resent on their own.
    pub trimmed: u64,
    pub trim_nacks: u64,
    pub selective_retransmits: u64,
    /// RCCC grants receivers sent (one MTU each).
    pub rccc_grants: u64,
    pub qdelay: Histogram,
    /// The waits of CNPs alone, per switch hop: what a CNP class queued behind data shows.
    pub cnp_qdelay: Histogram,
}

#[derive(Clone, Copy, Debug)]
pub struct SampleRow {
    pub time: SimTime,
    pub node: u32,
    /// `u32::MAX`: the switch's whole buffer.
    pub port: u32,
    pub bytes: u64,
}

/// Sampled rows are capped so a long run cannot exhaust memory.
pub const MAX_SERIES_ROWS: usize = 2_000_000;

/// Log-linear histogram: 8 sub-buckets per power of two (≤ 12.5 % relative error).
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { buckets: vec![0; 8 + 61 * 8], count: 0, max: 0 }
    }
}

impl Histogram {
    #[inline]
    fn index(v: u64) -> usize {
        if v < 8 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as usize; // >= 3
        let sub = ((v >> (e - 3)) & 7) as usize;
        8 + (e - 3) * 8 + sub
    }
    fn upper(i: usize) -> u64 {
        if i < 8 {
            return i as u64;
        }
        let e = (i - 8) / 8 + 3;
        let sub = ((i - 8) % 8) as u64;
        ((8 + sub + 1) << (e - 3)) - 1
    }
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.buckets[Self::index(v)] += 1;
        self.count += 1;
        self.max = self.max.max(v);
    }
    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    /// The samples recorded since `earlier` (a copy of this histogram taken before): a
    /// window's distribution. Its max is the bucket bound of its largest sample.
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let buckets: Vec<u64> = self.buckets.iter().zip(&earlier.buckets).map(|(a, b)| a.saturating_sub(*b)).collect();
        let max = buckets.iter().rposition(|c| *c > 0).map_or(0, |i| Self::upper(i).min(self.max));
        Histogram { count: buckets.iter().sum(), buckets, max }
    }

    /// Adds the samples of `other` (another part of the same run).
    pub fn add(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.max = self.max.max(other.max);
    }

    /// The value below which a fraction `q` of samples fall (bucket upper bound, capped at max).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let target = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= target {
                return Self::upper(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_a_bucket() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((p50 / 50_000_000.0 - 1.0).abs() < 0.13, "{p50}");
        assert!((p99 / 99_000_000.0 - 1.0).abs() < 0.13, "{p99}");
        assert_eq!(h.max(), 100_000_000);
        assert_eq!(h.quantile(1.0), 100_000_000);
        // The window after the first half: the second half's samples only.
        let mut half = Histogram::default();
        for v in 1..=50_000u64 {
            half.record(v * 1000);
        }
        let w = h.since(&half);
        assert_eq!(w.count(), 50_000);
        assert!((w.quantile(0.01) as f64 / 50_500_000.0 - 1.0).abs() < 0.13, "{}", w.quantile(0.01));
        assert_eq!(w.max(), 100_000_000);
    }

    #[test]
    fn bucket_bounds_contain_values() {
        for v in [0u64, 1, 7, 8, 9, 15, 16, 17, 1000, 123_456_789, u64::MAX / 2] {
            let i = Histogram::index(v);
            assert!(Histogram::upper(i) >= v, "{v}");
            if i > 0 {
                assert!(Histogram::upper(i - 1) < v, "{v}");
            }
        }
    }
}
