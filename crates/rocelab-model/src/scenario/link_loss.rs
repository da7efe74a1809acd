//! `link-loss`: a fabric link lost for good under a sustained permutation.

use super::{KindInfo, B, LINK, UNDER_LOAD};
use serde::Deserialize;

/// The placement probe (`busiest-*`) runs the load up to the probe duration divided by this;
/// the link is lost once the load has settled (`edges`).
pub const AT_DIVISOR: u64 = 4;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub a: Option<String>,
    pub b: Option<String>,
    pub at_us: Option<f64>,
    pub duration_us: Option<f64>,
    pub convergence_us: Option<f64>,
    pub load: Option<f64>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "link-loss",
    models: "a fabric link lost for good under a sustained permutation (a cable pulled, an optic dead)",
    headline: "goodput_after_over_before",
    headline_unit: "fabric goodput after the loss / before",
    own: &[LINK, B, super::EARLIEST],
    shared: UNDER_LOAD,
};
