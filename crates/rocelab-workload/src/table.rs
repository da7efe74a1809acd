//! The layout of nccl-tests' `*_perf` output, so a twin's table reads like a real one (and
//! `rocelab doctor` parses both with the same parser).
//!
//! The twin runs each size once and has no separate in-place buffer: the in-place columns
//! repeat the out-of-place figures. `#wrong` is 0 for a size that completed; a size whose
//! chunks did not all arrive (a QP exhausted its retries) gets a comment line instead of a
//! row, as nccl-tests would never print one for a collective that hung.

use crate::CollectiveResult;
use std::fmt::Write;

/// nccl-tests' element type for the count column (`-d float`, 4 bytes).
const TYPE: &str = "float";
const TYPE_BYTES: u64 = 4;

/// The whole output for a sweep of one collective, header and footer included.
pub fn render(results: &[CollectiveResult], fabric: &str) -> String {
    let mut s = String::new();
    let Some(first) = results.first() else { return s };
    let _ = writeln!(s, "# Collective test starting: {}_perf", first.op);
    // The algorithm and protocol of each size, in size order (NCCL's pick may change with it).
    let mut picks: Vec<String> = vec![];
    for r in results {
        let p = format!("{}/{}", r.algo, r.proto);
        if !picks.contains(&p) {
            picks.push(p);
        }
    }
    // Said only where charged, so tables without it keep their bytes.
    let launch = first.host_launch_floor_us.map_or(String::new(), |f| {
        format!(", each call at least {f:.1} us (one host thread launches it on several GPUs)")
    });
    let _ = writeln!(
        s,
        "# rocelab twin of fabric `{fabric}`: {} ranks ({}), {} channels, {}, {}-level engine{launch}",
        first.ranks,
        first.placement,
        first.channels,
        picks.join(" then "),
        first.engine.name()
    );
    // nccl-tests lists its ranks (`# Using devices`); the doctor counts them from here.
    s.push_str("#\n# Using devices\n");
    for (r, (host, dev)) in first.rank_devices.iter().enumerate() {
        let _ = writeln!(s, "#  Rank {r:>2} Group  0 Pid      0 on {host:>8} device {dev:>2} [0x00] twin");
    }
    s.push_str("#\n");
    s.push_str("#                                                              out-of-place                       in-place          \n");
    s.push_str("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    s.push_str("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n");
    let mut done = 0usize;
    let mut sum = 0.0;
    for r in results {
        if !r.time_us.is_finite() {
            let _ = writeln!(s, "# {} B: did not complete ({} chunks never arrived)", r.bytes, r.failed_chunks);
            continue;
        }
        // Only the reductions have an operator; nccl-tests prints `none` for the others.
        let redop = if matches!(r.op, "all_reduce" | "reduce_scatter") { "sum" } else { "none" };
        let group =
            format!("  {:>7}  {:>6.2}  {:>6.2}  {:>5}", time(r.time_us), r.algbw_gbytes_per_s, r.busbw_gbytes_per_s, 0);
        let _ = writeln!(
            s,
            "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{group}{group}",
            r.bytes,
            r.bytes / TYPE_BYTES,
            TYPE,
            redop,
            r.root
        );
        done += 1;
        sum += r.busbw_gbytes_per_s;
    }
    let _ = writeln!(s, "# Out of bounds values : 0 OK");
    let avg = if done > 0 { sum / done as f64 } else { 0.0 };
    let _ = writeln!(s, "# Avg bus bandwidth    : {avg:.4}");
    if let Some(line) = fast_forward_line(results) {
        let _ = writeln!(s, "#{line}");
    }
    s.push_str("#\n");
    s
}

/// What the fast-forward skipped over every size (`--fast-forward`), as the run reports say it.
fn fast_forward_line(results: &[CollectiveResult]) -> Option<String> {
    let mut sum: Option<rocelab_sim::report::FastForwardUsed> = None;
    let mut packets = 0u64;
    for r in results {
        let Some(f) = &r.fast_forward else { continue };
        packets += r.data_packets;
        let s = sum.get_or_insert(rocelab_sim::report::FastForwardUsed {
            skips: 0,
            skipped_data_packets: 0,
            ended_early: 0,
            ..f.clone()
        });
        s.skips += f.skips;
        s.skipped_data_packets += f.skipped_data_packets;
        s.ended_early += f.ended_early;
    }
    sum.map(|mut f| {
        f.skipped_share = f.skipped_data_packets as f64 / packets.max(1) as f64;
        f.line()
    })
}

/// nccl-tests prints times with 1 decimal below 10 ms and none above.
fn time(us: f64) -> String {
    if us < 10_000.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}
