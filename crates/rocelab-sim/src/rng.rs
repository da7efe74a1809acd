//! Deterministic random streams: SplitMix64 seeded from `(seed, component id)`, so adding a
//! flow or a switch does not perturb the streams of the others.

#[derive(Clone, Debug)]
pub struct Rng(u64);

#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64, component: u64) -> Self {
        Rng(mix64(seed ^ mix64(component.wrapping_add(0x9e37_79b9_7f4a_7c15))))
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in [0, n) (n > 0), without modulo bias worth caring about for n << 2^64.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// A UDP source port in the dynamic range 49152..=65535 (RFC 6335), as a QP's.
    #[inline]
    pub fn sport(&mut self) -> u16 {
        49152 + self.below(16384) as u16
    }
}
