//! `firmware-update`: a rolling NIC reset (a firmware update) across a share of the hosts,
//! each while its RDMA messages are under way, at the published timescales.

use super::{p, KindInfo, ON_HOSTS};
use serde::Deserialize;

/// Hosts reset one after another when `count` is left out (at most half the hosts).
pub const COUNT: u32 = 4;
/// The link-down time of one reset when `down_us` is left out, µs: ConnectX firmware's wait
/// for its port's link after a reset (the `nic-reset` fault's default, docs/fabric-file.md).
pub const DOWN_US: f64 = 3_000_000.0;
/// Each reset host's message (and its partner's back) when `size_bytes` is left out.
pub const SIZE_BYTES: u64 = 64 << 20;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub count: Option<u32>,
    pub down_us: Option<f64>,
    pub size_bytes: Option<u64>,
    /// A background permutation at this load: the reset runs in edges beside it.
    pub load: Option<f64>,
    pub duration_us: Option<f64>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "firmware-update",
    models: "a rolling firmware update: one host after another has its NIC reset (links down, its RDMA QPs destroyed) while it exchanges a message with a partner; the applications reconnect once the NIC is back and resend their first unacknowledged work request",
    headline: "recovery_over_ideal",
    headline_unit: "time from the reset to the last interrupted message's completion / (link down + reconnection + the rest at line rate)",
    own: &[
        p("count", "hosts", || format!("min(hosts / 2, {COUNT})"), "hosts reset, one after another (the first in ring order); each partners the host half the ring away"),
        p(
            "down_us",
            "µs",
            || format!("{DOWN_US:.0} (3 s: ConnectX's link wait after a reset)"),
            "how long each NIC's links stay down",
        ),
        p("size_bytes", "B", || format!("{} MiB", SIZE_BYTES >> 20), "each way, per reset host; the reset comes when half is sent"),
        p(
            "load",
            "fraction",
            || "none: the reset hosts' messages alone".into(),
            "a background permutation at this load instead of the messages: the first reset host's edges run at packet level beside it (its QPs torn down once the load has settled, the fabric settled again; then from the outage in place, the links and reconnected QPs back, settled again), the 3 s between computed; the other resets alike",
        ),
        p(
            "duration_us",
            "µs",
            || "2000 (the checklist's [steady] horizon_us)".into(),
            "with `load`: horizon of each settling phase",
        ),
    ],
    shared: ON_HOSTS,
};
