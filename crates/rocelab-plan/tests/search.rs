//! Layout search: ranked, memory-respecting, deterministic, pinned dimensions honoured.

use rocelab_plan::spec::{HardwareInput, ModelInput, ParallelInput, TrainingInput};
use rocelab_plan::{search, PlanSpec, SearchSpec};

fn base(model: &str) -> PlanSpec {
    PlanSpec {
        model: ModelInput { preset: Some(model.into()), ..Default::default() },
        training: Some(TrainingInput { global_batch: Some(1024), seq_len: Some(4096), ..Default::default() }),
        ..Default::default()
    }
}

#[test]
fn search_1024_gpus_ranks_fitting_layouts_and_keeps_tp_in_the_node() {
    let r = search(&SearchSpec { base: base("llama3-70b"), gpus: 1024, top: 20 }).unwrap();
    assert!(r.evaluated > 500, "evaluated {}", r.evaluated);
    assert!(r.out_of_memory > 0, "some layouts must not fit");
    assert_eq!(r.ranked.len(), 20);
    for w in r.ranked.windows(2) {
        assert!(w[0].step_seconds <= w[1].step_seconds);
    }
    for c in &r.ranked {
        assert!(c.memory_bytes <= 72e9, "{} uses {}", c.layout, c.memory_bytes);
        assert_eq!(c.tp * c.cp * c.pp * c.dp, 1024);
    }
    // The best layout keeps TP inside an 8-GPU node (SC21 takeaway #1), not spanning nodes.
    assert!(r.ranked[0].tp <= 8, "best {}", r.ranked[0].layout);
}

#[test]
fn pinned_dimensions_are_not_searched() {
    let mut b = base("llama3-70b");
    b.parallel = ParallelInput { tp: Some(4), ..Default::default() };
    let r = search(&SearchSpec { base: b, gpus: 256, top: 50 }).unwrap();
    assert!(!r.ranked.is_empty());
    assert!(r.ranked.iter().all(|c| c.tp == 4));
}

#[test]
fn moe_search_uses_expert_parallelism() {
    let mut b = base("mixtral-8x7b");
    b.hardware = HardwareInput { gpu: Some("h100".into()), ..Default::default() };
    let r = search(&SearchSpec { base: b, gpus: 64, top: 1000 }).unwrap();
    assert!(r.ranked.iter().any(|c| c.ep > 1));
}

#[test]
fn search_is_deterministic() {
    let a = search(&SearchSpec { base: base("llama3-8b"), gpus: 128, top: 30 }).unwrap();
    let b = search(&SearchSpec { base: base("llama3-8b"), gpus: 128, top: 30 }).unwrap();
    assert_eq!(a, b);
}

#[test]
fn inference_search_ranks_by_tokens_per_second() {
    let mut b = base("llama3-70b");
    b.training = None;
    b.inference = Some(Default::default());
    let r = search(&SearchSpec { base: b, gpus: 16, top: 10 }).unwrap();
    assert!(!r.ranked.is_empty());
    for w in r.ranked.windows(2) {
        assert!(w[0].tokens_per_s >= w[1].tokens_per_s);
    }
}
