//! The twin against published nccl-tests runs of RoCE clusters whose hardware is stated
//! (`tests/fixtures/nccl-real/`, each log beside the fabric file that describes its cluster and
//! a SOURCE.md naming where it was published): `rocelab doctor --nccl LOG --fabric F` puts the
//! twin's table beside the log's, and each test pins where the twin matches and, where it does
//! not, the figure that says why.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).output().expect("run rocelab")
}

fn real(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nccl-real").join(name).display().to_string()
}

/// Any snapshot will do: the comparison reads the nccl-tests log and the fabric file only.
fn some_dump() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/doctor-dump/gpu01-1796204467000")
        .display()
        .to_string()
}

/// One size of the side-by-side: (size, real µs, twin µs, real GB/s, twin GB/s, verdict).
type Row = (u64, f64, f64, f64, f64, String);

fn side_by_side(log: &str, fabric: &str) -> (serde_json::Value, Vec<Row>) {
    let o = rocelab(&["doctor", "--fabric", &real(fabric), "--nccl", &real(log), "--json", &some_dump()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    let rows = v["twin"][0]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no twin rows: {v}"))
        .iter()
        .map(|r| {
            let f = |k: &str| r[k].as_f64().unwrap();
            let verdict = r["verdict"].as_str().unwrap().to_string();
            (
                r["size_bytes"].as_u64().unwrap(),
                f("real_time_us"),
                f("twin_time_us"),
                f("real_busbw_gbytes_per_s"),
                f("twin_busbw_gbytes_per_s"),
                verdict,
            )
        })
        .collect();
    (v, rows)
}

#[test]
fn h200_2_nodes_on_spectrum_x_the_twin_matches_from_128_mib_to_512_mib() {
    // 2 × 8 H200, 8 × 400GbE BlueField-3 per node, RoCEv2 on Spectrum-X rails, NCCL 2.30.4.
    let (v, rows) = side_by_side("h200-2node-spectrumx-all_reduce.txt", "h200-2node-spectrumx.toml");
    assert_eq!((v["twin"][0]["real_ranks"].as_u64(), v["twin"][0]["twin_ranks"].as_u64()), (Some(16), Some(16)));
    // Every size of the log up to the twin's default limit (1 GiB) ran on the twin.
    assert_eq!(rows.len(), 21);
    assert_eq!(v["twin"][0]["real_only_sizes"], serde_json::json!([2u64 << 30, 4u64 << 30, 8u64 << 30, 16u64 << 30]));
    let row = |size: u64| rows.iter().find(|r| r.0 == size).unwrap_or_else(|| panic!("{size} B: {rows:?}"));
    let busbw_off = |size: u64| {
        let r = row(size);
        r.4 / r.3 - 1.0
    };

    // Bandwidth-bound sizes where NCCL runs a ring on this cluster: the twin's busbw is within
    // 15 % of the log's (+13 %, −5 %, −12 %).
    for size in [128u64 << 20, 256 << 20, 512 << 20] {
        assert!(busbw_off(size).abs() <= 0.15, "{size} B: twin {:+.1} %: {:?}", busbw_off(size) * 100.0, row(size));
    }
    assert_eq!(row(256 << 20).5, "matches");

    // From 1 GiB the log exceeds what any ring can do on 8 × 400G: 2(n−1)/n · S over the
    // node's NICs is at most their payload goodput, 8 × 50 GB/s × 4096/(4096 + 82) = 392 GB/s
    // of busbw. NCCL ran NVLink SHARP with a tree between the nodes there (NVLS-tree: the
    // switch reduces inside the node, each node sends S once), which the twin does not run; the
    // twin's ring stays under the bound.
    let ring_bound = 8.0 * 50.0 * 4096.0 / 4178.0;
    let top = row(1 << 30);
    assert!(top.3 > ring_bound * 1.15 && top.4 <= ring_bound, "{top:?} against {ring_bound}");
    assert_eq!(top.5, "above twin");

    // 1–16 MiB: the twin (tree/LL128 as NCCL's model picks it) takes 0.52–0.57 of the log's
    // time. NCCL's own model predicts 60, 84 and 175 µs at 1, 4 and 16 MiB for this system, the
    // log reads 77, 106 and 208: the log's tree pays a bandwidth cost per channel that NCCL's
    // model states (per-channel LL128 caps, tree correction) and the twin's tree does not
    // charge; the figures below pin the gap so that a change to either side shows.
    for size in [1u64 << 20, 4 << 20, 16 << 20] {
        let r = row(size);
        let share = r.2 / r.1;
        assert!((0.45..0.65).contains(&share), "{size} B: twin time {:.2} of the log's: {r:?}", share);
    }
    // Which is why the doctor judges from 256 MiB (`twin::JUDGED_FROM_BYTES`): below it this
    // healthy cluster would read "far below twin"; as it is, no shortfall is reported and the
    // sizes above any ring say the twin does not describe the run.
    assert!(rows.iter().filter(|r| r.0 < 256 << 20).all(|r| r.5 == "not judged"), "{rows:?}");
    let codes: Vec<&str> = v["findings"].as_array().unwrap().iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"twin-above") && !codes.contains(&"twin-shortfall"), "{codes:?}");
}
