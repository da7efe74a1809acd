//! Collection on a live Linux host: discover RDMA devices and their netdevs under a sysfs
//! root, read sysfs directly, run `ethtool` / `mlnx_qos` / `rdma` / `nvidia-smi topo -m` when
//! installed, read the loaded modules (`/proc/modules`) and any NCCL logs given, and write a
//! timestamped snapshot directory in the dump layout (`dump`).
//!
//! Discovery: `<root>/class/infiniband/<dev>/ports/<n>/` gives the ports; the port's netdev is
//! `ports/<n>/gid_attrs/ndevs/0` (what the RoCE GID table is bound to), else the entries of
//! `<dev>/device/net/`. `<root>` is `/sys` on a real host, a fake tree in tests.

use crate::dump::{Meta, RawNetdev, RawRdmaPort, RawSnapshot, FORMAT};
use crate::tools::{self, Tools};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct CollectOptions {
    /// `/sys` on a real host.
    pub sysfs_root: PathBuf,
    /// Node name to record; default: the kernel host name.
    pub host: Option<String>,
    pub tools: Tools,
    /// Deadline for each tool run.
    pub tool_timeout: Duration,
    /// `/proc` on a real host (loaded modules), a fake tree in tests.
    pub proc_root: PathBuf,
    /// NCCL_DEBUG=INFO logs to copy into the snapshot (`--nccl-log`).
    pub nccl_logs: Vec<PathBuf>,
    /// Gather the GPUDirect RDMA path (`nvidia-smi topo -m`, loaded modules). The exporter
    /// does not: no metric comes from them, and `nvidia-smi` is slow for every scrape.
    pub gpu_path: bool,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            sysfs_root: PathBuf::from("/sys"),
            host: None,
            tools: Tools::discover(),
            tool_timeout: Duration::from_secs(5),
            proc_root: PathBuf::from("/proc"),
            nccl_logs: Vec::new(),
            gpu_path: true,
        }
    }
}

/// An RDMA port found under the sysfs root.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortRef {
    pub device: String,
    pub port: u32,
    pub netdev: Option<String>,
}

fn sorted_dir(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(p).map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
    v.sort();
    v
}

fn name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The RDMA ports under `root`, sorted. Empty on a host without RDMA devices.
pub fn discover(root: &Path) -> Vec<PortRef> {
    let mut out = Vec::new();
    for dev in sorted_dir(&root.join("class/infiniband")) {
        let net_entries: Vec<String> = sorted_dir(&dev.join("device/net")).iter().map(|p| name(p)).collect();
        for port_dir in sorted_dir(&dev.join("ports")) {
            let Ok(port) = name(&port_dir).parse::<u32>() else { continue };
            let ndev = crate::util::read_small(&port_dir.join("gid_attrs/ndevs/0"))
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty() && !s.contains('/'));
            let netdev =
                ndev.or_else(|| net_entries.get(port.saturating_sub(1) as usize).or(net_entries.first()).cloned());
            out.push(PortRef { device: name(&dev), port, netdev });
        }
    }
    out
}

/// The kernel's host name, or `localhost`.
pub fn hostname() -> String {
    crate::util::read_small(Path::new("/proc/sys/kernel/hostname"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Gathers one snapshot's raw texts. Never fails: what cannot be read is said in the notes.
pub fn collect_raw(opts: &CollectOptions, ports: &[PortRef]) -> RawSnapshot {
    let host = opts.host.clone().unwrap_or_else(hostname);
    let mut raw = RawSnapshot {
        meta: Meta {
            format: Some(FORMAT.into()),
            host,
            taken_at_unix_ms: crate::util::now_unix_ms(),
            rocelab_version: Some(env!("CARGO_PKG_VERSION").into()),
            notes: Vec::new(),
        },
        ..Default::default()
    };
    let notes = &mut raw.meta.notes;
    let netdevs: BTreeSet<String> = ports.iter().filter_map(|p| p.netdev.clone()).collect();
    for p in ports {
        let hw = opts
            .sysfs_root
            .join("class/infiniband")
            .join(&p.device)
            .join("ports")
            .join(p.port.to_string())
            .join("hw_counters");
        let counters = if hw.is_dir() {
            crate::parse::rdma::read_hw_counters(&hw).unwrap_or_else(|e| {
                notes.push(format!("{}/{}: hw_counters skipped: {e}", p.device, p.port));
                Default::default()
            })
        } else {
            notes.push(format!("{}/{}: no hw_counters directory (driver without RoCE counters?)", p.device, p.port));
            Default::default()
        };
        raw.rdma_ports.insert((p.device.clone(), p.port), RawRdmaPort { netdev: p.netdev.clone(), counters });
    }
    // Every tool run is a job; all run at once, each under its own deadline, so one hung
    // tool costs one timeout, not one per run after it.
    #[derive(Clone, Copy, PartialEq)]
    enum Slot {
        EthtoolS,
        EthtoolI,
        MlnxQos,
        RdmaStatistic,
        GpuTopo,
    }
    let mut jobs: Vec<(Option<String>, Slot, PathBuf, Vec<String>)> = Vec::new();
    let mut job = |nd: Option<&String>, slot: Slot, tool: &Option<PathBuf>, args: &[&str]| {
        if let (false, Some(t)) = (opts.tools.disabled, tool) {
            jobs.push((nd.cloned(), slot, t.clone(), args.iter().map(|s| s.to_string()).collect()));
        }
    };
    for nd in &netdevs {
        job(Some(nd), Slot::EthtoolS, &opts.tools.ethtool, &["-S", nd]);
        job(Some(nd), Slot::EthtoolI, &opts.tools.ethtool, &["-i", nd]);
        job(Some(nd), Slot::MlnxQos, &opts.tools.mlnx_qos, &["-i", nd]);
    }
    if !ports.is_empty() {
        job(None, Slot::RdmaStatistic, &opts.tools.rdma, &["statistic", "show"]);
    }
    if opts.gpu_path {
        job(None, Slot::GpuTopo, &opts.tools.nvidia_smi, &["topo", "-m"]);
    }
    let results: Vec<Result<String, tools::ToolError>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            jobs.iter().map(|(_, _, t, args)| scope.spawn(move || tools::run(t, args, opts.tool_timeout))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Err(tools::ToolError::Failed("tool".into(), "panic".into(), String::new())))
            })
            .collect()
    });
    let mut outputs: Vec<(Option<String>, Slot, String)> = Vec::new();
    for ((nd, slot, _, _), res) in jobs.into_iter().zip(results) {
        match res {
            Ok(out) => outputs.push((nd, slot, out)),
            Err(e) => {
                raw.tool_errors += 1;
                notes.push(e.to_string());
            }
        }
    }
    let mut take = |nd: Option<&String>, slot: Slot| -> Option<String> {
        let i = outputs.iter().position(|(n, s, _)| n.as_ref() == nd && *s == slot)?;
        Some(outputs.swap_remove(i).2)
    };
    for nd in &netdevs {
        let dir = opts.sysfs_root.join("class/net").join(nd);
        let sysfs = crate::parse::sysfs::read_netdev_dir(&dir).unwrap_or_else(|e| {
            notes.push(format!("{nd}: sysfs skipped: {e}"));
            Default::default()
        });
        let r = RawNetdev {
            ethtool_s: take(Some(nd), Slot::EthtoolS),
            ethtool_i: take(Some(nd), Slot::EthtoolI),
            mlnx_qos: take(Some(nd), Slot::MlnxQos),
            sysfs,
        };
        raw.netdevs.insert(nd.clone(), r);
    }
    raw.rdma_statistic = take(None, Slot::RdmaStatistic);
    raw.gpu_topo = take(None, Slot::GpuTopo);
    // The GPUDirect RDMA path: PCIe topology, the peer-memory module, NCCL's own words.
    if opts.gpu_path {
        match crate::util::read_small(&opts.proc_root.join("modules")) {
            Ok(t) => raw.modules = Some(t),
            Err(e) => notes.push(format!("{}: {e}: loaded modules unknown", opts.proc_root.join("modules").display())),
        }
    }
    for p in &opts.nccl_logs {
        match crate::util::read_small(p) {
            Ok(t) => raw.nccl_logs.push((name(p), t)),
            Err(e) => notes.push(format!("--nccl-log {}: {e}", p.display())),
        }
    }
    for (tool, name) in [
        (&opts.tools.ethtool, "ethtool"),
        (&opts.tools.mlnx_qos, "mlnx_qos"),
        (&opts.tools.rdma, "rdma"),
        (&opts.tools.nvidia_smi, "nvidia-smi"),
    ] {
        if name == "nvidia-smi" && !opts.gpu_path {
            continue;
        }
        if tool.is_none() || opts.tools.disabled {
            notes.push(opts.tools.absent_note(name));
        }
    }
    raw
}

/// Writes a snapshot into `out_dir/<host>-<UTC time>/` through a temporary directory and a
/// rename; returns the final path.
pub fn write_snapshot(out_dir: &Path, raw: &RawSnapshot) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out_dir)?;
    let base = format!("{}-{}", sanitize(&raw.meta.host), crate::util::compact_utc(raw.meta.taken_at_unix_ms));
    let mut final_path = out_dir.join(&base);
    let mut k = 1;
    while final_path.exists() {
        final_path = out_dir.join(format!("{base}-{k}"));
        k += 1;
    }
    let tmp = out_dir.join(format!(".{}.partial", name(&final_path)));
    let _ = std::fs::remove_dir_all(&tmp);
    crate::dump::write_raw(&tmp, raw).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&tmp);
    })?;
    std::fs::rename(&tmp, &final_path)?;
    Ok(final_path)
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}

/// Packs the snapshots in `dir` into `dest` (`.tar.gz`), atomically: written to a temporary
/// name, then renamed.
pub fn pack_tar_gz(dir: &Path, dest: &Path) -> Result<(), String> {
    let mut tmp = dest.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let res = crate::dump::pack_tar_gz(dir, &tmp)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))
        .and_then(|_| std::fs::rename(&tmp, dest).map_err(|e| format!("cannot write {}: {e}", dest.display())));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}
