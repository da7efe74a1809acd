//! `collective`: an NCCL-like collective as the real training load.

use super::{p, KindInfo, SAMPLE};
use serde::Deserialize;

pub const OP: &str = "all_reduce";
/// nccl-tests' size when `size_bytes` is left out: this much per 8 ranks, clamped.
pub const SIZE_PER_8_RANKS_BYTES: u64 = 4 << 20;
pub const SIZE_MIN_BYTES: u64 = 1 << 20;
pub const SIZE_MAX_BYTES: u64 = 64 << 20;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub op: Option<String>,
    pub size_bytes: Option<u64>,
    pub ranks: Option<u32>,
    pub beside: Option<String>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "collective",
    models: "an NCCL-like collective as the real training load, optionally beside another scenario's traffic",
    headline: "busbw_fraction_of_bound",
    headline_unit: "nccl-tests busbw / the line rate of the NICs it can use (one; on GPU nodes, the node's NICs the channels cross on)",
    own: &[
        p("op", "name", || OP.into(), "all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv"),
        p(
            "size_bytes",
            "B",
            || {
                format!(
                    "{} MiB × ranks / 8, clamped to {}..{} MiB",
                    SIZE_PER_8_RANKS_BYTES >> 20,
                    SIZE_MIN_BYTES >> 20,
                    SIZE_MAX_BYTES >> 20
                )
            },
            "nccl-tests' size",
        ),
        p(
            "ranks",
            "count",
            || "the fabric's placement (every GPU, or every host)".into(),
            "the first N hosts in ring order, one rank each",
        ),
        p(
            "beside",
            "scenario name",
            || "none".into(),
            "run beside that [[scenario]]'s traffic (sustained, incast, microburst or hotspot)",
        ),
    ],
    shared: &[SAMPLE],
};
