//! nccl-tests output (`all_reduce_perf`, `all_gather_perf`, `reduce_scatter_perf`,
//! `alltoall_perf`, `broadcast_perf`, `reduce_perf`, `sendrecv_perf`, ...).
//!
//! A result row is `size count type [redop] [root] time algbw busbw #wrong` for out-of-place
//! and then the same four for in-place. `redop` is missing in old layouts and in tests that
//! do not reduce (older all_gather), `root` is missing before nccl-tests 2.10; `#wrong` may
//! read `N/A` (no validation) or, in old layouts, an `error` column: the largest rounding
//! error seen (`0e+00`, `2e-07`), which is not a count of wrong values. A float reduction
//! always carries some rounding error; old nccl-tests judged it against a tolerance and
//! reported only the values out of bounds (`# Out of bounds values : 0 OK`), as its
//! maintainers explain in NVIDIA/nccl-tests issue 52. So an error magnitude is kept as
//! [`NcclResult::max_error`] and never counted as a wrong row.
//! Some tests print only one group. GB/s is 10⁹ B/s.
//!
//! Logs of any size are read line by line ([`parse_reader`]): a job's output with NCCL INFO
//! logging can run to gigabytes, and only the rows and a few header lines are kept.
//!
//! Lines that are not rows (NCCL INFO logging interleaved by the library, blank lines,
//! headers) are skipped; a line that starts like a row (a size) but does not parse is an
//! error with its line number.

use super::{excerpt, ParseError};
use serde::Serialize;

const SRC: &str = "nccl-tests";

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NcclRun {
    /// `all_reduce`, `all_gather`, ... when the log names it (`Collective test starting:`)
    /// or the caller knows it (file name).
    pub op: Option<String>,
    pub ranks: Vec<NcclRank>,
    pub rows: Vec<NcclRow>,
    /// `# Avg bus bandwidth    : 190.6` in GB/s.
    pub avg_busbw_gbytes_per_s: Option<f64>,
    /// `# Out of bounds values : 0 OK`.
    pub out_of_bounds: Option<u64>,
    /// NCCL's own INFO lines in the same output (NICs used, GPU Direct RDMA, channels).
    pub log: super::nccl_log::NcclLog,
    /// How nccl-tests launched the calls (its header line `# nThread 1 nGpus 8 ... graph: 0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<NcclLaunch>,
}

/// nccl-tests' launch mode, from its header: threads per process, GPUs each thread drives
/// (`-t`, `-g`), and CUDA graph launches per timed call (`-G`; 0, or absent before nccl-tests
/// printed it, means none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NcclLaunch {
    pub threads: u32,
    pub gpus_per_thread: u32,
    pub graph_launches: u32,
}

impl NcclLaunch {
    /// `nThread 1 nGpus 8 minBytes ... graph: 0 ...` (the text after `#`); `None` if the line
    /// is not that header.
    fn parse(rest: &str) -> Option<NcclLaunch> {
        let tok: Vec<&str> = rest.split_whitespace().collect();
        let after = |w: &str| tok.iter().position(|t| *t == w).and_then(|i| tok.get(i + 1)?.parse::<u32>().ok());
        Some(NcclLaunch {
            threads: after("nThread")?,
            gpus_per_thread: after("nGpus")?,
            graph_launches: after("graph:").unwrap_or(0),
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NcclRank {
    pub rank: u32,
    pub host: String,
    pub device: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NcclRow {
    pub size_bytes: u64,
    pub count: u64,
    pub dtype: String,
    pub redop: Option<String>,
    pub root: Option<i64>,
    pub out_of_place: NcclResult,
    pub in_place: Option<NcclResult>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NcclResult {
    pub time_us: f64,
    pub algbw_gbytes_per_s: f64,
    pub busbw_gbytes_per_s: f64,
    /// Values that failed validation; `None` when printed `N/A` or when the old layout's
    /// error column is printed instead.
    pub wrong: Option<u64>,
    /// The old layout's error column: largest rounding error (not a count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error: Option<f64>,
}

impl NcclRun {
    /// Distinct hosts in rank order of first appearance, sorted for determinism.
    pub fn hosts(&self) -> Vec<String> {
        let mut h: Vec<String> = self.ranks.iter().map(|r| r.host.clone()).collect();
        h.sort();
        h.dedup();
        h
    }

    /// The row with the largest message size: busbw is only meaningful for large messages.
    pub fn largest(&self) -> Option<&NcclRow> {
        self.rows.iter().max_by_key(|r| r.size_bytes)
    }

    /// Best busbw at the largest size over in-place and out-of-place (GB/s).
    pub fn peak_busbw_gbytes_per_s(&self) -> Option<f64> {
        let r = self.largest()?;
        Some(
            r.in_place
                .as_ref()
                .map(|ip| ip.busbw_gbytes_per_s.max(r.out_of_place.busbw_gbytes_per_s))
                .unwrap_or(r.out_of_place.busbw_gbytes_per_s),
        )
    }

    /// Rows whose validation found wrong values.
    pub fn wrong_rows(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| {
                r.out_of_place.wrong.unwrap_or(0) > 0 || r.in_place.as_ref().and_then(|i| i.wrong).unwrap_or(0) > 0
            })
            .count()
    }
}

fn num(n: usize, what: &str, s: &str) -> Result<f64, ParseError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(ParseError::new(SRC, n, format!("bad {what} `{}`", excerpt(s)))),
    }
}

/// `#wrong` as (count, error magnitude): `N/A` is neither; an integer is a count; a float
/// (`0e+00`, `2e-07`: the old layout's error column) is a magnitude only.
fn wrong(n: usize, s: &str) -> Result<(Option<u64>, Option<f64>), ParseError> {
    if s == "N/A" {
        return Ok((None, None));
    }
    if let Ok(v) = s.parse::<u64>() {
        return Ok((Some(v), None));
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok((None, Some(v))),
        _ => Err(ParseError::new(SRC, n, format!("bad #wrong value `{}`", excerpt(s)))),
    }
}

fn group(n: usize, t: &[&str]) -> Result<NcclResult, ParseError> {
    let (wrong, max_error) = wrong(n, t[3])?;
    Ok(NcclResult {
        time_us: num(n, "time", t[0])?,
        algbw_gbytes_per_s: num(n, "algbw", t[1])?,
        busbw_gbytes_per_s: num(n, "busbw", t[2])?,
        wrong,
        max_error,
    })
}

fn parse_row(n: usize, tok: &[&str]) -> Result<NcclRow, ParseError> {
    // 3 leading fields, 0-2 optional (redop, root), then one or two groups of 4.
    let groups = match tok.len() {
        7..=9 => 1,
        11..=13 => 2,
        k => return Err(ParseError::new(SRC, n, format!("a result row has 7-9 or 11-13 fields, found {k}"))),
    };
    let size_bytes =
        tok[0].parse::<u64>().map_err(|_| ParseError::new(SRC, n, format!("bad size `{}`", excerpt(tok[0]))))?;
    let count =
        tok[1].parse::<u64>().map_err(|_| ParseError::new(SRC, n, format!("bad count `{}`", excerpt(tok[1]))))?;
    let dtype = tok[2].to_string();
    if dtype.parse::<f64>().is_ok() {
        return Err(ParseError::new(SRC, n, format!("expected a data type, found `{}`", excerpt(tok[2]))));
    }
    let middle = &tok[3..tok.len() - 4 * groups];
    let (mut redop, mut root) = (None, None);
    for m in middle {
        if let Ok(r) = m.parse::<i64>() {
            root = Some(r);
        } else if redop.is_none() && root.is_none() {
            redop = Some(m.to_string());
        } else {
            return Err(ParseError::new(SRC, n, format!("unexpected field `{}` before the timings", excerpt(m))));
        }
    }
    let tail = &tok[tok.len() - 4 * groups..];
    let out_of_place = group(n, &tail[0..4])?;
    let in_place = if groups == 2 { Some(group(n, &tail[4..8])?) } else { None };
    Ok(NcclRow { size_bytes, count, dtype, redop, root, out_of_place, in_place })
}

fn parse_rank(line: &str) -> Option<NcclRank> {
    let tok: Vec<&str> = line.trim_start_matches('#').split_whitespace().collect();
    let pos = |w: &str| tok.iter().position(|t| *t == w);
    let rank = tok.get(pos("Rank")? + 1)?.parse().ok()?;
    let host = tok.get(pos("on")? + 1)?.to_string();
    let device = pos("device").and_then(|i| tok.get(i + 1)).and_then(|d| d.parse().ok());
    Some(NcclRank { rank, host, device })
}

/// Parses one log; a file holding several tests back to back gives several runs.
/// `op_hint` names the collective when the log does not (e.g. from the file name).
pub fn parse(text: &str, op_hint: Option<&str>) -> Result<Vec<NcclRun>, ParseError> {
    let mut p = Parser::new(op_hint);
    for (i, raw) in text.lines().enumerate() {
        p.line(i + 1, raw)?;
    }
    p.finish()
}

/// [`parse`] over a reader of any size, line by line (lines longer than
/// [`crate::util::MAX_LINE_BYTES`] are cut there: no row or NCCL line is that long).
pub fn parse_reader(r: impl std::io::BufRead, op_hint: Option<&str>) -> Result<Vec<NcclRun>, ParseError> {
    let mut p = Parser::new(op_hint);
    let mut err = None;
    crate::util::for_each_line(r, |n, line| match p.line(n, line) {
        Ok(()) => true,
        Err(e) => {
            err = Some(e);
            false
        }
    })
    .map_err(|e| ParseError::new(SRC, 0, format!("read error: {e}")))?;
    if let Some(e) = err {
        return Err(e);
    }
    p.finish()
}

/// The line-at-a-time state of [`parse`].
struct Parser {
    runs: Vec<NcclRun>,
    cur: NcclRun,
    log: super::nccl_log::NcclLog,
}

impl Parser {
    fn new(op_hint: Option<&str>) -> Self {
        Parser {
            runs: Vec::new(),
            cur: NcclRun { op: op_hint.map(normalize_op), ..Default::default() },
            log: Default::default(),
        }
    }

    fn line(&mut self, n: usize, raw: &str) -> Result<(), ParseError> {
        self.log.add_line(raw);
        let (runs, cur) = (&mut self.runs, &mut self.cur);
        let line = raw.trim();
        if line.is_empty() {
            return Ok(());
        }
        // Old layouts print the summary lines without the '#'.
        let summary = line.starts_with("Out of bounds values") || line.starts_with("Avg bus bandwidth");
        if let Some(rest) = line.strip_prefix('#').or(summary.then_some(line)) {
            let rest = rest.trim();
            if let Some(op) = rest.strip_prefix("Collective test starting:") {
                if !cur.rows.is_empty() {
                    runs.push(std::mem::take(cur));
                }
                cur.op = Some(normalize_op(op.trim()));
            } else if rest.starts_with("nThread") {
                cur.launch = NcclLaunch::parse(rest);
            } else if rest.starts_with("Rank") {
                match parse_rank(line) {
                    Some(r) => cur.ranks.push(r),
                    None => return Err(ParseError::new(SRC, n, format!("malformed rank line `{}`", excerpt(line)))),
                }
            } else if let Some(v) = rest.strip_prefix("Avg bus bandwidth") {
                let v = v.trim_start_matches([' ', ':']).trim();
                cur.avg_busbw_gbytes_per_s = Some(num(n, "average bus bandwidth", v)?);
            } else if let Some(v) = rest.strip_prefix("Out of bounds values") {
                let v = v.trim_start_matches([' ', ':']).split_whitespace().next().unwrap_or("");
                cur.out_of_bounds = Some(
                    v.parse()
                        .map_err(|_| ParseError::new(SRC, n, format!("bad out-of-bounds count `{}`", excerpt(v))))?,
                );
            }
            return Ok(());
        }
        // A row starts with its size; anything else is interleaved logging.
        if !line.as_bytes()[0].is_ascii_digit() {
            return Ok(());
        }
        let tok: Vec<&str> = line.split_whitespace().collect();
        // NCCL INFO lines can start with a digit too (`10.0.0.1:...`); rows never hold ':'.
        if tok[0].contains(|c: char| !c.is_ascii_digit()) {
            return Ok(());
        }
        cur.rows.push(parse_row(n, &tok)?);
        Ok(())
    }

    fn finish(self) -> Result<Vec<NcclRun>, ParseError> {
        let (mut runs, cur) = (self.runs, self.cur);
        if !cur.rows.is_empty() || runs.is_empty() {
            runs.push(cur);
        }
        if runs.iter().all(|r| r.rows.is_empty()) {
            return Err(ParseError::new(SRC, 0, "no result rows: not nccl-tests output, or the test did not run"));
        }
        let mut log = self.log;
        log.finish();
        for r in &mut runs {
            r.log = log.clone();
        }
        Ok(runs)
    }
}

/// `all_reduce_perf` / `all_reduce_perf_mpi` / `all_reduce` -> `all_reduce`.
pub fn normalize_op(s: &str) -> String {
    let s = s.trim();
    let s = s.rsplit('/').next().unwrap_or(s);
    let s = s.split('.').next().unwrap_or(s);
    let s = s.trim_end_matches("_mpi");
    s.trim_end_matches("_perf").to_string()
}

/// The busbw/algbw factor nccl-tests uses for a collective over `n` ranks (PERFORMANCE.md).
pub fn busbw_factor(op: &str, n: u32) -> Option<f64> {
    let n = n.max(1) as f64;
    match op {
        "all_reduce" => Some(2.0 * (n - 1.0) / n),
        "all_gather" | "reduce_scatter" | "alltoall" => Some((n - 1.0) / n),
        "broadcast" | "reduce" | "sendrecv" | "hypercube" => Some(1.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_row() {
        let runs = parse("# Collective test starting: all_reduce_perf\n   134217728      33554432     float     sum      -1   1234.5  108.72  190.26      0   1230.1  109.11  190.95      0\n# Avg bus bandwidth    : 190.6\n", None).unwrap();
        let r = &runs[0];
        assert_eq!(r.op.as_deref(), Some("all_reduce"));
        assert_eq!(r.rows[0].root, Some(-1));
        assert_eq!(r.rows[0].redop.as_deref(), Some("sum"));
        assert_eq!(r.peak_busbw_gbytes_per_s(), Some(190.95));
        assert_eq!(r.avg_busbw_gbytes_per_s, Some(190.6));
    }

    #[test]
    fn old_and_na_rows() {
        let runs = parse("   1048576   262144   float   sum   101.2   10.36   18.13  0e+00   100.9   10.39   18.18  0e+00\n   8  2  float  none  -1  20.1  0.00  0.00  N/A  19.9  0.00  0.00  N/A\n", Some("all_gather_perf")).unwrap();
        assert_eq!(runs[0].rows.len(), 2);
        assert_eq!(runs[0].rows[1].out_of_place.wrong, None);
        assert_eq!(runs[0].op.as_deref(), Some("all_gather"));
    }

    #[test]
    fn the_launch_mode_comes_from_the_header() {
        let row = "   8  2  float  sum  -1  40.1  0.00  0.00  0  40.0  0.00  0.00  0\n";
        let read = |header: &str| parse(&format!("{header}\n{row}"), Some("all_reduce")).unwrap()[0].launch;
        // nccl-tests 2.18: threads, GPUs per thread and CUDA graph launches.
        let h = "# nThread 1 nGpus 8 minBytes 1024 maxBytes 17179869184 step: 2(factor) warmup iters: 50 iters: 100 agg iters: 1 validation: 1 graph: 0 unalign: 0";
        assert_eq!(read(h), Some(NcclLaunch { threads: 1, gpus_per_thread: 8, graph_launches: 0 }));
        let g = "# nThread 2 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 10";
        assert_eq!(read(g), Some(NcclLaunch { threads: 2, gpus_per_thread: 1, graph_launches: 10 }));
        // Before nccl-tests printed `graph:` there were no graph launches.
        let old =
            "# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1";
        assert_eq!(read(old).map(|l| (l.gpus_per_thread, l.graph_launches)), Some((4, 0)));
        // No header, or a garbled one: not known.
        assert_eq!(read("# something else"), None);
        assert_eq!(read("# nThread x nGpus 8"), None);
    }

    #[test]
    fn errors() {
        assert_eq!(parse("# nothing\n", None).unwrap_err().line, 0);
        assert_eq!(parse("\n 8 2 float sum -1 x 0 0 0 1 0 0 0\n", None).unwrap_err().line, 2);
        assert_eq!(parse("8 2 float sum\n", None).unwrap_err().line, 1);
    }
}
