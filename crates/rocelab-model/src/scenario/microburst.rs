//! `microburst`: synchronized on/off bursts into one receiver.

use super::{p, KindInfo, RECEIVER};
use serde::Deserialize;

pub const FAN_IN: u32 = 16;
/// Each burst when `burst_bytes` is left out: this many BDPs, clamped.
pub const BURST_BDPS: u64 = 2;
pub const BURST_MIN_BYTES: u64 = 16 << 10;
pub const BURST_MAX_BYTES: u64 = 1 << 20;
pub const DUTY_CYCLE: f64 = 0.25;
/// Periods the run lasts when `duration_us` is left out.
pub const PERIODS: u64 = 10;
/// Most bursts × senders one run posts.
pub const MAX_MESSAGES: u64 = 1_000_000;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub fan_in: Option<u32>,
    pub burst_bytes: Option<u64>,
    pub duty_cycle: Option<f64>,
    pub period_us: Option<f64>,
    pub duration_us: Option<f64>,
    pub jitter_us: Option<f64>,
    pub dst: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "microburst",
    models: "synchronized on/off bursts from N senders into one receiver: the shallow-buffer test",
    headline: "pause_frames",
    headline_unit: "PFC frames sent, every port and priority",
    own: &[
        p("fan_in", "senders", || format!("min(hosts − 1, {FAN_IN})"), "senders per burst"),
        p(
            "burst_bytes",
            "B",
            || format!("{BURST_BDPS} × BDP, clamped to {} KiB..{} MiB", BURST_MIN_BYTES >> 10, BURST_MAX_BYTES >> 20),
            "per sender and burst",
        ),
        p(
            "duty_cycle",
            "fraction",
            || DUTY_CYCLE.to_string(),
            "share of the period the receiver's link is busy with a burst at line rate",
        ),
        p("period_us", "µs", || "fan_in × burst at line rate / duty_cycle".into(), "one burst per period"),
        p("duration_us", "µs", || format!("{PERIODS} periods"), "bursts start during this time"),
        p("jitter_us", "µs", || "0".into(), "each sender's start inside a burst spread over this window"),
    ],
    shared: RECEIVER,
};
