//! `link-flap`: a fabric link going down and up under a sustained permutation.

use super::{p, KindInfo, B, LINK, UNDER_LOAD};
use serde::Deserialize;

/// The placement probe (`busiest-*`) runs the load up to the probe duration divided by this;
/// the first flap comes once the load has settled (`edges`).
pub const AT_DIVISOR: u64 = 4;
/// Down/up cycles when `count` is left out, and the most a run takes.
pub const COUNT: u32 = 3;
pub const MAX_COUNT: u32 = 10_000;
/// One cycle when `period_us` is left out, µs: 2 s, the link down for the first second and up
/// for the next. A flap the control plane acts on: longer than BFD's detection time at FRR's
/// defaults (bfdd: 300 ms intervals × detect multiplier 3 = 900 ms, RFC 5880 §6.8.4) and
/// within the link debounce timers switches are configured with (0–5 s: Cisco NX-OS
/// `link debounce time`, AlaxalA's default 2 s).
pub const PERIOD_US: f64 = 2e6;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub a: Option<String>,
    pub b: Option<String>,
    pub at_us: Option<f64>,
    pub count: Option<u32>,
    pub period_us: Option<f64>,
    pub duration_us: Option<f64>,
    pub convergence_us: Option<f64>,
    pub load: Option<f64>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "link-flap",
    models: "a fabric link going down and up under a sustained permutation (a dirty optic)",
    headline: "packets_lost",
    headline_unit: "packets dropped because a link went down",
    own: &[
        LINK,
        B,
        super::EARLIEST,
        p("count", "cycles", || COUNT.to_string(), "down/up cycles"),
        p(
            "period_us",
            "µs",
            || format!("{PERIOD_US:.0} (2 s: beyond BFD's 900 ms detection, within link debounce timers)"),
            "one cycle (down for its first half); cycles alike: one cycle's edges run, its losses counted count times",
        ),
    ],
    shared: UNDER_LOAD,
};
