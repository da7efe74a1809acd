//! `rocelab collect`: snapshot this host's RDMA NIC counters and QoS state into a dump that
//! `rocelab doctor` reads (layout: docs/collect.md).

use crate::common::{Failure, VerbResult};
use rocelab_doctor::collect::{self, CollectOptions};
use rocelab_doctor::tools::Tools;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Output: a directory (one sub-directory per snapshot) or a file ending in `.tar.gz`.
    #[arg(long, short, default_value = "rocelab-dump")]
    out: PathBuf,
    /// What is printed when done: text, or a JSON document listing the snapshots.
    #[arg(long, value_enum, default_value = "text")]
    format: crate::output::Format,
    /// Time between snapshots (`10s`, `500ms`, `1m`).
    #[arg(long, default_value = "10s", value_parser = rocelab_doctor::util::parse_duration)]
    interval: Duration,
    /// Number of snapshots; two or more give the doctor rates.
    #[arg(long, default_value_t = 2)]
    count: u32,
    /// Root of the sysfs tree to read (a fake tree in tests).
    #[arg(long, default_value = "/sys")]
    sysfs_root: PathBuf,
    /// Node name to record (default: this host's name); use the fabric file's name.
    #[arg(long)]
    node: Option<String>,
    /// Deadline for each run of ethtool, mlnx_qos, rdma or nvidia-smi.
    #[arg(long, default_value = "5s", value_parser = rocelab_doctor::util::parse_duration)]
    tool_timeout: Duration,
    /// Read sysfs only; do not run ethtool, mlnx_qos, rdma or nvidia-smi.
    #[arg(long)]
    no_tools: bool,
    /// Root of the procfs tree (loaded kernel modules: nvidia_peermem, ...).
    #[arg(long, default_value = "/proc")]
    proc_root: PathBuf,
    /// A job's NCCL_DEBUG=INFO log to store with each snapshot (NICs used, GPU Direct RDMA).
    #[arg(long, value_name = "LOG")]
    nccl_log: Vec<PathBuf>,
}

pub fn run(a: Args) -> VerbResult {
    if a.count == 0 {
        return Err(Failure::bad_input("error: --count must be at least 1"));
    }
    // An output that cannot be written is bad input whether or not this host has RDMA ports.
    writable_dir_for(&a.out)?;
    let ports = collect::discover(&a.sysfs_root);
    if ports.is_empty() {
        // Nothing was written: a success would send the user to a doctor run on nothing.
        let note = format!(
            "no RDMA devices under {}: nothing to collect on this host (to try the doctor without one: rocelab doctor examples/doctor-dump/)",
            a.sysfs_root.join("class/infiniband").display()
        );
        if a.format == crate::output::Format::Json {
            crate::output::print_json(
                "collect.result",
                &serde_json::json!({ "out": null, "snapshots": [], "note": note }),
            );
        } else {
            eprintln!("error: {note}");
        }
        return Ok(ExitCode::from(crate::common::EXIT_FAILED_CHECK));
    }
    let opts = CollectOptions {
        sysfs_root: a.sysfs_root.clone(),
        host: a.node.clone(),
        tools: if a.no_tools { Tools::none() } else { Tools::discover() },
        tool_timeout: a.tool_timeout,
        proc_root: a.proc_root.clone(),
        nccl_logs: a.nccl_log.clone(),
        gpu_path: true,
    };
    let name = a.out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tarball = name.ends_with(".tar.gz") || name.ends_with(".tgz");
    // A tarball is assembled in a scratch directory next to it, then packed and renamed.
    let dir = if tarball { a.out.with_file_name(format!(".{name}.d")) } else { a.out.clone() };
    if tarball {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let devices: Vec<String> = ports.iter().map(|p| format!("{}/{}", p.device, p.port)).collect();
    eprintln!("collecting {} snapshot(s) of {} RDMA port(s): {}", a.count, ports.len(), devices.join(", "));
    let mut written = Vec::new();
    for i in 0..a.count {
        if i > 0 {
            std::thread::sleep(a.interval);
        }
        let raw = collect::collect_raw(&opts, &ports);
        let path = collect::write_snapshot(&dir, &raw)
            .map_err(|e| Failure::bad_input(format!("error: cannot write a snapshot under {}: {e}", dir.display())))?;
        eprintln!("  [{}/{}] {}", i + 1, a.count, path.display());
        if i == 0 {
            for n in &raw.meta.notes {
                eprintln!("  note: {n}");
            }
        }
        written.push(path);
    }
    if tarball {
        let res = collect::pack_tar_gz(&dir, &a.out);
        let _ = std::fs::remove_dir_all(&dir);
        res.map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    }
    if a.format == crate::output::Format::Json {
        let doc = serde_json::json!({
            "out": a.out.display().to_string(),
            "snapshots": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        });
        crate::output::print_json("collect.result", &doc);
        return Ok(ExitCode::SUCCESS);
    }
    println!("wrote {} snapshot(s) to {}; next: rocelab doctor {}", written.len(), a.out.display(), a.out.display());
    Ok(ExitCode::SUCCESS)
}

/// Checks, before any work, that `out` (a directory, or a `.tar.gz` beside its scratch
/// directory) can be created: the nearest existing ancestor must be a directory we can write in.
fn writable_dir_for(out: &Path) -> Result<(), Failure> {
    let mut dir = out;
    while !dir.as_os_str().is_empty() && !dir.exists() {
        dir = dir.parent().unwrap_or(Path::new(""));
    }
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let fail = |why: String| {
        Failure::bad_input(format!(
            "error: cannot write {}: {why}\n  = help: give --out a directory you can write to",
            out.display()
        ))
    };
    if !dir.is_dir() {
        return Err(fail(format!("{} is not a directory", dir.display())));
    }
    let probe = dir.join(format!(".rocelab-collect-probe-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(fail(format!("{}: {e}", dir.display()))),
    }
}
