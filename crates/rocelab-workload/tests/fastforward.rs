//! Steady-state fast-forward (`SimOptions::fast_forward`) on the rings a training step's data
//! parallelism runs: whole chunks per message (no NCCL slices), long steady stretches.

use rocelab_model::{Model, NodeId, SimTime};
use rocelab_sim::engine::{FastForward, SkipStats};
use rocelab_sim::{Run, SimOptions};
use rocelab_workload::placement::Placement;
use rocelab_workload::ring::{Ring, RingPlan};
use rocelab_workload::{Outcome, QpUse};
use std::cell::RefCell;
use std::rc::Rc;

/// A 2-channel ring all-reduce (2(n − 1) steps of `chunk` bytes per rank) over `ranks`: when it
/// ends, its events, and what the fast-forward skipped.
fn ring(m: &Model, ranks: &[NodeId], chunk: u64, ff: Option<FastForward>) -> (SimTime, u64, Option<SkipStats>) {
    let out = Rc::new(RefCell::new(Outcome::default()));
    let plan = RingPlan {
        steps: 2 * (ranks.len() as u32 - 1),
        chunk_bytes: chunk,
        channels: 2,
        qps: QpUse { qps: 1, split: false },
        seed: 11,
        wire: rocelab_workload::protocol::Wire::plain(),
    };
    let w = Ring::new(&Placement::Hosts(ranks.to_vec()), plan, out.clone());
    let expected = w.chunks_to_deliver();
    let opts = SimOptions { fast_forward: ff, recycle_qps: true, ..SimOptions::default() };
    let mut sim = Run::with_workload(m, Box::new(w), vec![], opts).unwrap_or_else(|d| panic!("{d:?}"));
    sim.run(&mut |_| {});
    let o = out.borrow().clone();
    assert_eq!((o.delivered, o.failed), (expected, 0));
    let snap = sim.snapshot();
    (o.end.unwrap(), snap.events, snap.fast_forward.map(|f| f.1))
}

#[test]
fn a_rail_ring_fast_forwarded_ends_within_a_tenth_of_a_percent_of_the_full_run() {
    let m = rocelab_model::load_file(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rail-128gpu.toml"
    )))
    .unwrap();
    // NIC 0 of every node: one rail, one leaf.
    let ranks: Vec<NodeId> = (0..16).map(|i| m.node_by_name(&format!("node{i}-nic0")).expect("rail 0")).collect();
    let chunk = 2_000_000;
    let (full, full_events, _) = ring(&m, &ranks, chunk, None);
    let (fast, events, skipped) = ring(&m, &ranks, chunk, Some(FastForward::default()));
    let st = skipped.expect("fast-forwarded");
    let err = fast.0 as f64 / full.0 as f64 - 1.0;
    println!(
        "full {full:?} ({full_events} events), fast-forward {fast:?} ({events} events, {st:?}): {:+.3} %",
        err * 100.0
    );
    assert!(err.abs() < 1e-3, "{:+.3} % off the full run", err * 100.0);
    // Each of the 30 steps is one group (the ring's ACK paths close it) skipped once.
    assert_eq!((st.skips, st.early_ends), (30, 0));
    assert!(events * 3 < full_events, "{events} events against {full_events}");
    // Physics: 2(n − 1) steps of the chunk at the NIC's 400 Gb/s less headers bound it below.
    let bound = 30.0 * chunk as f64 * 8.0 / 400e9 * (4096.0 + 82.0) / 4096.0;
    assert!(fast.as_secs_f64() > bound, "{fast:?} under the bound {bound} s");
}
