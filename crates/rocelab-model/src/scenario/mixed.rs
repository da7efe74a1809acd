//! `mixed`: TCP-like flows beside RDMA, in their own class or forced into RDMA's.

use super::{p, KindInfo, RECEIVER};
use serde::Deserialize;

/// RDMA senders when `fan_in` is left out: min((hosts − 1) / 2, this).
pub const FAN_IN: u32 = 4;
pub const SIZE_BDPS: u64 = 8;
pub const SIZE_MIN_BYTES: u64 = 64 << 10;
pub const SIZE_MAX_BYTES: u64 = 1 << 20;
pub const DURATION_US: u64 = 400;
/// The RDMA messages start at the run's duration divided by this.
pub const AT_DIVISOR: u64 = 4;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub fan_in: Option<u32>,
    pub tcp_senders: Option<u32>,
    pub size_bytes: Option<u64>,
    pub tcp_class: Option<String>,
    pub shared_class: Option<bool>,
    pub tcp_ecn: Option<bool>,
    pub duration_us: Option<f64>,
    pub dst: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "mixed",
    models: "TCP-like flows (a DCTCP window, RFC 8257, or loss-based TCP without ECN) in a lossy class beside RDMA in the lossless class into one receiver, or forced into the RDMA class (the misconfiguration)",
    headline: "rdma_fct_over_alone",
    headline_unit: "mean RDMA message completion time beside TCP / alone (same seed)",
    own: &[
        p(
            "fan_in",
            "senders",
            || format!("min((hosts − 1) / 2, {FAN_IN})"),
            "RDMA senders, each one message at duration / 4",
        ),
        p("tcp_senders", "senders", || "fan_in".into(), "TCP-like senders, streaming from time 0"),
        p(
            "size_bytes",
            "B",
            || format!("{SIZE_BDPS} × BDP, clamped to {} KiB..{} MiB", SIZE_MIN_BYTES >> 10, SIZE_MAX_BYTES >> 20),
            "each RDMA message",
        ),
        p(
            "tcp_class",
            "class",
            || "the first lossy class carrying TCP, else the class carrying TCP".into(),
            "the class TCP-like traffic takes (params.tcp_class_lossless says if PFC covers it)",
        ),
        p("shared_class", "bool", || "false".into(), "true: TCP-like traffic in the RDMA class instead"),
        p(
            "tcp_ecn",
            "bool",
            || "true".into(),
            "true: DCTCP (RFC 8257), ECN-capable; false: loss-based TCP (Reno, RFC 5681) whose packets switches cannot mark, as Linux's TCP without negotiated ECN",
        ),
        p("duration_us", "µs", || DURATION_US.to_string(), "simulated time"),
    ],
    shared: RECEIVER,
};
