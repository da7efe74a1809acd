//! `examples/ib-vs-roce/`: collectives beside the incast, on InfiniBand and on RoCE, against
//! the figures `docs/infiniband.md` reports (to within 2 %), and their order.

use std::path::PathBuf;

/// (time in µs, PFC frames) of scenario `name` of example `file`.
fn run(file: &str, name: &str) -> (f64, f64) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/ib-vs-roce").join(file);
    let m = rocelab_model::load_file(&p).unwrap_or_else(|e| panic!("{e}"));
    let (c, path) = rocelab_scenario::find(&m, name).unwrap();
    let r = rocelab_scenario::run(&m, &c, &path, 1).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!(r.report.totals.packets_dropped, 0, "{file} {name}");
    (r.metrics["time_us"].unwrap(), r.metrics["pfc_frames"].unwrap())
}

#[test]
fn collectives_beside_an_incast_on_ib_and_on_roce() {
    let files = ["ib.toml", "ib-static.toml", "roce-best.toml", "roce-misconfigured.toml"];
    // The doc's table: time in µs alone and beside the incast.
    let want = [
        ("alltoall", [320.6, 319.6, 325.7, 409.0]),
        ("allreduce-beside-incast", [1334.5, 3414.3, 3391.4, 3391.4]),
        ("alltoall-beside-incast", [455.6, 757.9, 3328.0, 607.5]),
    ];
    let mut beside = vec![];
    for (name, times) in want {
        for (f, w) in files.iter().zip(times) {
            let (t, pfc) = run(f, name);
            println!("{f} {name}: {t:.1} µs, {pfc} PFC frames");
            assert!((t / w - 1.0).abs() < 0.02, "{f} {name}: {t} µs, the doc says {w}");
            if f.starts_with("ib") {
                assert_eq!(pfc, 0.0);
            }
            if name == "alltoall-beside-incast" {
                beside.push(t);
            }
        }
    }
    // IB with adaptive routing and congestion control finishes first beside the incast.
    for (f, t) in files.iter().zip(&beside).skip(1) {
        assert!(beside[0] < *t, "{f}");
    }
}
