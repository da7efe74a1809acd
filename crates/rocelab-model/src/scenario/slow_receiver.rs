//! `slow-receiver`: a host draining at a fraction of line rate, or stopped.

use super::{p, KindInfo, LOAD, RECEIVER};
use serde::Deserialize;

pub const FAN_IN: u32 = 4;
/// The drain cycle when 0 < `drain_fraction` < 1, µs.
pub const PERIOD_US: u64 = 20;
/// When the host slows down, at the latest (µs), and at the latest this share of the run.
pub const AT_US: u64 = 20;
pub const AT_SHARE_DIVISOR: u64 = 10;
/// The shortest default run, µs.
pub const MIN_DURATION_US: u64 = 400;
/// The watchdog's detection time when `watchdog = true`, µs.
pub const WATCHDOG_DETECTION_US: u64 = 100;
/// Stall/resume cycles one run may schedule.
pub const MAX_CYCLES: u32 = 100_000;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub drain_fraction: Option<f64>,
    pub period_us: Option<f64>,
    pub fan_in: Option<u32>,
    pub at_us: Option<f64>,
    pub duration_us: Option<f64>,
    pub watchdog: Option<bool>,
    pub watchdog_detection_us: Option<f64>,
    pub load: Option<f64>,
    pub dst: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "slow-receiver",
    models: "a host that drains at a fraction of line rate, or stops (the classic PFC storm source); how far pauses spread and whether the watchdog fires",
    headline: "pause_spread_hops",
    headline_unit: "links from the slow host to the farthest node that was paused",
    own: &[
        p(
            "drain_fraction",
            "fraction",
            || "0 (stops)".into(),
            "0 < f < 1: stalled for 1 − f of every period_us (the NIC drains its buffer when it resumes)",
        ),
        p("period_us", "µs", || PERIOD_US.to_string(), "the drain cycle when 0 < drain_fraction < 1"),
        p("fan_in", "senders", || format!("min(hosts − 1, {FAN_IN})"), "senders, the farthest hosts first"),
        p("at_us", "µs", || format!("min({AT_US}, duration / {AT_SHARE_DIVISOR})"), "when the host slows down"),
        p(
            "duration_us",
            "µs",
            || format!("{AT_US} + time to fill the largest switch buffer twice at line rate, at least {MIN_DURATION_US}"),
            "simulated time",
        ),
        p("watchdog", "bool", || "as [qos.pfc_watchdog]".into(), "turn the PFC watchdog on or off for this run"),
        p(
            "watchdog_detection_us",
            "µs",
            || WATCHDOG_DETECTION_US.to_string(),
            "detection time when watchdog = true (poll: a tenth of it)",
        ),
        LOAD,
    ],
    shared: RECEIVER,
};
