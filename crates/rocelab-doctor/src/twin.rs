//! Production beside its twin: a real nccl-tests run and the same collective run by
//! `rocelab simulate --collective` on the fabric file, size by size.
//!
//! The twin's table has nccl-tests' layout, so both sides arrive here as [`NcclRun`]s from
//! the same parser. For every size both ran, the row holds both busbws (the better of
//! out-of-place and in-place on each side) and their ratio, real / twin:
//!
//! * below [`JUDGED_FROM_BYTES`] (1 MiB) a size is shown but not judged: a call that small is
//!   a few tens of µs, most of it latency that the real run's host and NCCL's software set
//!   (the twin charges NCCL's own model of it where the fabric file asks, `[nccl]
//!   net_hop_latency = "tuning"`, and nccl-tests' host floor where the log's header shows one
//!   thread launching several GPUs), so its busbw says little about the network;
//! * from 1 MiB to [`BANDWIDTH_BOUND_BYTES`] (256 MiB), where the twin charges NCCL's own
//!   costs (`net_hop_latency = "tuning"`: `rocelab doctor --fabric` runs its twin so unless
//!   the fabric file sets `[nccl]` itself; without them the twin's medium sizes are 1.5–2×
//!   faster than a healthy run and are not judged, as a table given with `--twin` is not), a
//!   size is judged against a wide band:
//!   below `twin_error` (70 % by default) of the twin's busbw it is *far below twin*, above
//!   1/`twin_error` *above twin*, and in between it matches. There the twin follows NCCL's own
//!   tuning model, and a healthy run is within that band of it, not within 10 %: on a
//!   published run of 2 × 8 H200 over 8 × 400GbE RoCE (NCCL 2.30.4,
//!   `tests/fixtures/nccl-real/`) the log reads 79 % of the twin's busbw at 1 MiB, 85 % at
//!   2 MiB, 86 % at 32 MiB and 92–116 % at 4, 8, 16, 64 and 128 MiB (NCCL runs NVLink SHARP
//!   there, whose real rate at these sizes is below its model's, docs/simulate.md). The band
//!   is that one run's spread with a margin, so a gross shortfall (GPUDirect RDMA off, a NIC
//!   at a fraction of its speed: a third of the twin or less) is caught from 1 MiB, and a
//!   healthy cluster is not warned;
//! * from 256 MiB, where a run is bound by bandwidth, a ratio of at least `twin_warn` (0.9 by
//!   default) *matches* the twin; below it production falls short of what the fabric file can
//!   do (`twin-shortfall`, an error under `twin_error`); above 1/`twin_warn` production beats
//!   the twin, which means the twin does not describe this cluster (other NICs, other rank
//!   count, NVLS or CollNet doing part of the reduction) and no verdict can rest on it
//!   (`twin-above`). nccl-tests' `PERFORMANCE.md` reads busbw on large sizes for the same
//!   reason.
//!
//! A twin run with other rank counts than the real one is still compared (busbw is meant to
//! be independent of the rank count) but the mismatch is stated in the evidence.

use crate::diagnose::{Finding, Severity, Thresholds};
use crate::parse::nccl::{NcclResult, NcclRow, NcclRun};
use crate::util::thousands;
use serde::Serialize;

/// The smallest size judged against the twin (in the wide band below [`BANDWIDTH_BOUND_BYTES`];
/// see the module doc).
pub const JUDGED_FROM_BYTES: u64 = 1 << 20;

/// The size from which a run is bound by bandwidth: judged against the twin within
/// `twin_warn`, and (`crate::diagnose`) against the line rate. A ring's per-step software
/// latency is a few percent of its time there on 100–400G fabrics, and a published healthy RoCE
/// run matches its twin from there with or without NCCL's costs charged.
pub const BANDWIDTH_BOUND_BYTES: u64 = 256 << 20;

/// One size, both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TwinRow {
    pub size_bytes: u64,
    pub real_time_us: f64,
    pub twin_time_us: f64,
    pub real_busbw_gbytes_per_s: f64,
    pub twin_busbw_gbytes_per_s: f64,
    /// real / twin busbw; `None` when the twin's busbw is 0 (a size too small to print one).
    pub ratio: Option<f64>,
    /// `not judged` (below [`JUDGED_FROM_BYTES`]), `matches`, `below twin` (from
    /// [`BANDWIDTH_BOUND_BYTES`] only), `far below twin` or `above twin`.
    pub verdict: &'static str,
}

/// One real run against its twin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TwinComparison {
    pub op: String,
    pub real_ranks: usize,
    pub twin_ranks: usize,
    /// Where the twin's table came from (a file, or the fabric file it was run on).
    pub twin_source: String,
    pub rows: Vec<TwinRow>,
    /// Real sizes the twin did not run (above its size limit, or missing from its table).
    pub real_only_sizes: Vec<u64>,
    /// The smallest size judged ([`JUDGED_FROM_BYTES`] where the twin charges NCCL's costs,
    /// else [`BANDWIDTH_BOUND_BYTES`]).
    #[serde(skip)]
    pub judged_from_bytes: u64,
}

impl TwinComparison {
    /// The judged rows.
    pub fn judged(&self) -> impl Iterator<Item = &TwinRow> {
        self.rows.iter().filter(|r| r.size_bytes >= self.judged_from_bytes && r.ratio.is_some())
    }
}

/// The better of a row's two groups (out-of-place, in-place).
fn best(row: &NcclRow) -> &NcclResult {
    match &row.in_place {
        Some(i) if i.busbw_gbytes_per_s > row.out_of_place.busbw_gbytes_per_s => i,
        _ => &row.out_of_place,
    }
}

/// Compares a real run with the twin's run of the same collective, size by size; sizes from 1 MiB
/// are judged where `nccl_costs` (the twin charged NCCL's own costs), else from 256 MiB.
pub fn compare(real: &NcclRun, twin: &NcclRun, twin_source: &str, t: &Thresholds, nccl_costs: bool) -> TwinComparison {
    let from = if nccl_costs { JUDGED_FROM_BYTES } else { BANDWIDTH_BOUND_BYTES };
    let mut rows = Vec::new();
    let mut real_only_sizes = Vec::new();
    for r in &real.rows {
        let Some(tw) = twin.rows.iter().find(|x| x.size_bytes == r.size_bytes) else {
            real_only_sizes.push(r.size_bytes);
            continue;
        };
        let (a, b) = (best(r), best(tw));
        let ratio = (b.busbw_gbytes_per_s > 0.0).then(|| a.busbw_gbytes_per_s / b.busbw_gbytes_per_s);
        // Below the bandwidth-bound sizes only the wide band (see the module doc).
        let warn = if r.size_bytes >= BANDWIDTH_BOUND_BYTES { t.twin_warn } else { t.twin_error };
        let verdict = match ratio {
            _ if r.size_bytes < from => "not judged",
            None => "not judged",
            Some(q) if q > 1.0 / warn => "above twin",
            Some(q) if q >= warn => "matches",
            Some(q) if q >= t.twin_error => "below twin",
            Some(_) => "far below twin",
        };
        rows.push(TwinRow {
            size_bytes: r.size_bytes,
            real_time_us: a.time_us,
            twin_time_us: b.time_us,
            real_busbw_gbytes_per_s: a.busbw_gbytes_per_s,
            twin_busbw_gbytes_per_s: b.busbw_gbytes_per_s,
            ratio,
            verdict,
        });
    }
    rows.sort_by_key(|r| r.size_bytes);
    real_only_sizes.sort_unstable();
    real_only_sizes.dedup();
    TwinComparison {
        op: real.op.clone().unwrap_or_else(|| "collective".into()),
        real_ranks: real.ranks.len(),
        twin_ranks: twin.ranks.len(),
        twin_source: twin_source.to_string(),
        rows,
        real_only_sizes,
        judged_from_bytes: from,
    }
}

/// The finding a comparison gives and its line for the verdict ("is it the network?");
/// `None` when no size was judged.
pub(crate) fn finding(c: &TwinComparison, t: &Thresholds) -> Option<(Finding, String)> {
    let judged: Vec<&TwinRow> = c.judged().collect();
    let by_ratio = |a: &&&TwinRow, b: &&&TwinRow| a.ratio.unwrap_or(1.0).total_cmp(&b.ratio.unwrap_or(1.0));
    let top = judged.iter().max_by_key(|r| r.size_bytes)?;
    let short: Vec<&&TwinRow> =
        judged.iter().filter(|r| matches!(r.verdict, "below twin" | "far below twin")).collect();
    // The worst of the sizes that fall short, else of all.
    let worst = short.iter().copied().min_by(by_ratio).or_else(|| judged.iter().min_by(by_ratio))?;
    let q = worst.ratio.unwrap_or(1.0);
    let above = judged.iter().filter(|r| r.verdict == "above twin").count();
    let mut evidence: Vec<String> = judged
        .iter()
        .map(|r| {
            format!(
                "{} B: real {:.2} GB/s, twin {:.2} GB/s ({:.0}%)",
                thousands(r.size_bytes),
                r.real_busbw_gbytes_per_s,
                r.twin_busbw_gbytes_per_s,
                r.ratio.unwrap_or(0.0) * 100.0
            )
        })
        .collect();
    evidence.push(format!("twin: {}", c.twin_source));
    if c.real_ranks != c.twin_ranks && c.real_ranks > 0 {
        evidence.push(format!(
            "the real run has {} ranks, the twin {}: busbw is comparable across rank counts, times are not",
            c.real_ranks, c.twin_ranks
        ));
    }
    let subject = format!("{} vs twin", c.op);
    let (code, severity, message, hint, verdict) = if !short.is_empty() {
        let from = short.iter().map(|r| r.size_bytes).min().unwrap_or(worst.size_bytes);
        let sev = if q < t.twin_error { Severity::Error } else { Severity::Warning };
        (
            "twin-shortfall",
            sev,
            format!(
                "production reaches {:.0}% of the twin's busbw at {} B (worst), {} of {} judged sizes below {:.0}% (from {} B; below that, {:.0}%)",
                q * 100.0,
                thousands(worst.size_bytes),
                short.len(),
                judged.len(),
                t.twin_warn * 100.0,
                thousands(BANDWIDTH_BOUND_BYTES),
                t.twin_error * 100.0
            ),
            "the fabric file's network can do more than production gets: look for what the twin does not have — congestion from other jobs, PFC pauses or ECN marks in the counters, a NIC or link below its speed, an uneven ECMP spread, GPU Direct RDMA off",
            format!(
                "{}: production falls short of the twin from {} B up ({:.0}% of its busbw at worst)",
                c.op,
                thousands(from),
                q * 100.0
            ),
        )
    } else if above > 0 {
        (
            "twin-above",
            Severity::Warning,
            format!(
                "production beats the twin at {above} of {} judged sizes ({:.0}% of its busbw at {} B): the twin does not describe this cluster",
                judged.len(),
                top.ratio.unwrap_or(0.0) * 100.0,
                thousands(top.size_bytes)
            ),
            "check that the fabric file has these nodes' NICs (count and speed) and GPUs per node, and whether NCCL used NVLS or CollNet (NCCL_ALGO in the log), which the twin's ring does not",
            format!("{}: cannot judge against the twin: production is faster than it (see twin-above)", c.op),
        )
    } else {
        (
            "twin-match",
            Severity::Info,
            format!(
                "production matches the twin: {:.0}% of its busbw or better at every judged size ({} of them, from {} B; at least {:.0}% from {} B)",
                q * 100.0,
                judged.len(),
                thousands(c.judged_from_bytes),
                t.twin_warn * 100.0,
                thousands(BANDWIDTH_BOUND_BYTES)
            ),
            "",
            format!("{}: production delivers what the twin of this fabric does", c.op),
        )
    };
    let f = Finding::new(code, severity, "fabric", subject, message, evidence, hint);
    Some((f, verdict))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::nccl::parse;

    fn table(rows: &[(u64, f64)]) -> NcclRun {
        let mut s = String::from("# Collective test starting: all_reduce_perf\n");
        for (size, busbw) in rows {
            // algbw = busbw / (2·15/16) for 16 ranks; time from the size.
            let algbw = busbw * 16.0 / 30.0;
            let time = *size as f64 / (algbw * 1e9) * 1e6;
            s += &format!(
                "{size} {} float sum -1 {time:.1} {algbw:.2} {busbw:.2} 0 {time:.1} {algbw:.2} {busbw:.2} 0\n",
                size / 4
            );
        }
        parse(&s, None).unwrap().remove(0)
    }

    #[test]
    fn sizes_are_judged_from_1_mib_in_a_wide_band_and_from_256_mib_within_10_percent() {
        let t = Thresholds::default();
        let real = table(&[
            (512 << 10, 9.0),
            (16 << 20, 250.0),
            (256 << 20, 300.0),
            (512 << 20, 352.0),
            (1 << 30, 340.0),
            (4 << 30, 370.0),
        ]);
        let twin =
            table(&[(512 << 10, 18.0), (16 << 20, 290.0), (256 << 20, 385.0), (512 << 20, 388.0), (1 << 30, 389.0)]);
        let c = compare(&real, &twin, "twin.txt", &t, true);
        let v: Vec<&str> = c.rows.iter().map(|r| r.verdict).collect();
        // 512 KiB: half the twin but below 1 MiB, not judged; 16 MiB: 86 % of the twin, inside
        // the wide band (70 %); 256 MiB 77.9 %, 512 MiB 90.7 %, 1 GiB 87.4 % against 90 %; 4 GiB
        // beyond the twin's table.
        assert_eq!(v, ["not judged", "matches", "below twin", "matches", "below twin"]);
        assert_eq!(c.real_only_sizes, [4u64 << 30]);
        assert!((c.rows[4].ratio.unwrap() - 340.0 / 389.0).abs() < 1e-3);
        let (f, verdict) = finding(&c, &t).unwrap();
        assert_eq!((f.code, f.severity), ("twin-shortfall", Severity::Warning));
        assert!(f.message.contains("78% of the twin's busbw at 268,435,456 B"), "{}", f.message);
        assert!(f.message.contains("2 of 4 judged sizes"), "{}", f.message);
        assert!(verdict.contains("from 268,435,456 B up"), "{verdict}");
    }

    #[test]
    fn far_below_is_an_error_above_is_no_verdict_and_a_match_is_info() {
        let t = Thresholds::default();
        let twin = table(&[(1 << 20, 100.0), (1 << 30, 380.0)]);
        let f = |real: &[(u64, f64)]| finding(&compare(&table(real), &twin, "t", &t, true), &t).unwrap().0;
        let far = f(&[(1 << 20, 95.0), (1 << 30, 200.0)]);
        assert_eq!((far.code, far.severity), ("twin-shortfall", Severity::Error));
        let above = f(&[(1 << 20, 99.0), (1 << 30, 440.0)]);
        assert_eq!((above.code, above.severity), ("twin-above", Severity::Warning));
        // 1 MiB at 75 % of the twin is inside the wide band: a match, as 1 GiB at 99 % is.
        let ok = f(&[(1 << 20, 75.0), (1 << 30, 375.0)]);
        assert_eq!((ok.code, ok.severity), ("twin-match", Severity::Info));
        // 1 MiB at 30 % is far below even there, whatever the large sizes do: an error that
        // names it (GPUDirect RDMA off or a NIC at a fraction of its speed look like this).
        let gross = f(&[(1 << 20, 30.0), (1 << 30, 375.0)]);
        assert_eq!((gross.code, gross.severity), ("twin-shortfall", Severity::Error));
        assert!(gross.message.contains("30% of the twin's busbw at 1,048,576 B"), "{}", gross.message);
        // Far above the twin at 1 MiB (beyond 1 / 0.7): the twin does not describe the run.
        let fast = f(&[(1 << 20, 150.0), (1 << 30, 375.0)]);
        assert_eq!(fast.code, "twin-above");
        // A twin without NCCL's costs (or a table given as is) is judged from 256 MiB only: the
        // same 30 % at 1 MiB is not judged, and 1 GiB matches.
        let plain = compare(&table(&[(1 << 20, 30.0), (1 << 30, 375.0)]), &twin, "t", &t, false);
        assert_eq!(plain.rows.iter().map(|r| r.verdict).collect::<Vec<_>>(), ["not judged", "matches"]);
        assert_eq!(finding(&plain, &t).unwrap().0.code, "twin-match");
        // Nothing judged (all sizes below 1 MiB): no finding.
        let small = table(&[(8, 0.01), (512 << 10, 10.0)]);
        assert!(finding(&compare(&small, &small, "t", &t, true), &t).is_none());
    }
}
