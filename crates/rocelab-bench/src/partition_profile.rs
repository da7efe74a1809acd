//! What a partitioned packet engine would gain on a real run: the run is made single-threaded
//! with every event counted against a cut of the fabric (`rocelab_sim::partition`), and the
//! counts are turned into a projected parallel efficiency (`rocelab bench --partitions`).
//!
//! The projection is a cost model, not a measurement of threads: per window of one lookahead
//! the threads wait for the busiest partition, pay for the cross-partition messages it
//! receives and meet at a barrier; global events (the workload's callbacks, sampling, faults)
//! run alone. The per-event cost is this run's own; the message and barrier costs are stated
//! in the output.

use rocelab_model::Model;
use rocelab_sim::partition::{partition, PartitionBy, WindowProfile};
use rocelab_sim::workload::Workload;
use std::fmt::Write;

/// The cost of one cross-partition message (an enqueue at the sender, a cache-line transfer
/// and a dequeue at the receiver), s: about two cache misses between cores.
pub const CROSS_MESSAGE_S: f64 = 150e-9;

/// The cost of one window's barrier, s: a spinning barrier's round trip through a shared
/// cache line grows with the threads that meet at it.
pub fn barrier_s(threads: u32) -> f64 {
    0.3e-6 + 0.1e-6 * threads as f64
}

/// Builds the workload of a profiled run for its model.
pub type MakeWorkload = fn(&Model) -> Result<Box<dyn Workload>, String>;

/// One cut's counts and projection.
pub struct CutReport {
    pub profile: WindowProfile,
    pub seconds: f64,
    pub events: u64,
    pub efficiency: f64,
}

/// The 1,024-GPU NCCL ring all-reduce of `bytes` on the rail-optimized example.
pub fn all_reduce_1024(m: &Model, bytes: u64) -> Result<Box<dyn Workload>, String> {
    let spec = rocelab_workload::CollectiveSpec::nccl(rocelab_workload::Collective::AllReduce, bytes);
    rocelab_workload::prepare(m, &spec, 1).map(|p| p.workload).map_err(|d| format!("{d:?}"))
}

/// Runs `fabric` (its own traffic, or `workload`) once per partition count, counting against
/// the cut `by` into that many partitions.
pub fn profile(
    fabric: &str,
    workload: Option<MakeWorkload>,
    by: PartitionBy,
    counts: &[u32],
) -> Result<Vec<CutReport>, String> {
    let m = rocelab_model::load_str("scenario.toml", fabric).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for &n in counts {
        let cut = partition(&m, by, n).map_err(|e| e.to_string())?;
        let opts = rocelab_sim::options_from_model(&m);
        let mut sim = match workload {
            Some(w) => rocelab_sim::Sim::with_workload(&m, w(&m)?, Vec::new(), opts),
            None => rocelab_sim::build(&m, opts),
        }
        .map_err(|d| format!("{d:?}"))?;
        sim.profile_partitions(cut);
        // The engine thread's CPU time where Linux reports it (a shared machine inflates wall
        // time, and with it the per-event cost the projection starts from).
        let (c0, t0) = (crate::thread_cpu_seconds(), std::time::Instant::now());
        sim.run(&mut |_| {});
        let seconds = match (c0, crate::thread_cpu_seconds()) {
            (Some(a), Some(b)) => b - a,
            _ => t0.elapsed().as_secs_f64(),
        };
        let profile = sim.take_partition_profile().ok_or("profile lost")?;
        let events = sim.events();
        let event_s = seconds / events.max(1) as f64;
        let efficiency = profile.projected_efficiency(event_s, CROSS_MESSAGE_S, barrier_s(profile.cut.parts));
        out.push(CutReport { profile, seconds, events, efficiency });
    }
    Ok(out)
}

/// The name of the all-reduce run `profile_named` knows beside the bench scenarios.
pub const ALL_REDUCE_1024: &str = "allreduce-1024";

fn all_reduce_1024_16mb(m: &Model) -> Result<Box<dyn Workload>, String> {
    all_reduce_1024(m, 16 << 20)
}

/// [`profile`] of a bench scenario by name, or of `allreduce-1024` (a 16 MiB NCCL ring
/// all-reduce over the 1,024 GPUs of `examples/rail-1024gpu.toml`).
pub fn profile_named(name: &str, by: PartitionBy, counts: &[u32]) -> Result<Vec<CutReport>, String> {
    if name == ALL_REDUCE_1024 {
        let fabric = include_str!("../../../examples/rail-1024gpu.toml");
        return profile(fabric, Some(all_reduce_1024_16mb), by, counts);
    }
    let s = crate::all()
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("no scenario named {name:?}: see `rocelab bench --list`, or {ALL_REDUCE_1024}"))?;
    if s.workload.is_some() {
        return Err(format!("{name} is driven by a test workload: profile a fabric scenario or {ALL_REDUCE_1024}"));
    }
    profile(&s.fabric, None, by, counts)
}

/// The reports as a Markdown table (one row per partition count).
pub fn markdown(name: &str, reports: &[CutReport]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{name}: cross message {:.0} ns, barrier 0.3 µs + 0.1 µs per thread (model)\n",
        CROSS_MESSAGE_S * 1e9
    );
    let _ = writeln!(
        s,
        "| partitions | cut along | blocks | cut links | lookahead | windows | events | busiest per window (Σ) | imbalance | cross msgs | cross / event | global events (windows) | ns/event (1 thread) | projected efficiency |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in reports {
        let p = &r.profile;
        let all = p.total_events();
        let ideal = all as f64 / p.cut.parts as f64;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} ns | {} | {} | {} | {:.3} | {} | {:.3} | {} ({}) | {:.0} | {:.0} % |",
            p.cut.parts,
            p.cut.by.name(),
            p.cut.blocks,
            p.cut.cut_links,
            p.cut.lookahead.map_or("-".to_string(), |l| format!("{}", l.0 / 1000)),
            p.windows,
            all,
            p.critical_events,
            p.critical_events as f64 / ideal.max(1.0),
            p.cross,
            p.cross as f64 / all.max(1) as f64,
            p.global_events,
            p.global_windows,
            r.seconds / r.events.max(1) as f64 * 1e9,
            r.efficiency * 100.0,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a k=4 fat tree permutation cut into its 4 pods, every event is owned by exactly one
    /// partition (their counts add up to the run's events less the global ones), every packet
    /// that leaves a pod crosses a cut link at least once (cross messages > 0), and the
    /// busiest partition per window bounds the work between a quarter and all of it.
    #[test]
    fn a_fat_tree_permutation_is_counted_whole() {
        let fabric = crate::permutation(4).replace("duration_us = 200", "duration_us = 20");
        let r = profile(&fabric, None, PartitionBy::Pod, &[1, 4]).unwrap();
        for c in &r {
            let p = &c.profile;
            assert_eq!(p.total_events() + p.global_events, c.events);
            assert!(p.critical_events * p.cut.parts as u64 >= p.total_events());
            assert!(p.critical_events <= p.total_events());
        }
        assert_eq!(r[0].profile.cross, 0);
        assert_eq!(r[0].profile.critical_events, r[0].profile.total_events());
        assert!(r[1].profile.cross > 0);
        assert_eq!(r[1].profile.cut.lookahead, Some(rocelab_model::SimTime(1_000_000)));
        // Same run, same events, whatever the cut.
        assert_eq!(r[0].events, r[1].events);
    }
}
