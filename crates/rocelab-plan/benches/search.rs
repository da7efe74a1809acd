//! Times the layout search for 1,024 GPUs (Llama-3-70B and the DeepSeek-V3-like MoE), the
//! issue's "well under a second" target. Run in release: `cargo bench -p rocelab-plan`.
//! It reports wall time per search; it asserts nothing (benchmarks are not timed tests).

use rocelab_plan::spec::{ModelInput, TrainingInput};
use rocelab_plan::{search, PlanSpec, SearchSpec};
use std::time::Instant;

fn spec(model: &str) -> SearchSpec {
    SearchSpec {
        base: PlanSpec {
            model: ModelInput { preset: Some(model.into()), ..Default::default() },
            training: Some(TrainingInput { global_batch: Some(1024), seq_len: Some(4096), ..Default::default() }),
            ..Default::default()
        },
        gpus: 1024,
        top: 10,
    }
}

fn main() {
    for model in ["llama3-70b", "llama3-405b", "deepseek-v3"] {
        let s = spec(model);
        // One warm-up, then the best of five.
        let _ = search(&s).expect("search runs");
        let mut best = f64::MAX;
        let mut evaluated = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let r = search(&s).expect("search runs");
            best = best.min(t.elapsed().as_secs_f64());
            evaluated = r.evaluated;
        }
        println!(
            "search {model:12} 1024 GPUs: {evaluated:6} layouts in {:8.2} ms ({:.2} µs per layout)",
            best * 1e3,
            best * 1e6 / evaluated as f64
        );
    }
}
