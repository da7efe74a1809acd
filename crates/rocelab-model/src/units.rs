//! Units that the engines compute with: integer picoseconds and bits per second.
//!
//! Time is `SimTime(u64)` in picoseconds: 400 Gb/s is exactly 20 ps per byte, and a u64 covers
//! about 213 days of simulated time. Serialization delays are computed in integer arithmetic
//! (u128 where a rate does not divide evenly) so two runs on different machines agree to the
//! picosecond.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in (or span of) simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);
    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms * 1_000_000_000)
    }
    /// Rounds a (non-negative, finite) number of seconds to the nearest picosecond.
    pub fn from_secs_f64(s: f64) -> Self {
        SimTime((s * 1e12).round().max(0.0) as u64)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-12
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub fn saturating_sub(self, o: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(o.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, o: SimTime) -> SimTime {
        SimTime(self.0 + o.0)
    }
}
impl AddAssign for SimTime {
    #[inline]
    fn add_assign(&mut self, o: SimTime) {
        self.0 += o.0
    }
}
impl Sub for SimTime {
    type Output = SimTime;
    #[inline]
    fn sub(self, o: SimTime) -> SimTime {
        SimTime(self.0 - o.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps >= 1_000_000_000 {
            write!(f, "{:.3} ms", ps as f64 / 1e9)
        } else if ps >= 1_000_000 {
            write!(f, "{:.3} µs", ps as f64 / 1e6)
        } else if ps >= 1_000 {
            write!(f, "{:.3} ns", ps as f64 / 1e3)
        } else {
            write!(f, "{ps} ps")
        }
    }
}

/// A link or sending rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitsPerSec(pub u64);

impl BitsPerSec {
    pub const fn from_gbps(g: u64) -> Self {
        BitsPerSec(g * 1_000_000_000)
    }
    pub const fn from_mbps(m: u64) -> Self {
        BitsPerSec(m * 1_000_000)
    }
    pub fn from_gbps_f64(g: f64) -> Self {
        BitsPerSec((g * 1e9).round() as u64)
    }
    pub fn gbps(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time to put `bytes` on the wire at this rate, rounded up to a whole picosecond.
    #[inline]
    pub fn serialize(self, bytes: u64) -> SimTime {
        debug_assert!(self.0 > 0);
        let num = bytes as u128 * 8 * 1_000_000_000_000u128;
        let r = self.0 as u128;
        SimTime(num.div_ceil(r) as u64)
    }
    /// Bytes that this rate moves in `t` (rounded down).
    pub fn bytes_in(self, t: SimTime) -> u64 {
        (self.0 as u128 * t.0 as u128 / 8 / 1_000_000_000_000u128) as u64
    }
}

impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.gbps();
        if g >= 1.0 {
            write!(f, "{} Gb/s", trim_float(g))
        } else {
            write!(f, "{} Mb/s", trim_float(self.0 as f64 / 1e6))
        }
    }
}

/// Formats a float without trailing zeros (`400`, `12.5`).
pub fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A byte count as nccl-tests writes it: a number with an optional K, M or G suffix (powers of
/// 1024, as `-b 64K -e 1G`); `None` if it is not one, or is 0, or overflows.
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)).filter(|&n| n > 0)
}

/// Signal propagation in fibre or copper: about 5 ns per metre (velocity factor ~0.67).
pub const PROPAGATION_PS_PER_M: u64 = 5_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_nccl_tests_writes_them() {
        assert_eq!(parse_size("8"), Some(8));
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size(" 1g "), Some(1 << 30));
        assert_eq!(parse_size("256M"), Some(256 << 20));
        for bad in ["", "0", "K", "1.5G", "-1", "99999999999999999999G"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn serialization_is_exact_where_rates_divide() {
        assert_eq!(BitsPerSec::from_gbps(400).serialize(1), SimTime(20));
        assert_eq!(BitsPerSec::from_gbps(100).serialize(1000), SimTime(80_000));
        // 25G: 320 ps per byte
        assert_eq!(BitsPerSec::from_gbps(25).serialize(1), SimTime(320));
    }

    #[test]
    fn serialization_rounds_up_where_rates_do_not_divide() {
        // 3 Gb/s: 8/3 ns per byte = 2666.67 ps -> 2667
        assert_eq!(BitsPerSec::from_gbps(3).serialize(1), SimTime(2667));
    }

    #[test]
    fn bytes_in_inverts_serialize() {
        let r = BitsPerSec::from_gbps(100);
        assert_eq!(r.bytes_in(SimTime::from_us(1)), 12_500);
    }

    #[test]
    fn display() {
        assert_eq!(SimTime::from_us(3).to_string(), "3.000 µs");
        assert_eq!(BitsPerSec::from_gbps(400).to_string(), "400 Gb/s");
        assert_eq!(BitsPerSec::from_mbps(500).to_string(), "500 Mb/s");
    }
}
