//! `incast`: N senders to one receiver at once.

use super::{p, KindInfo, RECEIVER};
use serde::Deserialize;

/// Senders when `fan_in` is left out (at most the hosts but the receiver).
pub const FAN_IN: u32 = 32;
/// Each sender's message when `size_bytes` is left out: this many BDPs, clamped.
pub const SIZE_BDPS: u64 = 8;
pub const SIZE_MIN_BYTES: u64 = 64 << 10;
pub const SIZE_MAX_BYTES: u64 = 4 << 20;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub fan_in: Option<u32>,
    pub size_bytes: Option<u64>,
    pub jitter_us: Option<f64>,
    pub dst: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "incast",
    models: "N senders to one receiver at once (a parameter server, a reduce); completion against N·size/bandwidth",
    headline: "completion_over_ideal",
    headline_unit: "completion time / (N × size × 8 / receiver line rate)",
    own: &[
        p("fan_in", "senders", || format!("min(hosts − 1, {FAN_IN})"), "N: the hosts after the receiver in ring order"),
        p(
            "size_bytes",
            "B",
            || format!("{SIZE_BDPS} × BDP, clamped to {} KiB..{} MiB", SIZE_MIN_BYTES >> 10, SIZE_MAX_BYTES >> 20),
            "per sender",
        ),
        p("jitter_us", "µs", || "0 (synchronized)".into(), "starts spread uniformly (seeded) over this window"),
    ],
    shared: RECEIVER,
};
