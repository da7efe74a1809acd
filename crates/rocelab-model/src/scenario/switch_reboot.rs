//! `switch-reboot`: a spine rebooting under a sustained permutation.

use super::{p, KindInfo, UNDER_LOAD};
use serde::Deserialize;

/// The placement keyword: the spine that carried the most bytes in a probe run.
pub const BUSIEST_SPINE: &str = "busiest-spine";
pub const AT_DIVISOR: u64 = 4;
/// How long it stays down: the run's duration divided by this.
pub const DOWN_DIVISOR: u64 = 4;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub a: Option<String>,
    pub at_us: Option<f64>,
    pub down_us: Option<f64>,
    pub duration_us: Option<f64>,
    pub convergence_us: Option<f64>,
    pub load: Option<f64>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "switch-reboot",
    models: "a spine rebooting under a sustained permutation: every port down, its buffers lost, back after down_us",
    headline: "packets_lost_in_switch",
    headline_unit: "packets lost inside the rebooting switch and on its links",
    own: &[
        p(
            "a",
            "switch",
            || format!("\"{BUSIEST_SPINE}\""),
            "the switch, or `busiest-spine` (most bytes before the reboot, in a probe run)",
        ),
        p("at_us", "µs", || format!("duration / {AT_DIVISOR}"), "when the fault or change happens"),
        p("down_us", "µs", || format!("duration / {DOWN_DIVISOR}"), "how long it stays down"),
    ],
    shared: UNDER_LOAD,
};
