//! Number formats: how many bytes a weight, an activation or a gradient takes, and how fast the
//! tensor cores run in that format relative to BF16.

use serde::Serialize;

/// The format of weights and activations in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
    /// Weight-only 4-bit quantization (inference): weights 0.5 byte, activations and KV in 16 bit.
    Int4,
}

impl Precision {
    pub const NAMES: &'static [&'static str] = &["fp32", "bf16", "fp16", "fp8", "int4"];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "fp32" | "f32" => Precision::Fp32,
            "bf16" => Precision::Bf16,
            "fp16" | "f16" => Precision::Fp16,
            "fp8" | "f8" => Precision::Fp8,
            "int4" | "q4" | "w4a16" => Precision::Int4,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
            Precision::Int4 => "int4",
        }
    }

    /// Bytes per stored weight.
    pub fn weight_bytes(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            Precision::Bf16 | Precision::Fp16 => 2.0,
            Precision::Fp8 => 1.0,
            Precision::Int4 => 0.5,
        }
    }

    /// Bytes per activation element, and so per element of every activation collective and of the
    /// KV cache. FP8 recipes (Transformer Engine) keep activations between GEMMs, and the TP/PP
    /// collectives that carry them, in BF16; int4 is weight-only.
    pub fn activation_bytes(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            _ => 2.0,
        }
    }

    /// The tensor-core figure `peak_multiplier` scales to, as vendors label it: int4 weight-only
    /// kernels run their math in 16 bit, so their peak is the BF16 one, not an int4 figure.
    pub fn peak_label(self) -> &'static str {
        match self {
            Precision::Fp32 => "TF32",
            Precision::Bf16 => "BF16",
            Precision::Fp16 => "FP16",
            Precision::Fp8 => "FP8",
            Precision::Int4 => "BF16 (int4 weights are computed in 16 bit)",
        }
    }

    /// Tensor-core throughput relative to dense BF16: FP32 runs as TF32 at half rate, FP8 at
    /// twice the rate on Hopper and Blackwell; int4 weight-only kernels compute in 16 bit.
    pub fn peak_multiplier(self) -> f64 {
        match self {
            Precision::Fp32 => 0.5,
            Precision::Fp8 => 2.0,
            _ => 1.0,
        }
    }
}
