//! `firmware-mix`: a share of NICs on another congestion-control profile.

use super::{p, KindInfo, RECEIVER, STEADY_HORIZON};
use crate::config::{CongestionControl, DcqcnConfig};
use serde::Deserialize;

/// Share of the senders on the other profile when `share` is left out.
pub const SHARE: f64 = 0.25;
pub const FAN_IN: u32 = 8;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub share: Option<f64>,
    pub congestion_control: Option<CongestionControl>,
    pub dcqcn: Option<DcqcnConfig>,
    pub fan_in: Option<u32>,
    pub duration_us: Option<f64>,
    pub dst: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "firmware-mix",
    models: "a share of NICs on another congestion-control profile, as a partial rollout leaves a fleet, under an incast of continuous senders",
    headline: "goodput_ratio_other_over_fleet",
    headline_unit: "mean goodput of senders on the other profile / on the fleet's",
    own: &[
        p("share", "fraction", || SHARE.to_string(), "of the senders (every 1/share-th, at least one)"),
        p(
            "congestion_control",
            "dcqcn | none",
            || "none, or dcqcn when `dcqcn` is given".into(),
            "the other profile's CC",
        ),
        p(
            "dcqcn",
            "table",
            || "the fleet's [nic.dcqcn]".into(),
            "the other profile's DCQCN keys (e.g. { cnp_interval_us = 50, rate_ai_mbps = 20 })",
        ),
        p("fan_in", "senders", || format!("min(hosts − 1, {FAN_IN})"), "senders into the receiver"),
        STEADY_HORIZON,
    ],
    shared: RECEIVER,
};
