//! Bad input: every error names the key (for the flag or file:line) and the fix; none panics.

use rocelab_plan::spec::{locate, parse_plan_file, HardwareInput, ModelInput, ParallelInput, TrainingInput};
use rocelab_plan::{resolve, PlanSpec};

fn err(s: PlanSpec) -> rocelab_plan::PlanError {
    resolve(&s).expect_err("must be rejected")
}

#[test]
fn unknown_presets_list_the_known_ones() {
    let e = err(PlanSpec {
        model: ModelInput { preset: Some("llama3-7b".into()), ..Default::default() },
        ..Default::default()
    });
    assert_eq!(e.key, "model.preset");
    assert!(e.hint.contains("llama3-8b"));
    let e = err(PlanSpec {
        hardware: HardwareInput { gpu: Some("h300".into()), ..Default::default() },
        ..Default::default()
    });
    assert_eq!(e.key, "hardware.gpu");
    let mut s = PlanSpec::default();
    s.interconnect.preset = Some("nvlink4".into());
    assert_eq!(err(s).key, "interconnect.preset");
}

#[test]
fn tp_must_divide_heads_and_gpus_must_divide_by_the_layout() {
    let e = err(PlanSpec { parallel: ParallelInput { tp: Some(6), ..Default::default() }, ..Default::default() });
    assert_eq!(e.key, "parallel.tp");
    assert!(e.hint.contains("4"), "{}", e.hint);
    let e = err(PlanSpec {
        parallel: ParallelInput { tp: Some(8), ..Default::default() },
        hardware: HardwareInput { gpus: Some(12), ..Default::default() },
        ..Default::default()
    });
    assert_eq!(e.key, "hardware.gpus");
    let e = err(PlanSpec {
        parallel: ParallelInput { tp: Some(8), pp: Some(2), dp: Some(3), ..Default::default() },
        training: Some(TrainingInput { global_batch: Some(1000), ..Default::default() }),
        ..Default::default()
    });
    assert_eq!(e.key, "training.global_batch");
}

#[test]
fn nonsense_numbers_are_errors_not_panics() {
    for s in [
        PlanSpec { parallel: ParallelInput { tp: Some(0), ..Default::default() }, ..Default::default() },
        PlanSpec { parallel: ParallelInput { pp: Some(1000), ..Default::default() }, ..Default::default() },
        PlanSpec { parallel: ParallelInput { ep: Some(2), ..Default::default() }, ..Default::default() },
        PlanSpec { parallel: ParallelInput { zero: Some(7), ..Default::default() }, ..Default::default() },
        PlanSpec { training: Some(TrainingInput { seq_len: Some(0), ..Default::default() }), ..Default::default() },
        PlanSpec {
            hardware: HardwareInput { sustained_tflops: Some(-1.0), ..Default::default() },
            ..Default::default()
        },
        PlanSpec {
            hardware: HardwareInput { compute_efficiency: Some(f64::NAN), ..Default::default() },
            ..Default::default()
        },
        PlanSpec { model: ModelInput { params_billions: Some(1.0), ..Default::default() }, ..Default::default() },
        PlanSpec { precision: Some("int4".into()), ..Default::default() },
    ] {
        let e = resolve(&s).expect_err("rejected");
        assert!(!e.key.is_empty() && !e.hint.is_empty(), "{e:?}");
    }
}

#[test]
fn file_errors_carry_line_and_column() {
    let text = "# a fabric file with a plan\n[fabric]\nname = \"x\"\n\n[plan.parallel]\ntp = 6\n";
    let spec = parse_plan_file("f.toml", text).unwrap();
    let e = resolve(&spec).unwrap_err();
    assert_eq!(e.key, "parallel.tp");
    assert_eq!(locate(text, &e.key), Some((6, 1)));
    // Unknown keys and syntax errors are located by the parser.
    let bad = "[plan.parallel]\ntp = 8\ntpp = 2\n";
    let msg = parse_plan_file("g.toml", bad).unwrap_err();
    assert!(msg.starts_with("g.toml:3:1:"), "{msg}");
    let msg = parse_plan_file("h.toml", "[plan\n").unwrap_err();
    assert!(msg.starts_with("h.toml:1:"), "{msg}");
    // A standalone plan file (no [plan] table) works too.
    let spec = parse_plan_file("p.toml", "[model]\npreset = \"llama3-8b\"\n[parallel]\ntp = 8\n").unwrap();
    assert_eq!(resolve(&spec).unwrap().model.name, "llama3-8b");
}

#[test]
fn flags_override_the_file() {
    let file = parse_plan_file("f.toml", "[plan.parallel]\ntp = 4\npp = 2\n").unwrap();
    let flags = PlanSpec { parallel: ParallelInput { tp: Some(8), ..Default::default() }, ..Default::default() };
    let merged = file.overlay(&flags).unwrap();
    assert_eq!(merged.parallel.tp, Some(8));
    assert_eq!(merged.parallel.pp, Some(2));
    assert!(flags.has("parallel.tp") && !flags.has("parallel.pp"));
}
