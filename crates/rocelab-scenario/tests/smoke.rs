//! Every scenario kind runs on each shipped example fabric (`examples/*.toml`, the lint
//! example without traffic included: a scenario brings its own), and reports its headline
//! metric, finite. Durations and sizes are scaled down (debug builds are slow).

use rocelab_model::config::{ScenarioConfig, ScenarioKind};
use std::path::Path;

fn examples() -> Vec<(String, rocelab_model::Model)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v.into_iter()
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), rocelab_model::load_file(&p).unwrap()))
        .collect()
}

/// Small enough for a debug build on a 1,024-host fabric.
fn small(kind: ScenarioKind, hosts: usize) -> ScenarioConfig {
    let mut c = ScenarioConfig::bare(kind);
    let big = hosts > 200;
    match kind {
        ScenarioKind::Sustained | ScenarioKind::Hotspot | ScenarioKind::FirmwareMix => {
            c.set("duration_us", if big { 4.0 } else { 20.0 })
        }
        ScenarioKind::Incast => c.set("size_bytes", 64 << 10),
        ScenarioKind::Microburst => {
            c.set("burst_bytes", 16 << 10);
            c.set("duration_us", 10.0);
        }
        ScenarioKind::SlowReceiver => c.set("duration_us", 30.0),
        ScenarioKind::LinkLoss | ScenarioKind::LinkFlap | ScenarioKind::SwitchReboot | ScenarioKind::RoutingChange => {
            c.set("duration_us", if big { 6.0 } else { 40.0 })
        }
        ScenarioKind::Mixed => {
            c.set("duration_us", if big { 8.0 } else { 40.0 });
            c.set("size_bytes", 16 << 10);
        }
        ScenarioKind::Collective => {
            c.set("ranks", 8);
            c.set("size_bytes", 256 << 10);
        }
        ScenarioKind::Isolation => {
            c.set("size_bytes", 256 << 10);
            c.set("victims", 4);
        }
        ScenarioKind::FirmwareUpdate => {
            c.set("size_bytes", 256 << 10);
            c.set("count", 1);
        }
    }
    if big {
        // Ten samples: each one copies every port's counters.
        c.set("sample_us", c.table.get("duration_us").and_then(|v| v.as_float()).unwrap_or(20.0) / 10.0);
    }
    c
}

#[test]
fn every_kind_runs_on_every_example_with_a_finite_headline() {
    for (file, m) in examples() {
        let hosts = m.hosts().count();
        for &kind in ScenarioKind::ALL {
            let c = small(kind, hosts);
            let t = std::time::Instant::now();
            let r = rocelab_scenario::run(&m, &c, "scenario", 1).unwrap_or_else(|e| panic!("{file} {kind:?}: {e:?}"));
            let v = r.headline.value;
            eprintln!(
                "{file:<26} {:<15} {:<32} {:>12.4} ({} events, {:.2} s)",
                kind.name(),
                r.headline.metric,
                v.unwrap_or(f64::NAN),
                r.events,
                t.elapsed().as_secs_f64()
            );
            assert!(v.is_some_and(f64::is_finite), "{file} {kind:?}: {}", r.render_text());
            assert!(r.series_csv.lines().count() > 1, "{file} {kind:?}: no telemetry");
        }
    }
}
