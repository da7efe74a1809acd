//! `link-flap`: a fabric link going down and up under a sustained permutation.

use super::{p, KindInfo, B, LINK, UNDER_LOAD};
use serde::Deserialize;

pub const AT_DIVISOR: u64 = 4;
/// Down/up cycles when `count` is left out, and the most a run takes.
pub const COUNT: u32 = 3;
pub const MAX_COUNT: u32 = 10_000;
/// One cycle: the run's duration divided by this.
pub const PERIOD_DIVISOR: u64 = 8;

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
        p("at_us", "µs", || format!("duration / {AT_DIVISOR}"), "when the fault or change happens"),
        p("count", "cycles", || COUNT.to_string(), "down/up cycles"),
        p("period_us", "µs", || format!("duration / {PERIOD_DIVISOR}"), "one cycle (down for its first half)"),
    ],
    shared: UNDER_LOAD,
};
