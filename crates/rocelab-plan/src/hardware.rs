//! GPU presets: dense BF16 peak, HBM size and bandwidth, the intra-node link they ship with.
//!
//! Figures are the vendors' datasheet numbers for dense (no sparsity) tensor math. A GPU never
//! sustains its peak: `compute_efficiency` (model FLOPs sustained while busy / peak) says how much
//! of it the planner may use, and is the first assumption every report prints.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSpec {
    pub name: String,
    /// Dense BF16 tensor throughput, TFLOP/s.
    pub peak_bf16_tflops: f64,
    pub hbm_gbytes: f64,
    pub hbm_tbytes_per_s: f64,
    /// Preset name of the link between GPUs of one node (see `link`).
    pub intra_node_link: String,
    /// GPUs per node in the usual server (HGX boards: 8).
    pub gpus_per_node: u32,
    pub source: String,
}

impl GpuSpec {
    pub const PRESETS: &'static [&'static str] = &["a100", "h100", "h200", "b200", "l40s", "rtx4090"];

    pub fn preset(name: &str) -> Option<GpuSpec> {
        let g = |name: &str, tflops, gb, tbs, link: &str, per_node, source: &str| GpuSpec {
            name: name.into(),
            peak_bf16_tflops: tflops,
            hbm_gbytes: gb,
            hbm_tbytes_per_s: tbs,
            intra_node_link: link.into(),
            gpus_per_node: per_node,
            source: source.into(),
        };
        Some(match name.to_ascii_lowercase().as_str() {
            "a100" | "a100-80g" => g("a100", 312.0, 80.0, 2.039, "nvlink3", 8, "NVIDIA A100 datasheet (SXM 80GB)"),
            "h100" | "h100-sxm" => g("h100", 989.0, 80.0, 3.35, "nvlink4", 8, "NVIDIA H100 datasheet (SXM)"),
            "h200" => g("h200", 989.0, 141.0, 4.8, "nvlink4", 8, "NVIDIA H200 datasheet (SXM)"),
            "b200" => g("b200", 2250.0, 180.0, 8.0, "nvlink5", 8, "NVIDIA HGX B200 datasheet"),
            "l40s" => g("l40s", 362.0, 48.0, 0.864, "pcie4", 8, "NVIDIA L40S datasheet"),
            "rtx4090" | "4090" => {
                g("rtx4090", 165.0, 24.0, 1.008, "pcie4", 1, "NVIDIA Ada whitepaper (BF16, FP32 accumulate)")
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkProfile;

    #[test]
    fn every_gpu_preset_names_a_known_intra_node_link() {
        for name in GpuSpec::PRESETS {
            let g = GpuSpec::preset(name).unwrap();
            assert!(g.peak_bf16_tflops > 0.0 && g.hbm_gbytes > 0.0 && g.hbm_tbytes_per_s > 0.0, "{name}");
            let l = LinkProfile::preset(&g.intra_node_link).expect("intra-node preset");
            assert!(!l.is_network(), "{name}");
        }
    }
}
