//! `examples/ib-vs-roce/`: the same topology and load on InfiniBand and on RoCE, against the
//! figures `docs/infiniband.md` reports. The orders are physics and mechanism (credits bound
//! every queue to a VL buffer; PFC lets a deep buffer fill first); the exact values are the
//! doc's, checked to within a few percent so the doc cannot drift from the engine.

use rocelab_model::Model;
use rocelab_sim::{options_from_model, simulate, RunReport};
use std::path::PathBuf;

fn run(name: &str) -> RunReport {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/ib-vs-roce").join(name);
    let text = std::fs::read_to_string(&p).unwrap();
    let m: Model = rocelab_model::load_str(&p.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(&m, options_from_model(&m)).unwrap();
    assert_eq!(r.flows_completed, r.flows.len());
    assert_eq!((r.totals.packets_dropped, r.totals.retransmitted_packets), (0, 0), "{name}: lossless");
    assert_eq!(r.totals.packets_sent, r.totals.packets_delivered, "{name}: conservation");
    r
}

/// (p99 of the 64 KiB mice's completion times in µs, the incast's last byte in µs, PFC frames).
fn figures(r: &RunReport) -> (f64, f64, u64) {
    let mut mice: Vec<f64> =
        r.flows.iter().filter(|f| f.size_bytes == 65_536).map(|f| f.fct_seconds.unwrap() * 1e6).collect();
    assert_eq!(mice.len(), 168);
    mice.sort_by(f64::total_cmp);
    let p99 = mice[(mice.len() as f64 * 0.99) as usize - 1];
    let incast =
        r.flows.iter().filter(|f| f.size_bytes != 65_536).map(|f| f.fct_seconds.unwrap() * 1e6).fold(0.0, f64::max);
    (p99, incast, r.totals.pfc_pause_frames)
}

fn near(got: f64, want: f64, tol: f64) -> bool {
    (got / want - 1.0).abs() <= tol
}

#[test]
fn tail_latency_under_incast_ib_against_roce_at_its_best_and_misconfigured() {
    let ib_run = run("ib.toml");
    // The text names IB's counters as IB does: FECN marks, BECNs, credits, no PFC.
    let text = ib_run.render_text();
    assert!(text.contains("FECN: ") && text.contains("BECN: ") && text.contains("credits per VL"), "{text}");
    assert!(!text.contains("PFC:") && !text.contains("CNP"), "{text}");
    let (ib, ib_static, best, bad) = (
        figures(&ib_run),
        figures(&run("ib-static.toml")),
        figures(&run("roce-best.toml")),
        figures(&run("roce-misconfigured.toml")),
    );
    println!("mice p99 µs / incast µs / PFC frames: IB {ib:?}, IB static {ib_static:?}, RoCE best {best:?}, RoCE misconfigured {bad:?}");
    // The incast: 8 × 16 MiB through one 400G port, at best its goodput allows: 2,701.5 µs on
    // IB (26 B of headers a packet), 2,737.8 µs on RoCE (82 B).
    let bound = |hdr: f64| 8.0 * 16_777_216.0 * (4_096.0 + hdr) / 4_096.0 * 8.0 / 400e9 * 1e6;
    assert!(ib_static.1 >= bound(26.0) && near(ib_static.1, bound(26.0), 0.001), "{}", ib_static.1);
    assert!(best.1 >= bound(82.0) && near(best.1, bound(82.0), 0.001), "{}", best.1);
    // IB congestion control costs the incast a few percent (3.2 % with these settings).
    assert!(ib.1 >= bound(26.0) && near(ib.1, bound(26.0), 0.05), "{}", ib.1);
    // No pause frame on IB; PFC pauses on RoCE, more without ECN.
    assert_eq!((ib.2, ib_static.2), (0, 0));
    assert!(best.2 > 0 && bad.2 > best.2, "{} {}", best.2, bad.2);
    // The mice: near their own transfer time on IB (credits keep every queue to a VL buffer),
    // hundreds of µs behind a 50 MB queue and PFC pauses on RoCE, worst without ECN.
    assert!(ib.0 < 15.0 && ib_static.0 < 15.0, "{} {}", ib.0, ib_static.0);
    assert!(best.0 > 20.0 * ib.0, "{} vs {}", best.0, ib.0);
    assert!(bad.0 > best.0, "{} vs {}", bad.0, best.0);
    // The doc's figures.
    for (got, want) in [(ib.0, 11.16), (ib_static.0, 8.75), (best.0, 915.98), (bad.0, 1319.23)] {
        assert!(near(got, want, 0.02), "p99 {got} µs, the doc says {want}");
    }
}

#[test]
fn ib_runs_repeat_byte_for_byte_and_the_flow_engine_declines_ib() {
    let a = run("ib.toml").to_json();
    assert_eq!(a, run("ib.toml").to_json(), "same file, same seed, same bytes");
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/ib-vs-roce/ib.toml");
    let m = rocelab_model::load_file(&p).unwrap();
    let opts = rocelab_sim::SimOptions { engine: rocelab_sim::EngineKind::Flow, ..options_from_model(&m) };
    let Err(d) = rocelab_sim::build_run(&m, opts) else { panic!("the flow engine must decline an IB fabric") };
    assert_eq!(d[0].path, "fabric.link_layer");
    assert!(d[0].message.contains("does not model InfiniBand"), "{}", d[0].message);
}
