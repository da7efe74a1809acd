//! No input makes the planner panic: seeded random specs with extreme values go through
//! resolve → estimate → every renderer, and through search and compare.

use rocelab_plan::compare::CompareSpec;
use rocelab_plan::render::{render_compare, render_estimate, Format};
use rocelab_plan::spec::{
    HardwareInput, InferenceInput, InterconnectInput, ModelInput, OverlapInput, ParallelInput, TrainingInput,
};
use rocelab_plan::{compare, estimate, resolve, search, PlanSpec, SearchSpec};

/// SplitMix64: a seeded stream, so a failure replays.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<T: Clone>(&mut self, v: &[T]) -> T {
        v[(self.next() % v.len() as u64) as usize].clone()
    }
    fn maybe<T: Clone>(&mut self, v: &[T]) -> Option<T> {
        // Mostly absent, so that enough specs resolve to exercise the estimate too.
        if !self.next().is_multiple_of(5) {
            None
        } else {
            Some(self.pick(v))
        }
    }
}

const U: &[u32] = &[0, 1, 2, 3, 7, 8, 16, 64, 126, 1000, 65_536, u32::MAX];
const F: &[f64] = &[0.0, -1.0, 0.5, 1.0, 2.0, 400.0, 1e9, f64::NAN, f64::INFINITY];

fn random_spec(r: &mut Rng) -> PlanSpec {
    let training = r.next().is_multiple_of(2);
    PlanSpec {
        model: ModelInput {
            preset: r.maybe(&["llama3-8b".to_string(), "deepseek-v3".into(), "mixtral-8x7b".into(), "nope".into()]),
            params_billions: if r.next().is_multiple_of(4) { r.maybe(F) } else { None },
            layers: if r.next().is_multiple_of(4) { r.maybe(U) } else { None },
            heads: if r.next().is_multiple_of(4) { r.maybe(U) } else { None },
            kv_heads: if r.next().is_multiple_of(4) { r.maybe(U) } else { None },
            experts: if r.next().is_multiple_of(6) { r.maybe(U) } else { None },
            ..Default::default()
        },
        precision: r.maybe(&["bf16".to_string(), "fp8".into(), "int4".into(), "fp32".into()]),
        training: training.then(|| TrainingInput {
            global_batch: r.maybe(U),
            micro_batch: r.maybe(U),
            seq_len: r.maybe(U),
            ..Default::default()
        }),
        inference: (!training).then(|| InferenceInput {
            prompt_tokens: r.maybe(U),
            output_tokens: r.maybe(U),
            batch: r.maybe(U),
            disaggregated: r.maybe(&[true, false]),
        }),
        parallel: ParallelInput {
            tp: r.maybe(U),
            pp: r.maybe(U),
            dp: r.maybe(U),
            ep: r.maybe(U),
            cp: r.maybe(U),
            zero: r.maybe(&[0u8, 1, 2, 3, 9]),
            schedule: r.maybe(&["interleaved".to_string(), "gpipe".into(), "1f1b".into()]),
            virtual_stages: r.maybe(U),
            recompute: r.maybe(&["full".to_string(), "none".into()]),
            ..Default::default()
        },
        hardware: HardwareInput {
            gpu: r.maybe(&["h100".to_string(), "rtx4090".into(), "b200".into()]),
            gpus: r.maybe(U),
            gpus_per_node: r.maybe(U),
            nics_per_node: r.maybe(U),
            sustained_tflops: r.maybe(F),
            hbm_efficiency: r.maybe(F),
            ..Default::default()
        },
        interconnect: InterconnectInput {
            preset: r.maybe(&["tb5".to_string(), "eth10-tcp".into(), "ib-xdr".into()]),
            rate_gbps: r.maybe(F),
            latency_us: r.maybe(F),
            efficiency: r.maybe(F),
            ..Default::default()
        },
        overlap: OverlapInput { tp: r.maybe(F), ..Default::default() },
        ..Default::default()
    }
}

#[test]
fn random_specs_never_panic() {
    let mut r = Rng(0x5EED);
    let mut ok = 0;
    for _ in 0..5000 {
        let spec = random_spec(&mut r);
        if let Ok(s) = resolve(&spec) {
            let e = estimate(&s);
            for f in [Format::Table, Format::Json, Format::Markdown] {
                assert!(!render_estimate(&e, f).is_empty());
            }
            ok += 1;
        }
    }
    eprintln!("resolved {ok}");
    assert!(ok > 10, "only {ok} specs resolved; the generator is too hostile to test estimate");
}

#[test]
fn search_and_compare_reject_or_survive_odd_inputs() {
    let mut r = Rng(7);
    for _ in 0..60 {
        let spec = random_spec(&mut r);
        let gpus = r.pick(&[1u32, 2, 6, 48, 4096]);
        let _ = search(&SearchSpec { base: spec.clone(), gpus, top: 3 });
        let mut cs = CompareSpec::new(spec);
        cs.nodes = r.pick(&[0u32, 1, 2, 3, 8, u32::MAX]);
        if let Ok(t) = compare(&cs) {
            let _ = render_compare(&t, Format::Markdown);
        }
    }
}

#[test]
fn every_model_and_link_preset_plans_with_defaults() {
    use rocelab_plan::link::LinkProfile;
    use rocelab_plan::model::ModelSpec;
    for model in ModelSpec::PRESETS {
        for link in LinkProfile::PRESETS.iter().filter(|l| LinkProfile::preset(l).unwrap().is_network()) {
            for inference in [false, true] {
                let spec = PlanSpec {
                    model: ModelInput { preset: Some(model.to_string()), ..Default::default() },
                    interconnect: InterconnectInput { preset: Some(link.to_string()), ..Default::default() },
                    hardware: HardwareInput { gpus: Some(64), ..Default::default() },
                    inference: inference.then(InferenceInput::default),
                    ..Default::default()
                };
                let s = resolve(&spec).unwrap_or_else(|e| panic!("{model} over {link}: {e}"));
                let e = estimate(&s);
                assert!(e.headline.step_seconds.is_finite() && e.headline.step_seconds > 0.0, "{model} {link}");
                assert!(e.network_share >= 0.0 && e.network_share <= 1.0, "{model} {link}");
            }
        }
    }
}
