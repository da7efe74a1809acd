//! `switch-reboot`: a spine rebooting under a sustained permutation.

use super::{p, KindInfo, UNDER_LOAD};
use serde::Deserialize;

/// The placement keyword: the spine that carried the most bytes in a probe run.
pub const BUSIEST_SPINE: &str = "busiest-spine";
/// The placement probe (`busiest-*`) runs the load up to the probe duration divided by this;
/// the reboot comes once the load has settled (`edges`).
pub const AT_DIVISOR: u64 = 4;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub a: Option<String>,
    /// `"cold"` (default: every port down) or `"warm"` (links and routes stay, the switch
    /// forwards nothing for `down_us`).
    pub mode: Option<crate::events::RebootMode>,
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
    models: "a spine rebooting under a sustained permutation, at the published timescales: every port down (cold) or nothing forwarded (warm) once the load has settled, back after down_us",
    headline: "packets_lost_in_switch",
    headline_unit: "packets lost inside the rebooting switch and on its links",
    own: &[
        p(
            "a",
            "switch",
            || format!("\"{BUSIEST_SPINE}\""),
            "the switch, or `busiest-spine` (most bytes before the reboot, in a probe run)",
        ),
        super::EARLIEST,
        p(
            "down_us",
            "µs",
            || {
                format!(
                    "cold {:.0} (150 s), warm {:.0} (1 s): the published outages",
                    crate::events::COLD_REBOOT_OUTAGE_US,
                    crate::events::WARM_REBOOT_OUTAGE_US
                )
            },
            "the data-plane outage; longer than a horizon, it is not simulated: its edges run at packet level",
        ),
        p(
            "mode",
            "cold or warm",
            || "\"cold\"".into(),
            "cold: every port down, routes withdrawn; warm: links and routes stay, nothing is forwarded for down_us (the timescales and sources of a [[fault]] switch-reboot: docs/fabric-file.md)",
        ),
    ],
    shared: UNDER_LOAD,
};
