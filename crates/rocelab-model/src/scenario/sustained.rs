//! `sustained`: every host sending at line rate, a permutation or all-to-all.

use super::{p, KindInfo, LOAD, ON_HOSTS, STEADY_HORIZON};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SustainedPattern {
    #[default]
    Permutation,
    AllToAll,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub duration_us: Option<f64>,
    pub pattern: Option<SustainedPattern>,
    pub load: Option<f64>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "sustained",
    models: "every host sending at line rate for a duration: a permutation (each host to one other) or all-to-all",
    headline: "goodput_fraction",
    headline_unit: "payload delivered / (senders × line rate × duration)",
    own: &[
        STEADY_HORIZON,
        p("pattern", "permutation | all-to-all", || "permutation".into(), "who sends to whom (a seeded derangement)"),
        LOAD,
    ],
    shared: ON_HOSTS,
};
