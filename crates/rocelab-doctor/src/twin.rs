//! Production beside its twin: a real nccl-tests run and the same collective run by
//! `rocelab simulate --collective` on the fabric file, size by size.
//!
//! The twin's table has nccl-tests' layout, so both sides arrive here as [`NcclRun`]s from
//! the same parser. For every size both ran, the row holds both busbws (the better of
//! out-of-place and in-place on each side) and their ratio, real / twin:
//!
//! * below [`JUDGED_FROM_BYTES`] a size is shown but not judged: there, a real run pays costs
//!   per step that the twin does not charge (NCCL's own model charges each network hop of the
//!   tree its calibrated latency and scales its bandwidth at medium sizes; kernel launch and the
//!   proxy thread's posting add more), so a healthy cluster is slower than its twin for reasons that
//!   are not the fabric's. On a published run of 2 × 8 H200 over 8 × 400GbE RoCE (NCCL 2.30.4,
//!   `tests/fixtures/nccl-real/`), with the twin charging NCCL's own costs
//!   (`[nccl] net_hop_latency = "tuning"`: its hop latency and per-channel rates), the log
//!   reads 79 % of the twin's busbw at 1 MiB, 85 % at 2 MiB, 86 % at 32 MiB, and 92–116 % at 4,
//!   8, 16, 64, 128 and 256 MiB: judged from 1 MiB, that healthy cluster would get warnings
//!   (without the key, 53–56 % from 1 to 16 MiB). nccl-tests' `PERFORMANCE.md` reads busbw on large
//!   sizes for the same reason;
//! * from there up, a ratio of at least `twin_warn` (0.9 by default) *matches* the twin;
//!   below it production falls short of what the fabric file can do (`twin-shortfall`, an
//!   error under `twin_error`); above 1/`twin_warn` production beats the twin, which means the
//!   twin does not describe this cluster (other NICs, other rank count, NVLS or CollNet doing
//!   part of the reduction) and no verdict can rest on it (`twin-above`).
//!
//! A twin run with other rank counts than the real one is still compared (busbw is meant to
//! be independent of the rank count) but the mismatch is stated in the evidence.

use crate::diagnose::{Finding, Severity, Thresholds};
use crate::parse::nccl::{NcclResult, NcclRow, NcclRun};
use crate::util::thousands;
use serde::Serialize;

/// The smallest size judged against the twin: 256 MiB, the size from which a published healthy
/// RoCE run matches its twin with or without NCCL's costs charged (see the module doc), and
/// where a ring's per-step software latency is a few percent of its time on 100–400G fabrics.
pub const JUDGED_FROM_BYTES: u64 = 256 << 20;

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
    /// `not judged` (below [`JUDGED_FROM_BYTES`]), `matches`, `below twin`, `far below twin`
    /// or `above twin`.
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
}

impl TwinComparison {
    /// The judged rows.
    pub fn judged(&self) -> impl Iterator<Item = &TwinRow> {
        self.rows.iter().filter(|r| r.size_bytes >= JUDGED_FROM_BYTES && r.ratio.is_some())
    }
}

/// The better of a row's two groups (out-of-place, in-place).
fn best(row: &NcclRow) -> &NcclResult {
    match &row.in_place {
        Some(i) if i.busbw_gbytes_per_s > row.out_of_place.busbw_gbytes_per_s => i,
        _ => &row.out_of_place,
    }
}

/// Compares a real run with the twin's run of the same collective, size by size.
pub fn compare(real: &NcclRun, twin: &NcclRun, twin_source: &str, t: &Thresholds) -> TwinComparison {
    let mut rows = Vec::new();
    let mut real_only_sizes = Vec::new();
    for r in &real.rows {
        let Some(tw) = twin.rows.iter().find(|x| x.size_bytes == r.size_bytes) else {
            real_only_sizes.push(r.size_bytes);
            continue;
        };
        let (a, b) = (best(r), best(tw));
        let ratio = (b.busbw_gbytes_per_s > 0.0).then(|| a.busbw_gbytes_per_s / b.busbw_gbytes_per_s);
        let verdict = match ratio {
            _ if r.size_bytes < JUDGED_FROM_BYTES => "not judged",
            None => "not judged",
            Some(q) if q > 1.0 / t.twin_warn => "above twin",
            Some(q) if q >= t.twin_warn => "matches",
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
    }
}

/// The finding a comparison gives and its line for the verdict ("is it the network?");
/// `None` when no size was judged.
pub(crate) fn finding(c: &TwinComparison, t: &Thresholds) -> Option<(Finding, String)> {
    let judged: Vec<&TwinRow> = c.judged().collect();
    let worst = judged.iter().min_by(|a, b| a.ratio.unwrap_or(1.0).total_cmp(&b.ratio.unwrap_or(1.0)))?;
    let top = judged.iter().max_by_key(|r| r.size_bytes)?;
    let q = worst.ratio.unwrap_or(1.0);
    let short: Vec<&&TwinRow> = judged.iter().filter(|r| r.ratio.is_some_and(|q| q < t.twin_warn)).collect();
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
                "production reaches {:.0}% of the twin's busbw at {} B (worst), {} of {} judged sizes below {:.0}%",
                q * 100.0,
                thousands(worst.size_bytes),
                short.len(),
                judged.len(),
                t.twin_warn * 100.0
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
                "production matches the twin: {:.0}% of its busbw or better at every judged size ({} of them, from {} B)",
                q * 100.0,
                judged.len(),
                thousands(JUDGED_FROM_BYTES)
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
    fn sizes_are_judged_from_256_mib_against_the_twin_busbw() {
        let t = Thresholds::default();
        let real =
            table(&[(16 << 20, 180.0), (256 << 20, 300.0), (512 << 20, 352.0), (1 << 30, 340.0), (4 << 30, 370.0)]);
        let twin = table(&[(16 << 20, 290.0), (256 << 20, 385.0), (512 << 20, 388.0), (1 << 30, 389.0)]);
        let c = compare(&real, &twin, "twin.txt", &t);
        let v: Vec<&str> = c.rows.iter().map(|r| r.verdict).collect();
        // 16 MiB: 62% of the twin but latency-bound, not judged; 256 MiB 77.9%, 512 MiB 90.7%,
        // 1 GiB 87.4%; 4 GiB beyond the twin's table.
        assert_eq!(v, ["not judged", "below twin", "matches", "below twin"]);
        assert_eq!(c.real_only_sizes, [4u64 << 30]);
        assert!((c.rows[3].ratio.unwrap() - 340.0 / 389.0).abs() < 1e-3);
        let (f, verdict) = finding(&c, &t).unwrap();
        assert_eq!((f.code, f.severity), ("twin-shortfall", Severity::Warning));
        assert!(f.message.contains("78% of the twin's busbw at 268,435,456 B"), "{}", f.message);
        assert!(f.message.contains("2 of 3 judged sizes"), "{}", f.message);
        assert!(verdict.contains("from 268,435,456 B up"), "{verdict}");
    }

    #[test]
    fn far_below_is_an_error_above_is_no_verdict_and_a_match_is_info() {
        let t = Thresholds::default();
        let twin = table(&[(1 << 20, 100.0), (1 << 30, 380.0)]);
        let f = |real: &[(u64, f64)]| finding(&compare(&table(real), &twin, "t", &t), &t).unwrap().0;
        let far = f(&[(1 << 20, 95.0), (1 << 30, 200.0)]);
        assert_eq!((far.code, far.severity), ("twin-shortfall", Severity::Error));
        let above = f(&[(1 << 20, 99.0), (1 << 30, 440.0)]);
        assert_eq!((above.code, above.severity), ("twin-above", Severity::Warning));
        // 1 MiB at 30% of the twin is not judged: only 1 GiB counts.
        let ok = f(&[(1 << 20, 30.0), (1 << 30, 375.0)]);
        assert_eq!((ok.code, ok.severity), ("twin-match", Severity::Info));
        // Nothing judged (all sizes below 256 MiB): no finding.
        let small = table(&[(8, 0.01), (64 << 20, 100.0)]);
        assert!(finding(&compare(&small, &small, "t", &t), &t).is_none());
    }
}
