//! `routing-change`: the ECMP hash or the routes change under a sustained permutation.

use super::{p, KindInfo, B, BUSIEST_UPLINK, UNDER_LOAD};
use serde::{Deserialize, Serialize};

/// The placement probe (`busiest-*`) runs the load up to the probe duration divided by this;
/// the change happens once the load has settled (`edges`).
pub const AT_DIVISOR: u64 = 2;

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RoutingChangeKind {
    /// Every switch takes a new ECMP hash seed.
    #[default]
    HashSeed,
    /// The source port leaves the ECMP hash.
    HashFields,
    /// A spine uplink stops carrying routes (stays up).
    RouteWithdraw,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub change: Option<RoutingChangeKind>,
    pub seed: Option<u64>,
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
    name: "routing-change",
    models: "the ECMP hash or the routes change under a sustained permutation: flows move, nothing should drop",
    headline: "ecmp_imbalance_change",
    headline_unit: "ECMP imbalance after − before (max / mean uplink bytes − 1, mean over leaves)",
    own: &[
        p("change", "hash-seed | hash-fields | route-withdraw", || "hash-seed".into(), "what changes"),
        p("seed", "u64", || "[routing] ecmp_seed + 1".into(), "hash-seed: the new seed"),
        p("a", "node", || format!("\"{BUSIEST_UPLINK}\""), "route-withdraw: the link"),
        B,
        super::EARLIEST,
    ],
    shared: UNDER_LOAD,
};
