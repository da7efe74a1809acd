//! `isolation`: a noisy tenant beside a training job's collective.

use super::{p, KindInfo, ON_HOSTS};
use serde::Deserialize;

/// The victim's all-reduce per rank when `size_bytes` is left out.
pub const SIZE_BYTES: u64 = 16 << 20;
/// The victim's share of the hosts when `victims` is left out: half (at least 2).
pub const VICTIM_SHARE: f64 = 0.5;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub size_bytes: Option<u64>,
    pub victims: Option<u32>,
    pub noisy_bytes: Option<u64>,
    pub class: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub sample_us: Option<f64>,
}

pub const INFO: KindInfo = KindInfo {
    name: "isolation",
    models: "a noisy tenant (storage, backup or monitoring traffic) sending into a training job's NICs while the job all-reduces; the job's slowdown against the same all-reduce alone",
    headline: "victim_slowdown",
    headline_unit: "the victim's all-reduce time beside the noisy tenant / the same all-reduce alone (same fabric, seed)",
    own: &[
        p("size_bytes", "B", || format!("{} MiB", SIZE_BYTES >> 20), "the victim's all-reduce, per rank (nccl-tests' size)"),
        p("victims", "hosts", || "half the hosts (at least 2)".into(), "the first N hosts in ring order run the all-reduce; the rest are the noisy tenant"),
        p("noisy_bytes", "B", || "size_bytes".into(), "what each noisy host sends, to victim host i mod N"),
        p(
            "class",
            "class name",
            || "the class carrying storage traffic, else the first lossy one".into(),
            "the noisy tenant's traffic class: the fabric's QoS decides how isolated the job is",
        ),
    ],
    shared: ON_HOSTS,
};
