//! `hotspot`: local congestion on one receiver or one uplink, beside a background load.

use super::{p, KindInfo, LOAD, RECEIVER, STEADY_HORIZON};
use serde::{Deserialize, Serialize};

/// Senders onto the hot receiver when `fan_in` is left out (at most the hosts but two).
pub const FAN_IN: u32 = 8;
/// `cnp-path`: senders into each of the two hot hosts when `fan_in` is left out.
pub const CNP_PATH_FAN_IN: u32 = 4;

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum HotspotTarget {
    /// Many senders to one receiver, beside a background permutation.
    #[default]
    Receiver,
    /// One leaf's cross-leaf traffic squeezed onto one uplink (the others withdrawn).
    Uplink,
    /// A flow into a hot receiver from a host whose own downlink is hot too: the CNPs it is
    /// sent cross a congested egress on their way back (the test of the CNP class's scheduler).
    CnpPath,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub target: Option<HotspotTarget>,
    pub fan_in: Option<u32>,
    pub duration_us: Option<f64>,
    pub load: Option<f64>,
    pub dst: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "hotspot",
    models: "local congestion beside a background load: N senders onto one receiver, or one leaf's cross-leaf traffic squeezed onto one uplink (its other uplinks withdrawn)",
    headline: "max_queue_bytes",
    headline_unit: "deepest egress queue at the hotspot port",
    own: &[
        p(
            "target",
            "receiver | uplink | cnp-path",
            || "receiver".into(),
            "where the congestion is; cnp-path: a flow into a hot receiver from a host that is itself the receiver of an incast, so the CNPs it gets wait at a congested egress",
        ),
        p("fan_in", "senders", || format!("min(hosts − 2, {FAN_IN})"), "receiver: senders onto the hot receiver"),
        STEADY_HORIZON,
        LOAD,
    ],
    shared: RECEIVER,
};
