//! `rocelab sweep SPEC.toml`: the checklist over a grid of fabric-file values
//! (`rocelab_sweep`), locally on `--jobs` threads, as one task of a Slurm job array
//! (`--task`), as an `sbatch` script (`--slurm`), or merged into one table (`--merge`).
//! Exit status: 0 done, 2 bad input or a point that could not run.

use crate::common::{write_atomic, Failure, VerbResult};
use crate::output::{envelope, Format};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The sweep spec: `fabric`, `only`, `figures`, `seed`, `sample`, `[grid]`.
    spec: PathBuf,
    /// Where the points' results go (`points/<index>.json`) and the merged table.
    #[arg(long, short, default_value = "sweep-out")]
    out: PathBuf,
    /// Points at once.
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Run only the points of this array task (index mod --tasks); default: the
    /// SLURM_ARRAY_TASK_ID of the environment when --tasks is given.
    #[arg(long)]
    task: Option<usize>,
    /// Tasks the points are split over (a Slurm array's size).
    #[arg(long)]
    tasks: Option<usize>,
    /// Write an sbatch script of a job array of this many tasks (`sweep.sbatch` in --out)
    /// instead of running.
    #[arg(long, value_name = "TASKS", conflicts_with_all = ["task", "merge"])]
    slurm: Option<usize>,
    /// Gather every point into sweep.csv, sweep.json and sweep.html (a heat map over the grid's
    /// first two keys) instead of running.
    #[arg(long)]
    merge: bool,
    /// The figure the heat map shows (default: the first collected).
    #[arg(long, requires = "merge")]
    figure: Option<String>,
    /// No progress lines.
    #[arg(long, short)]
    quiet: bool,
    /// What is printed when done: a line of text, or a JSON document with the same counts.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// The closing line, or its JSON document.
fn done(format: Format, text: String, doc: serde_json::Value) -> VerbResult {
    match format {
        Format::Text => println!("{text}"),
        Format::Json => crate::output::print_json("sweep.result", &doc),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: Args) -> VerbResult {
    let sw = rocelab_sweep::Sweep::load(&a.spec).map_err(Failure::bad_input)?;
    std::fs::create_dir_all(&a.out)
        .map_err(|e| Failure::bad_input(format!("error: cannot create {}: {e}", a.out.display())))?;
    if let Some(t) = a.slurm {
        if t == 0 {
            return Err(Failure::bad_input("error: --slurm takes 1 or more tasks"));
        }
        let exe = std::env::current_exe().map_or("rocelab".to_string(), |p| p.display().to_string());
        let script = rocelab_sweep::sbatch(&a.spec, &a.out, t, &exe);
        let f = a.out.join("sweep.sbatch");
        write_atomic(&f, script.as_bytes())?;
        return done(
            a.format,
            format!("{} points over {t} array tasks: sbatch {}", sw.points.len(), f.display()),
            serde_json::json!({ "points": sw.points.len(), "tasks": t, "sbatch": f.display().to_string() }),
        );
    }
    if a.merge {
        let rs = rocelab_sweep::gather(&sw, &a.out).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
        write_atomic(&a.out.join("sweep.csv"), rocelab_sweep::csv(&sw, &rs).as_bytes())?;
        let json = serde_json::to_string_pretty(&rs).map_err(|e| Failure::bad_input(format!("error: {e}")))? + "\n";
        let json = envelope("sweep.merged", &json);
        write_atomic(&a.out.join("sweep.json"), json.as_bytes())?;
        write_atomic(&a.out.join("sweep.html"), rocelab_sweep::html(&sw, &rs, a.figure.as_deref()).as_bytes())?;
        let files = ["sweep.csv", "sweep.json", "sweep.html"].map(|f| a.out.join(f).display().to_string());
        return done(
            a.format,
            format!("{} points merged into {}/sweep.csv, sweep.json, sweep.html", rs.len(), a.out.display()),
            serde_json::json!({ "points": rs.len(), "merged": files }),
        );
    }
    let tasks = a.tasks.unwrap_or(1).max(1);
    let task = match (a.task, a.tasks) {
        (Some(t), _) => t,
        (None, Some(_)) => std::env::var("SLURM_ARRAY_TASK_ID")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| Failure::bad_input("error: --tasks without --task needs SLURM_ARRAY_TASK_ID"))?,
        (None, None) => 0,
    };
    if task >= tasks {
        return Err(Failure::bad_input(format!("error: task {task} of {tasks}: give 0 to {}", tasks - 1)));
    }
    let points = sw.task_points(task, tasks);
    let jobs = crate::cmd::validate::jobs_or_cores(a.jobs);
    // A bar with the share of points done and an ETA, on a terminal only (points finish on
    // several threads: the bar is behind a lock).
    let bar = std::sync::Mutex::new(crate::common::ProgressLine::new(a.quiet));
    let progress = |done: usize, total: usize| {
        let mut b = bar.lock().unwrap_or_else(|e| e.into_inner());
        b.update(Some(done as f64 / total.max(1) as f64), &format!("{done}/{total} points"));
    };
    let ran = rocelab_sweep::run(&sw, &points, &a.out, jobs, &progress);
    bar.lock().unwrap_or_else(|e| e.into_inner()).finish();
    let ran = ran.map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    done(
        a.format,
        format!(
            "{ran} points run, {} already done ({} in this task, {} in the sweep); results in {}/points/",
            points.len() - ran,
            points.len(),
            sw.points.len(),
            a.out.display()
        ),
        serde_json::json!({
            "ran": ran,
            "already_done": points.len() - ran,
            "points_in_task": points.len(),
            "points_in_sweep": sw.points.len(),
            "results": a.out.join("points").display().to_string(),
        }),
    )
}
