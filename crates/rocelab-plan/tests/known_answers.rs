//! Known answers from the references (reference/planner.md): formulas checked against published
//! numbers, and the Llama 3 405B step time.

use rocelab_plan::spec::{HardwareInput, InterconnectInput, ModelInput, ParallelInput, TrainingInput};
use rocelab_plan::{estimate, resolve, PlanSpec};

fn llama405b_spec() -> PlanSpec {
    PlanSpec {
        model: ModelInput { preset: Some("llama3-405b".into()), ..Default::default() },
        training: Some(TrainingInput {
            global_batch_tokens: Some(16 << 20),
            seq_len: Some(8192),
            micro_batch: Some(1),
            ..Default::default()
        }),
        parallel: ParallelInput {
            tp: Some(8),
            pp: Some(16),
            dp: Some(128),
            schedule: Some("interleaved".into()),
            virtual_stages: Some(8),
            ..Default::default()
        },
        hardware: HardwareInput {
            gpu: Some("h100".into()),
            gpus: Some(16_384),
            sustained_tflops: Some(400.0),
            ..Default::default()
        },
        interconnect: InterconnectInput { preset: Some("roce400".into()), ..Default::default() },
        ..Default::default()
    }
}

#[test]
fn llama3_405b_step_time_is_near_six_seconds() {
    let s = resolve(&llama405b_spec()).expect("valid plan");
    let e = estimate(&s);
    eprintln!("{}", rocelab_plan::render::table(&e));
    let step = e.headline.step_seconds;
    assert!(step > 6.2 / 1.5 && step < 6.2 * 1.5, "step {step} s");
    assert!(e.memory.fits, "405B TP8 PP16 fits an 80 GB H100: {:?}", e.memory);
}
