//! `rocelab sweep`: the checklist of `rocelab validate` over a grid of fabric-file values.
//!
//! A sweep spec names a fabric file, the checks or scenarios to run at every point (as
//! `validate --only`), the figures to collect, and a grid: fabric-file keys by path with the
//! values each takes (`"qos.class[roce].ecn.kmin_bytes" = [50000, 150000]`; `[name]` selects
//! the element of an array of tables whose `name` is that, `[2]` the third). The points are the
//! grid's cartesian product in a fixed order (the last key varies fastest), or a seeded random
//! sample of it (`sample = N`).
//!
//! Each point is the fabric file with its values set, validated; its result is written
//! atomically to `points/<index>.json` under the output directory, and a point whose file
//! exists is not run again, so an interrupted sweep resumes where it stopped. Points are
//! split over `--jobs` threads locally, or over Slurm array tasks (task t of T runs the points
//! i with i mod T = t); every point's result depends only on the spec and the point, so the
//! merged table is byte-identical whatever the split. `merge` gathers the points into one
//! table (CSV, JSON) and an HTML page with a heat map of a figure over the grid's first two
//! keys.

use rocelab_validate::{Options, Policy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// A sweep spec (`SPEC.toml`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The fabric file, relative to the spec.
    pub fabric: String,
    /// Checks or scenarios to run at every point (`validate --only`); empty: everything.
    #[serde(default)]
    pub only: Vec<String>,
    /// Checks whose figures the table holds (default: every check that ran at the first point).
    #[serde(default)]
    pub figures: Vec<String>,
    #[serde(default = "one")]
    pub seed: u64,
    /// A seeded random sample of this many grid points instead of the whole grid.
    #[serde(default)]
    pub sample: Option<usize>,
    /// Key path → values, in the order given.
    pub grid: toml::Table,
}

fn one() -> u64 {
    1
}

/// One point of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub index: usize,
    pub values: Vec<(String, toml::Value)>,
}

/// What a point gave.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct PointResult {
    pub index: usize,
    pub values: BTreeMap<String, serde_json::Value>,
    /// Figure of each check, by name (`None`: not produced).
    pub figures: BTreeMap<String, Option<f64>>,
    pub verdicts: BTreeMap<String, String>,
    pub failed: usize,
}

/// A spec, checked, with its points.
pub struct Sweep {
    pub spec: Spec,
    pub fabric_path: PathBuf,
    pub fabric_text: String,
    pub keys: Vec<String>,
    pub points: Vec<Point>,
}

impl Sweep {
    /// Reads and checks a spec: the fabric file exists, every key path resolves in it with
    /// the first value set, every value list is non-empty. Errors name the spec file.
    pub fn load(spec_path: &Path) -> Result<Sweep, String> {
        let file = spec_path.display().to_string();
        let text = std::fs::read_to_string(spec_path).map_err(|e| format!("error: cannot read {file}: {e}"))?;
        let spec: Spec = toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(1, |s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            format!("{file}:{line}: error: {}", e.message().trim())
        })?;
        let line_of = |key: &str| text.lines().position(|l| l.contains(key)).map_or(1, |i| i + 1);
        let fabric_path = spec_path.parent().unwrap_or(Path::new(".")).join(&spec.fabric);
        let fabric_text = std::fs::read_to_string(&fabric_path)
            .map_err(|e| format!("{file}:{}: error: fabric {}: {e}", line_of("fabric"), fabric_path.display()))?;
        let mut keys = vec![];
        let mut lists = vec![];
        for (k, v) in &spec.grid {
            let vals = v.as_array().filter(|a| !a.is_empty()).ok_or_else(|| {
                format!("{file}:{}: error: grid key `{k}` needs a non-empty list of values", line_of(k))
            })?;
            keys.push(k.clone());
            lists.push(vals.clone());
        }
        if keys.is_empty() {
            return Err(format!("{file}: error: the grid is empty\n  = help: [grid] \"path.to.key\" = [v1, v2]"));
        }
        let total: usize = lists.iter().map(|l| l.len()).product();
        if total > 1_000_000 {
            return Err(format!("{file}: error: the grid has {total} points; sample it (sample = N)"));
        }
        let mut points: Vec<Point> = (0..total)
            .map(|i| {
                let mut rest = i;
                let mut values = vec![(String::new(), toml::Value::Boolean(false)); keys.len()];
                for (j, l) in lists.iter().enumerate().rev() {
                    values[j] = (keys[j].clone(), l[rest % l.len()].clone());
                    rest /= l.len();
                }
                Point { index: i, values }
            })
            .collect();
        if let Some(n) = spec.sample {
            points = sample(points, n, spec.seed);
            for (i, p) in points.iter_mut().enumerate() {
                p.index = i;
            }
        }
        let sweep = Sweep { spec, fabric_path, fabric_text, keys, points };
        // Every path must resolve: checked on the first point before anything runs.
        let first = sweep.points.first().ok_or_else(|| format!("{file}: error: sample = 0 leaves no point"))?;
        sweep.fabric_for(first).map_err(|e| format!("{file}:{}: error: {e}", line_of(&e.key)))?;
        Ok(sweep)
    }

    /// The fabric file's text at point `p`.
    pub fn fabric_for(&self, p: &Point) -> Result<String, PathError> {
        let mut doc: toml::Table = toml::from_str(&self.fabric_text)
            .map_err(|e| PathError { key: String::new(), message: format!("the fabric file: {e}") })?;
        for (k, v) in &p.values {
            set(&mut doc, k, v.clone()).map_err(|message| PathError { key: k.clone(), message })?;
        }
        toml::to_string(&doc).map_err(|e| PathError { key: String::new(), message: e.to_string() })
    }

    /// The points of task `task` of `tasks`.
    pub fn task_points(&self, task: usize, tasks: usize) -> Vec<&Point> {
        self.points.iter().filter(|p| p.index % tasks.max(1) == task).collect()
    }
}

/// A key path that does not resolve in the fabric file.
#[derive(Debug)]
pub struct PathError {
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

/// A seeded sample of `n` points without repeats (a partial Fisher-Yates shuffle on the
/// project's seeded stream, `rocelab_sim::rng`), in grid order.
fn sample(mut points: Vec<Point>, n: usize, seed: u64) -> Vec<Point> {
    let mut rng = rocelab_sim::rng::Rng::new(seed, 0x5357_4545_5053_4545);
    let n = n.min(points.len());
    for i in 0..n {
        let j = i + rng.below((points.len() - i) as u64) as usize;
        points.swap(i, j);
    }
    points.truncate(n);
    points.sort_by_key(|p| p.index);
    points
}

/// Sets `path` (`a.b[name].c`, `a[2].b`) in `doc` to `v`; the tables on the way are created
/// when missing, array elements must exist.
fn set(doc: &mut toml::Table, path: &str, v: toml::Value) -> Result<(), String> {
    let mut parts: Vec<(String, Option<String>)> = vec![];
    for seg in path.split('.') {
        match seg.split_once('[') {
            Some((k, sel)) => {
                let sel = sel.strip_suffix(']').ok_or_else(|| format!("unclosed `[` in `{seg}`"))?;
                parts.push((k.to_string(), Some(sel.to_string())));
            }
            None => parts.push((seg.to_string(), None)),
        }
    }
    let (last, init) = parts.split_last().ok_or("an empty path")?;
    let mut t = doc;
    for (k, sel) in init {
        let item = t.entry(k.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match (item, sel) {
            (toml::Value::Table(tt), None) => tt,
            (toml::Value::Array(a), Some(sel)) => select(a, k, sel)?,
            (_, None) => return Err(format!("`{k}` is not a table")),
            (_, Some(_)) => return Err(format!("`{k}` is not an array of tables")),
        };
    }
    match &last.1 {
        None => {
            t.insert(last.0.clone(), v);
        }
        Some(sel) => {
            let Some(toml::Value::Array(a)) = t.get_mut(&last.0) else {
                return Err(format!("`{}` is not an array", last.0));
            };
            let i: usize = sel.parse().map_err(|_| format!("`{}[{sel}]`: an index for a value", last.0))?;
            *a.get_mut(i).ok_or_else(|| format!("`{}` has no element {i}", last.0))? = v;
        }
    }
    Ok(())
}

/// The element of `a` that `sel` names: an index, or the table whose `name` is `sel`.
fn select<'a>(a: &'a mut [toml::Value], k: &str, sel: &str) -> Result<&'a mut toml::Table, String> {
    let pos = match sel.parse::<usize>() {
        Ok(i) => (i < a.len()).then_some(i),
        Err(_) => a.iter().position(|e| e.get("name").and_then(|n| n.as_str()) == Some(sel)),
    };
    let names: Vec<&str> = a.iter().filter_map(|e| e.get("name").and_then(|n| n.as_str())).collect();
    let i = pos.ok_or_else(|| format!("`{k}` has no element `{sel}` (it has: {})", names.join(", ")))?;
    a[i].as_table_mut().ok_or_else(|| format!("`{k}[{sel}]` is not a table"))
}

/// Runs one point: the fabric with its values, validated.
pub fn run_point(sw: &Sweep, p: &Point) -> Result<PointResult, String> {
    let text = sw.fabric_for(p).map_err(|e| e.to_string())?;
    let name = format!("{}@{}", sw.fabric_path.display(), p.index);
    let m = rocelab_model::load_str(&name, &text).map_err(|e| format!("point {}: {e}", p.index))?;
    let opts = Options {
        policy: Policy::default(),
        only: sw.spec.only.clone(),
        jobs: 1,
        seed: sw.spec.seed,
        ..Options::default()
    };
    let r = rocelab_validate::validate(&m, &name, &text, &opts, &|_| {}).map_err(|d| {
        format!("point {}: {}", p.index, d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("; "))
    })?;
    let wanted = |n: &str| sw.spec.figures.is_empty() || sw.spec.figures.iter().any(|f| f == n);
    let mut figures = BTreeMap::new();
    let mut verdicts = BTreeMap::new();
    // A figure that is no check is a scenario's metric: `<scenario>.<metric>` (or `.headline`).
    for f in &sw.spec.figures {
        if r.checks.iter().any(|c| c.name == *f) {
            continue;
        }
        let Some((sc, metric)) = f.split_once('.') else { continue };
        let Some(run) = r.scenarios.iter().find(|x| x.scenario == sc) else { continue };
        let v = if metric == "headline" { run.headline.value } else { run.metrics.get(metric).copied().flatten() };
        figures.insert(f.clone(), v);
    }
    for c in r.checks.iter().filter(|c| wanted(&c.name)) {
        figures.insert(c.name.clone(), c.figure);
        verdicts.insert(c.name.clone(), c.verdict.name().to_string());
    }
    let values =
        p.values.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null))).collect();
    Ok(PointResult { index: p.index, values, figures, verdicts, failed: r.failed() })
}

/// The file of point `index` under `out`.
pub fn point_file(out: &Path, index: usize) -> PathBuf {
    out.join("points").join(format!("{index:06}.json"))
}

/// The `schema` of a point's file (the JSON envelope every rocelab output carries).
pub const POINT_SCHEMA: &str = "rocelab.sweep.point/v1";

/// A point's file: the envelope (`schema`, `version`) first, then the point.
pub fn point_json(r: &PointResult) -> Result<String, String> {
    #[derive(Serialize)]
    struct File<'a> {
        schema: &'static str,
        version: &'static str,
        #[serde(flatten)]
        point: &'a PointResult,
    }
    let f = File { schema: POINT_SCHEMA, version: env!("CARGO_PKG_VERSION"), point: r };
    Ok(serde_json::to_string_pretty(&f).map_err(|e| e.to_string())? + "\n")
}

/// Runs the points not done yet on `jobs` threads; returns how many ran.
pub fn run(
    sw: &Sweep,
    points: &[&Point],
    out: &Path,
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<usize, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let todo: Vec<&&Point> = points.iter().filter(|p| !point_file(out, p.index).exists()).collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let error: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|sc| {
        for _ in 0..jobs.clamp(1, todo.len().max(1)) {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = todo.get(i) else { break };
                let r = run_point(sw, p).and_then(|r| {
                    let json = point_json(&r)?;
                    // A point is there whole (fsynced) or not at all: a killed task resumes cleanly.
                    rocelab_model::atomic::write_atomic(&point_file(out, p.index), json.as_bytes())
                        .map_err(|e| e.to_string())
                });
                if let Err(e) = r {
                    error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                    break;
                }
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, todo.len());
            });
        }
    });
    match error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(done.into_inner()),
    }
}

/// An sbatch script of a job array over the sweep's points: `tasks` tasks, each running its
/// share with `rocelab sweep SPEC --task $SLURM_ARRAY_TASK_ID --tasks T`.
pub fn sbatch(spec: &Path, out: &Path, tasks: usize, rocelab: &str) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(s, "#SBATCH --job-name=rocelab-sweep");
    let _ = writeln!(s, "#SBATCH --array=0-{}", tasks.max(1) - 1);
    let _ = writeln!(s, "#SBATCH --ntasks=1");
    let _ = writeln!(s, "#SBATCH --cpus-per-task=1");
    // (Slurm reads #SBATCH values up to the first space: an output directory with spaces
    // needs the job submitted from elsewhere.)
    let _ = writeln!(s, "#SBATCH --output={}/slurm-%A_%a.out", out.display());
    s.push_str("# Each task runs its points (index mod tasks = task id); finished points are skipped, so a\n# resubmitted array resumes. Then: rocelab sweep SPEC --merge\nset -euo pipefail\n");
    let _ = writeln!(
        s,
        "exec {} sweep {} --out {} --task \"$SLURM_ARRAY_TASK_ID\" --tasks {} --jobs 1",
        quote(rocelab),
        quote(&spec.display().to_string()),
        quote(&out.display().to_string()),
        tasks.max(1)
    );
    s
}

/// A word for the shell: single-quoted, its own single quotes escaped.
fn quote(w: &str) -> String {
    format!("'{}'", w.replace('\'', "'\\''"))
}

/// Every point's result, in index order; a missing point is an error naming it.
pub fn gather(sw: &Sweep, out: &Path) -> Result<Vec<PointResult>, String> {
    sw.points
        .iter()
        .map(|p| {
            let f = point_file(out, p.index);
            let t = std::fs::read_to_string(&f)
                .map_err(|e| format!("point {} ({}): {e}; run it first", p.index, f.display()))?;
            serde_json::from_str(&t).map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect()
}

fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The merged table as CSV: index, the grid's values, then each figure and its verdict.
pub fn csv(sw: &Sweep, rs: &[PointResult]) -> String {
    let figs: Vec<String> = rs.first().map(|r| r.figures.keys().cloned().collect()).unwrap_or_default();
    let mut s = String::from("index");
    for k in &sw.keys {
        let _ = write!(s, ",{k}");
    }
    for f in &figs {
        let _ = write!(s, ",{f},{f}.verdict");
    }
    s.push_str(",failed\n");
    for r in rs {
        let _ = write!(s, "{}", r.index);
        for k in &sw.keys {
            let _ = write!(s, ",{}", r.values.get(k).map(cell).unwrap_or_default());
        }
        for f in &figs {
            let v = r.figures.get(f).copied().flatten().map_or(String::new(), |x| format!("{x}"));
            let _ = write!(s, ",{v},{}", r.verdicts.get(f).cloned().unwrap_or_default());
        }
        let _ = writeln!(s, ",{}", r.failed);
    }
    s
}

/// The HTML page: a heat map of `figure` (default: the first) over the grid's first two keys
/// (the mean over the other keys), as inline SVG, and the table.
pub fn html(sw: &Sweep, rs: &[PointResult], figure: Option<&str>) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    let fig = figure
        .map(str::to_string)
        .or_else(|| rs.first().and_then(|r| r.figures.keys().next().cloned()))
        .unwrap_or_default();
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rocelab sweep</title>\
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}</style></head><body>\n\
<h1>rocelab sweep: {}</h1><p>{} points · figure <b>{}</b></p>\n",
        esc(&sw.fabric_path.display().to_string()),
        rs.len(),
        esc(&fig)
    );
    if sw.keys.len() >= 2 {
        let axis = |k: &str| {
            let mut v: Vec<String> = vec![];
            for r in rs {
                let c = r.values.get(k).map(cell).unwrap_or_default();
                if !v.contains(&c) {
                    v.push(c);
                }
            }
            v
        };
        let (kx, ky) = (&sw.keys[1], &sw.keys[0]);
        let (xs, ys) = (axis(kx), axis(ky));
        let mut grid = vec![vec![(0.0, 0usize); xs.len()]; ys.len()];
        for r in rs {
            let (Some(x), Some(y)) = (r.values.get(kx).map(cell), r.values.get(ky).map(cell)) else { continue };
            let (Some(i), Some(j)) = (ys.iter().position(|v| *v == y), xs.iter().position(|v| *v == x)) else {
                continue;
            };
            if let Some(v) = r.figures.get(&fig).copied().flatten() {
                grid[i][j].0 += v;
                grid[i][j].1 += 1;
            }
        }
        let vals: Vec<f64> = grid.iter().flatten().filter(|c| c.1 > 0).map(|c| c.0 / c.1 as f64).collect();
        let (lo, hi) = vals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        let (cw, ch, left, top) = (70.0, 28.0, 120.0, 30.0);
        let w = left + cw * xs.len() as f64 + 10.0;
        let h = top + ch * ys.len() as f64 + 40.0;
        let _ = write!(s, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"heat map\">");
        for (i, row) in grid.iter().enumerate() {
            for (j, c) in row.iter().enumerate() {
                let (x, y) = (left + cw * j as f64, top + ch * i as f64);
                let (fill, label) = if c.1 == 0 {
                    ("#eee".to_string(), "-".to_string())
                } else {
                    let v = c.0 / c.1 as f64;
                    let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
                    (
                        format!(
                            "rgb({},{},{})",
                            (255.0 * t) as u8,
                            (90.0 + 80.0 * (1.0 - t)) as u8,
                            (255.0 * (1.0 - t)) as u8
                        ),
                        format!("{v:.4}"),
                    )
                };
                let _ = write!(s, "<rect x=\"{x}\" y=\"{y}\" width=\"{cw}\" height=\"{ch}\" fill=\"{fill}\" stroke=\"#fff\"/><text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{label}</text>", x + cw / 2.0, y + ch / 2.0 + 3.0);
            }
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
                left - 4.0,
                top + ch * i as f64 + ch / 2.0 + 3.0,
                esc(&ys[i])
            );
        }
        for (j, x) in xs.iter().enumerate() {
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                left + cw * j as f64 + cw / 2.0,
                top - 6.0,
                esc(x)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{left}\" y=\"{}\" font-size=\"11\">x: {} · y: {}</text></svg>",
            h - 10.0,
            esc(kx),
            esc(ky)
        );
    }
    s.push_str("<table><tr><th>index</th>");
    for k in &sw.keys {
        let _ = write!(s, "<th>{}</th>", esc(k));
    }
    let _ = writeln!(s, "<th>{}</th><th>failed</th></tr>", esc(&fig));
    for r in rs {
        let _ = write!(s, "<tr><td>{}</td>", r.index);
        for k in &sw.keys {
            let _ = write!(s, "<td>{}</td>", esc(&r.values.get(k).map(cell).unwrap_or_default()));
        }
        let v = r.figures.get(&fig).copied().flatten().map_or("-".to_string(), |x| format!("{x:.4}"));
        let _ = writeln!(s, "<td>{v}</td><td>{}</td></tr>", r.failed);
    }
    s.push_str("</table></body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_file_carries_the_envelope_and_reads_back() {
        let r = PointResult {
            index: 3,
            values: [("seed".to_string(), serde_json::Value::from(2))].into_iter().collect(),
            figures: [("incast.completion".to_string(), Some(1.25))].into_iter().collect(),
            verdicts: [("incast.completion".to_string(), "pass".to_string())].into_iter().collect(),
            failed: 0,
        };
        let text = point_json(&r).unwrap();
        assert!(text.starts_with("{\n  \"schema\": \"rocelab.sweep.point/v1\",\n  \"version\": \""), "{text}");
        assert_eq!(serde_json::from_str::<PointResult>(&text).unwrap(), r);
    }

    #[test]
    fn paths_select_tables_by_name_or_index_and_create_what_is_missing() {
        let mut t: toml::Table =
            toml::from_str("[[qos.class]]\nname = \"a\"\n[[qos.class]]\nname = \"roce\"\n").unwrap();
        set(&mut t, "qos.class[roce].ecn.kmin_bytes", toml::Value::Integer(5)).unwrap();
        set(&mut t, "qos.class[0].weight", toml::Value::Integer(3)).unwrap();
        set(&mut t, "nic.dcqcn.rate_ai_mbps", toml::Value::Integer(40)).unwrap();
        assert_eq!(t["qos"]["class"][1]["ecn"]["kmin_bytes"].as_integer(), Some(5));
        assert_eq!(t["qos"]["class"][0]["weight"].as_integer(), Some(3));
        assert_eq!(t["nic"]["dcqcn"]["rate_ai_mbps"].as_integer(), Some(40));
        let e = set(&mut t, "qos.class[cnp].weight", toml::Value::Integer(1)).unwrap_err();
        assert!(e.contains("no element `cnp` (it has: a, roce)"), "{e}");
    }

    #[test]
    fn a_sample_is_seeded_and_never_repeats_a_point() {
        let pts: Vec<Point> = (0..50).map(|i| Point { index: i, values: vec![] }).collect();
        let a: Vec<usize> = sample(pts.clone(), 10, 7).iter().map(|p| p.index).collect();
        let b: Vec<usize> = sample(pts.clone(), 10, 7).iter().map(|p| p.index).collect();
        let c: Vec<usize> = sample(pts, 10, 8).iter().map(|p| p.index).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut d = a.clone();
        d.dedup();
        assert_eq!(d.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
    }
}
