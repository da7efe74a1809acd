//! Transformer shapes: the presets (Llama 3, a Mixtral-like and a DeepSeek-V3-like MoE) and the
//! arithmetic that follows from a shape: active parameters, FLOPs per token, KV cache per token.
//!
//! Shapes come from the published configs (Hugging Face `config.json` of each model, and the
//! papers: Llama 3 arXiv 2407.21783 Table 3, Mixtral arXiv 2401.04088, DeepSeek-V3 arXiv
//! 2412.19437 §4.2). FLOPs: 6·N per token for training (Kaplan et al. arXiv 2001.08361) plus the
//! attention score and value products, halved for the causal mask.

use serde::Serialize;

/// A decoder-only transformer, dense or mixture-of-experts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSpec {
    pub name: String,
    /// All parameters, experts included.
    pub params: f64,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub ffn_hidden: u32,
    pub vocab: u32,
    /// Routed experts per MoE layer; 1 for a dense model.
    pub experts: u32,
    /// Experts each token is routed to.
    pub top_k: u32,
    /// Layers whose MLP is a mixture of experts.
    pub moe_layers: u32,
    /// Hidden size of one expert's MLP.
    pub expert_ffn_hidden: u32,
    /// Multi-head latent attention (DeepSeek-V2/V3): elements cached per token per layer
    /// (compressed KV plus the decoupled RoPE key) instead of 2·kv_heads·head_dim.
    pub kv_latent_dim: Option<u32>,
    /// Node-limited routing (DeepSeek-V3 §2.1.2): each token's experts span at most this many
    /// nodes, and a token crosses the network once per destination node.
    pub max_nodes_per_token: Option<u32>,
}

impl ModelSpec {
    pub const PRESETS: &'static [&'static str] =
        &["llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3"];

    pub fn preset(name: &str) -> Option<ModelSpec> {
        let dense = |name: &str, params: f64, layers, hidden, heads, kv_heads, ffn, vocab| ModelSpec {
            name: name.to_string(),
            params,
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim: hidden / heads,
            ffn_hidden: ffn,
            vocab,
            experts: 1,
            top_k: 1,
            moe_layers: 0,
            expert_ffn_hidden: 0,
            kv_latent_dim: None,
            max_nodes_per_token: None,
        };
        Some(match name.to_ascii_lowercase().as_str() {
            // Llama 3 / 3.1 (same shapes): config.json of meta-llama/Llama-3.1-{8B,70B,405B}.
            "llama3-8b" | "llama-3-8b" | "llama3.1-8b" => dense("llama3-8b", 8.03e9, 32, 4096, 32, 8, 14336, 128_256),
            "llama3-70b" | "llama-3-70b" | "llama3.1-70b" => {
                dense("llama3-70b", 70.6e9, 80, 8192, 64, 8, 28672, 128_256)
            }
            "llama3-405b" | "llama-3-405b" | "llama3.1-405b" => {
                dense("llama3-405b", 405.8e9, 126, 16384, 128, 8, 53248, 128_256)
            }
            // Mixtral 8x7B: 46.7B total, 12.9B active, 8 experts top-2 in every layer.
            "mixtral-8x7b" | "mixtral" => ModelSpec {
                experts: 8,
                top_k: 2,
                moe_layers: 32,
                expert_ffn_hidden: 14336,
                ..dense("mixtral-8x7b", 46.7e9, 32, 4096, 32, 8, 14336, 32_000)
            },
            // DeepSeek-V3: 671B total, 37B active; 256 routed experts top-8 in 58 of 61 layers
            // (plus one shared expert); MLA caches 512 + 64 elements per token per layer.
            "deepseek-v3" | "deepseek" => ModelSpec {
                name: "deepseek-v3".into(),
                params: 671e9,
                layers: 61,
                hidden: 7168,
                heads: 128,
                kv_heads: 128,
                head_dim: 128,
                ffn_hidden: 18432,
                vocab: 129_280,
                experts: 256,
                top_k: 8,
                moe_layers: 58,
                expert_ffn_hidden: 2048,
                kv_latent_dim: Some(576),
                max_nodes_per_token: Some(4),
            },
            _ => return None,
        })
    }

    pub fn is_moe(&self) -> bool {
        self.experts > 1 && self.moe_layers > 0
    }

    /// Parameters of all routed experts (SwiGLU: three h × f matrices per expert).
    pub fn expert_params(&self) -> f64 {
        if !self.is_moe() {
            return 0.0;
        }
        self.moe_layers as f64 * self.experts as f64 * 3.0 * self.hidden as f64 * self.expert_ffn_hidden as f64
    }

    /// Parameters outside the routed experts (attention, dense MLPs, shared experts, embeddings).
    pub fn dense_params(&self) -> f64 {
        (self.params - self.expert_params()).max(0.0)
    }

    /// Parameters one token touches: dense ones plus top_k experts per MoE layer.
    pub fn active_params(&self) -> f64 {
        if !self.is_moe() {
            return self.params;
        }
        self.dense_params() + self.expert_params() * self.top_k as f64 / self.experts as f64
    }

    /// Width of the attention (heads × head_dim); equals `hidden` for Llama.
    pub fn attention_width(&self) -> f64 {
        self.heads as f64 * self.head_dim as f64
    }

    /// Copies of a token's hidden state an expert all-to-all sends: top_k, or with node-limited
    /// routing and a group that spans nodes, one per destination node (at most M).
    pub fn dispatch_fanout(&self, spans_nodes: bool) -> f64 {
        match (self.max_nodes_per_token, spans_nodes) {
            (Some(m), true) => self.top_k.min(m) as f64,
            _ => self.top_k as f64,
        }
    }

    /// KV cache elements per token, all layers: 2·L·n_kv·d_head (GQA, arXiv 2305.13245), or
    /// L·latent for MLA.
    pub fn kv_elements_per_token(&self) -> u64 {
        match self.kv_latent_dim {
            Some(latent) => self.layers as u64 * latent as u64,
            None => 2 * self.layers as u64 * self.kv_heads as u64 * self.head_dim as u64,
        }
    }

    /// KV cache bytes per token. Llama-3.1-8B in BF16: 2·32·8·128·2 = 131,072.
    pub fn kv_bytes_per_token(&self, bytes_per_element: f64) -> f64 {
        self.kv_elements_per_token() as f64 * bytes_per_element
    }

    /// Training FLOPs per token at sequence length `seq`: 6·N_active for the GEMMs (forward 2N,
    /// backward 4N) plus 6·L·s·d_attn for QKᵀ and AV (4·s·d forward per layer, halved by the causal
    /// mask, times 3 for forward plus backward).
    pub fn training_flops_per_token(&self, seq: u32) -> f64 {
        6.0 * self.active_params() + 6.0 * self.layers as f64 * seq as f64 * self.attention_width()
    }

    /// Forward FLOPs to process `tokens` new tokens of one sequence that already holds `context`
    /// tokens: 2·N_active per token plus 4·d_attn per layer per (query, key) pair actually
    /// computed under the causal mask.
    pub fn forward_flops(&self, tokens: f64, context: f64) -> f64 {
        let pairs = tokens * context + tokens * (tokens + 1.0) / 2.0;
        2.0 * self.active_params() * tokens + 4.0 * self.layers as f64 * self.attention_width() * pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_cache_per_token_matches_the_published_arithmetic() {
        let m8 = ModelSpec::preset("llama3-8b").unwrap();
        assert_eq!(m8.kv_elements_per_token() * 2, 131_072);
        assert_eq!(m8.kv_bytes_per_token(2.0), 131_072.0);
        let m70 = ModelSpec::preset("llama3-70b").unwrap();
        assert_eq!(m70.kv_bytes_per_token(2.0), 327_680.0);
    }

    #[test]
    fn moe_active_parameters_match_the_model_cards() {
        let mx = ModelSpec::preset("mixtral-8x7b").unwrap();
        let active = mx.active_params() / 1e9;
        assert!((active - 12.9).abs() < 0.2, "mixtral active {active}B");
        let ds = ModelSpec::preset("deepseek-v3").unwrap();
        let active = ds.active_params() / 1e9;
        assert!((active - 37.0).abs() < 1.5, "deepseek active {active}B");
    }

    #[test]
    fn training_flops_are_six_n_plus_attention() {
        let m = ModelSpec::preset("llama3-405b").unwrap();
        let f = m.training_flops_per_token(8192);
        assert!(f > 6.0 * m.params && f < 6.3 * m.params);
    }
}
