//! The dump: what `collect` writes and `doctor` reads, one directory per snapshot.
//!
//! ```text
//! <snapshot>/meta.json                      {"format":"rocelab-snapshot/1","host":"gpu01",
//!                                            "taken_at_unix_ms":1796204467000, "notes":[..]}
//! <snapshot>/netdev/<if>/ethtool-S.txt      `ethtool -S <if>` as printed
//! <snapshot>/netdev/<if>/ethtool-i.txt      `ethtool -i <if>`
//! <snapshot>/netdev/<if>/mlnx_qos.txt       `mlnx_qos -i <if>`
//! <snapshot>/netdev/<if>/sysfs/...          qos/trust, ecn/roce_{np,rp}/..., mtu, speed,
//!                                           carrier_down_count, statistics/* (sysfs layout)
//! <snapshot>/rdma/<dev>/<port>/hw_counters/<name>   one integer per file (sysfs layout)
//! <snapshot>/rdma/<dev>/<port>/netdev       the port's netdev name
//! <snapshot>/rdma-statistic.txt             `rdma statistic show` (fills missing hw_counters)
//! <snapshot>/switch/<name>/<path>           a registered switch source (`sources::SWITCH_SOURCES`):
//!                                           pfc-counters.txt = SONiC `show pfc counters`,
//!                                           queue-counters.txt, pfcwd-stats.txt,
//!                                           pg-watermark-*.txt, roce-counters/<swp>.txt =
//!                                           Cumulus `nv show interface <swp> qos roce
//!                                           counters`, pfc-watchdog/<swp>.txt, ...; any other
//!                                           file there is named in a note
//! <snapshot>/nccl/<test>.txt                nccl-tests output (op from `Collective test
//!                                           starting:` or the file name, e.g. all_reduce_perf.txt)
//! <snapshot>/nccl-log/<name>                any job's NCCL_DEBUG=INFO log (NICs, GPU Direct RDMA,
//!                                           NCCL WARN lines); nccl/ and nccl-log/ files of any
//!                                           size are read line by line
//! <snapshot>/gpu/nvidia-smi-topo.txt        `nvidia-smi topo -m`
//! <snapshot>/gpu/modules.txt                `/proc/modules` (or `lsmod`)
//! ```
//! Every file is optional except `meta.json`; a dump made by hand from the same commands
//! is as good as one `collect` made. A collection of snapshots is a directory of such
//! directories, or a `.tar.gz` of either.

use crate::parse::{self, ParseError};
use crate::snapshot::{Netdev, RdmaPort, Snapshot, SwitchData};
use crate::DoctorError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "rocelab-snapshot/1";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    #[serde(default)]
    pub format: Option<String>,
    pub host: String,
    pub taken_at_unix_ms: u64,
    #[serde(default)]
    pub rocelab_version: Option<String>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Raw texts of one snapshot before parsing: what `collect` gathered or a dump holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawSnapshot {
    pub meta: Meta,
    pub netdevs: BTreeMap<String, RawNetdev>,
    /// (device, port) -> port data.
    pub rdma_ports: BTreeMap<(String, u32), RawRdmaPort>,
    pub rdma_statistic: Option<String>,
    pub switches: BTreeMap<String, RawSwitch>,
    /// (file name, text).
    pub nccl: Vec<(String, String)>,
    /// (file name, text) of NCCL INFO logs.
    pub nccl_logs: Vec<(String, String)>,
    /// nccl-tests outputs and NCCL logs too large to hold as text
    /// ([`crate::util::MAX_TEXT_BYTES`]), parsed line by line as they were read.
    pub nccl_streamed: Vec<(String, Result<Vec<parse::nccl::NcclRun>, ParseError>)>,
    pub nccl_logs_streamed: Vec<(String, parse::nccl_log::NcclLog)>,
    /// Tool runs that failed or timed out in this collection (the exporter's `rocelab_up`).
    pub tool_errors: usize,
    pub gpu_topo: Option<String>,
    pub modules: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawNetdev {
    pub ethtool_s: Option<String>,
    pub ethtool_i: Option<String>,
    pub mlnx_qos: Option<String>,
    /// Already typed: sysfs files are read (and their errors located) by `parse::sysfs`.
    pub sysfs: parse::sysfs::HostSysfs,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawRdmaPort {
    pub netdev: Option<String>,
    pub counters: parse::rdma::Counters,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawSwitch {
    /// (path inside `switch/<name>/`, text) of every file a registered source reads
    /// ([`crate::sources`]).
    pub sources: Vec<(String, String)>,
    /// Files there that no source reads, named in a note rather than passed over.
    pub unread: Vec<String>,
}

/// How to treat a source that does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strictness {
    /// Fail with the located error (doctor: bad input, exit 2).
    Strict,
    /// Note it in `Snapshot::notes` and go on (exporter: one bad source must not blank the page).
    Lenient,
}

impl RawSnapshot {
    /// Parses every text; `base` names files in errors (`<base>/netdev/eth0/ethtool-S.txt:3`).
    /// `roce_priority` labels switch counters of "the RoCE class" ([`crate::sources::Input`]).
    pub fn to_snapshot(&self, base: &Path, mode: Strictness, roce_priority: u8) -> Result<Snapshot, ParseError> {
        let mut notes = self.meta.notes.clone();
        let mut handle = |res: Result<(), ParseError>| -> Result<(), ParseError> {
            match (res, mode) {
                (Ok(()), _) => Ok(()),
                (Err(e), Strictness::Strict) => Err(e),
                (Err(e), Strictness::Lenient) => {
                    notes.push(format!("skipped: {e}"));
                    Ok(())
                }
            }
        };
        // What parsed but was not taken at face value (cut lines, duplicates).
        let mut warned: Vec<String> = Vec::new();
        let mut snap = Snapshot {
            host: self.meta.host.clone(),
            taken_at_unix_ms: self.meta.taken_at_unix_ms,
            origin: base.display().to_string(),
            ..Default::default()
        };
        for (name, raw) in &self.netdevs {
            let dir = base.join("netdev").join(name);
            let mut nd = Netdev { name: name.clone(), sysfs: raw.sysfs.clone(), ..Default::default() };
            if let Some(t) = &raw.ethtool_s {
                let file = dir.join("ethtool-S.txt");
                handle(parse::ethtool::parse_stats(t).map(|v| nd.ethtool = Some(v)).map_err(|e| e.in_file(&file)))?;
                if let Some(e) = &nd.ethtool {
                    warned.extend(e.warnings.iter().map(|w| format!("{}: {w}", file.display())));
                }
            }
            if let Some(t) = &raw.ethtool_i {
                handle(
                    parse::ethtool::parse_driver_info(t)
                        .map(|v| nd.driver = Some(v))
                        .map_err(|e| e.in_file(&dir.join("ethtool-i.txt"))),
                )?;
            }
            if let Some(t) = &raw.mlnx_qos {
                handle(
                    parse::mlnx_qos::parse(t)
                        .map(|v| nd.mlnx_qos = Some(v))
                        .map_err(|e| e.in_file(&dir.join("mlnx_qos.txt"))),
                )?;
            }
            snap.netdevs.insert(name.clone(), nd);
        }
        for ((dev, port), raw) in &self.rdma_ports {
            let p = RdmaPort {
                device: dev.clone(),
                port: *port,
                netdev: raw.netdev.clone(),
                counters: raw.counters.clone(),
            };
            snap.rdma_ports.insert(p.key(), p);
        }
        if let Some(t) = &self.rdma_statistic {
            let mut parsed = None;
            handle(
                parse::rdma::parse_statistic_show(t)
                    .map(|v| parsed = Some(v))
                    .map_err(|e| e.in_file(&base.join("rdma-statistic.txt"))),
            )?;
            for ps in parsed.unwrap_or_default() {
                let file = base.join("rdma-statistic.txt");
                warned.extend(ps.warnings.iter().map(|w| format!("{}: {w}", file.display())));
                let key = format!("{}/{}", ps.device, ps.port);
                let entry = snap.rdma_ports.entry(key).or_insert_with(|| RdmaPort {
                    device: ps.device.clone(),
                    port: ps.port,
                    ..Default::default()
                });
                // hw_counters files win: they are read directly, the tool may be older.
                for (k, v) in ps.counters {
                    entry.counters.entry(k).or_insert(v);
                }
            }
        }
        for (name, raw) in &self.switches {
            let dir = base.join("switch").join(name);
            let mut sw = SwitchData::default();
            for (rel, t) in &raw.sources {
                handle(
                    crate::sources::read_path(rel, t, name, roce_priority)
                        .map(|v| sw.counters.extend(v))
                        .map_err(|e| e.in_file(&dir.join(rel))),
                )?;
            }
            for rel in &raw.unread {
                warned.push(format!(
                    "not read: {} (no switch source reads this file; docs/doctor.md lists them)",
                    dir.join(rel).display()
                ));
            }
            snap.switches.insert(name.clone(), sw);
        }
        for (file, t) in &self.nccl {
            let hint = Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned());
            handle(
                parse::nccl::parse(t, hint.as_deref())
                    .map(|v| snap.nccl.extend(v))
                    .map_err(|e| e.in_file(&base.join("nccl").join(file))),
            )?;
        }
        for (file, runs) in &self.nccl_streamed {
            handle(runs.clone().map(|v| snap.nccl.extend(v)).map_err(|e| e.in_file(&base.join("nccl").join(file))))?;
        }
        for r in &snap.nccl {
            snap.nccl_log.merge(&r.log);
        }
        for (_, t) in &self.nccl_logs {
            snap.nccl_log.merge(&parse::nccl_log::parse(t));
        }
        for (_, log) in &self.nccl_logs_streamed {
            snap.nccl_log.merge(log);
        }
        if let Some(t) = &self.gpu_topo {
            handle(
                parse::gpu::parse_topo(t)
                    .map(|v| snap.gpu_topo = Some(v))
                    .map_err(|e| e.in_file(&base.join("gpu").join("nvidia-smi-topo.txt"))),
            )?;
        }
        snap.modules = self.modules.as_deref().map(parse::gpu::parse_modules);
        notes.extend(warned);
        snap.notes = notes;
        Ok(snap)
    }
}

fn read_text(p: &Path) -> Result<Option<String>, DoctorError> {
    match crate::util::read_small(p) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(DoctorError::io(p, e)),
    }
}

/// A log too large to read whole (it is streamed instead).
fn is_large(p: &Path) -> bool {
    std::fs::metadata(p).map(|m| m.len() > crate::util::MAX_TEXT_BYTES).unwrap_or(false)
}

fn open_buffered(p: &Path) -> Result<std::io::BufReader<std::fs::File>, DoctorError> {
    std::fs::File::open(p).map(std::io::BufReader::new).map_err(|e| DoctorError::io(p, e))
}

fn subdirs(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn files(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn stem_of(p: &Path) -> String {
    p.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

pub fn parse_meta(text: &str) -> Result<Meta, ParseError> {
    let m: Meta = serde_json::from_str(text).map_err(|e| ParseError::new("meta.json", e.line(), e.to_string()))?;
    if m.host.trim().is_empty() {
        return Err(ParseError::new("meta.json", 0, "empty `host`"));
    }
    if let Some(f) = &m.format {
        if f != FORMAT {
            return Err(ParseError::new(
                "meta.json",
                0,
                format!("unknown format `{f}` (this rocelab reads `{FORMAT}`)"),
            ));
        }
    }
    Ok(m)
}

/// Reads one snapshot directory into raw texts.
pub fn read_raw(dir: &Path) -> Result<RawSnapshot, DoctorError> {
    let meta_path = dir.join("meta.json");
    let Some(meta_text) = read_text(&meta_path)? else {
        return Err(DoctorError::Invalid(format!(
            "{} is not a rocelab dump: no meta.json (see docs/collect.md for the layout)",
            dir.display()
        )));
    };
    let meta = parse_meta(&meta_text).map_err(|e| e.in_file(&meta_path))?;
    let mut raw = RawSnapshot { meta, ..Default::default() };
    for nd in subdirs(&dir.join("netdev")) {
        let sysfs = parse::sysfs::read_netdev_dir(&nd.join("sysfs"))?;
        raw.netdevs.insert(
            name_of(&nd),
            RawNetdev {
                ethtool_s: read_text(&nd.join("ethtool-S.txt"))?,
                ethtool_i: read_text(&nd.join("ethtool-i.txt"))?,
                mlnx_qos: read_text(&nd.join("mlnx_qos.txt"))?,
                sysfs,
            },
        );
    }
    for dev in subdirs(&dir.join("rdma")) {
        for port_dir in subdirs(&dev) {
            let Ok(port) = name_of(&port_dir).parse::<u32>() else { continue };
            let hw = port_dir.join("hw_counters");
            let counters = if hw.is_dir() { parse::rdma::read_hw_counters(&hw)? } else { Default::default() };
            let netdev = read_text(&port_dir.join("netdev"))?.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
            raw.rdma_ports.insert((name_of(&dev), port), RawRdmaPort { netdev, counters });
        }
    }
    raw.rdma_statistic = read_text(&dir.join("rdma-statistic.txt"))?;
    for sw in subdirs(&dir.join("switch")) {
        let mut rs = RawSwitch::default();
        // The switch's own files, then one level of per-port directories.
        let mut rels: Vec<(String, PathBuf)> = files(&sw).into_iter().map(|f| (name_of(&f), f)).collect();
        for sub in subdirs(&sw) {
            rels.extend(files(&sub).into_iter().map(|f| (format!("{}/{}", name_of(&sub), name_of(&f)), f)));
        }
        for (rel, f) in rels {
            if crate::sources::find(&rel).is_none() {
                rs.unread.push(rel);
            } else if let Some(t) = read_text(&f)? {
                rs.sources.push((rel, t));
            }
        }
        raw.switches.insert(name_of(&sw), rs);
    }
    for f in files(&dir.join("nccl")) {
        if is_large(&f) {
            let hint = stem_of(&f);
            let runs = open_buffered(&f)?;
            raw.nccl_streamed.push((name_of(&f), parse::nccl::parse_reader(runs, Some(&hint))));
        } else if let Some(t) = read_text(&f)? {
            raw.nccl.push((name_of(&f), t));
        }
    }
    for f in files(&dir.join("nccl-log")) {
        if is_large(&f) {
            let log = parse::nccl_log::parse_reader(open_buffered(&f)?).map_err(|e| DoctorError::io(&f, e))?;
            raw.nccl_logs_streamed.push((name_of(&f), log));
        } else if let Some(t) = read_text(&f)? {
            raw.nccl_logs.push((name_of(&f), t));
        }
    }
    raw.gpu_topo = read_text(&dir.join("gpu").join("nvidia-smi-topo.txt"))?;
    raw.modules = read_text(&dir.join("gpu").join("modules.txt"))?;
    Ok(raw)
}

/// Writes raw texts in the dump layout into `dir` (which must not exist yet: the caller
/// writes to a temporary name and renames, so a dump is never seen half-written).
pub fn write_raw(dir: &Path, raw: &RawSnapshot) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, nd) in &raw.netdevs {
        let d = dir.join("netdev").join(name);
        std::fs::create_dir_all(&d)?;
        for (file, t) in
            [("ethtool-S.txt", &nd.ethtool_s), ("ethtool-i.txt", &nd.ethtool_i), ("mlnx_qos.txt", &nd.mlnx_qos)]
        {
            if let Some(t) = t {
                std::fs::write(d.join(file), t)?;
            }
        }
        parse::sysfs::write_netdev_dir(&d.join("sysfs"), &nd.sysfs)?;
    }
    for ((dev, port), p) in &raw.rdma_ports {
        let d = dir.join("rdma").join(dev).join(port.to_string());
        let hw = d.join("hw_counters");
        std::fs::create_dir_all(&hw)?;
        for (k, v) in &p.counters {
            std::fs::write(hw.join(k), format!("{v}\n"))?;
        }
        if let Some(n) = &p.netdev {
            std::fs::write(d.join("netdev"), format!("{n}\n"))?;
        }
    }
    if let Some(t) = &raw.rdma_statistic {
        std::fs::write(dir.join("rdma-statistic.txt"), t)?;
    }
    for (sub, list) in [("nccl", &raw.nccl), ("nccl-log", &raw.nccl_logs)] {
        for (name, t) in list {
            std::fs::create_dir_all(dir.join(sub))?;
            std::fs::write(dir.join(sub).join(name), t)?;
        }
    }
    for (file, t) in [("nvidia-smi-topo.txt", &raw.gpu_topo), ("modules.txt", &raw.modules)] {
        if let Some(t) = t {
            std::fs::create_dir_all(dir.join("gpu"))?;
            std::fs::write(dir.join("gpu").join(file), t)?;
        }
    }
    // meta.json last: a dump without it is not a dump, so a crash before this point leaves
    // nothing that reads as whole.
    let meta = serde_json::to_string_pretty(&raw.meta).map_err(std::io::Error::other)?;
    rocelab_model::atomic::write_atomic(&dir.join("meta.json"), format!("{meta}\n").as_bytes())
}

/// Reads one snapshot directory and parses it strictly.
pub fn read_snapshot(dir: &Path, roce_priority: u8) -> Result<Snapshot, DoctorError> {
    Ok(read_raw(dir)?.to_snapshot(dir, Strictness::Strict, roce_priority)?)
}

/// What one command-line argument held: its snapshots, and what was passed over.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dump {
    pub snapshots: Vec<Snapshot>,
    /// Directories that are not snapshots (no `meta.json`), said, never skipped silently.
    pub skipped: Vec<crate::quality::DataProblem>,
}

/// Loads every snapshot a command-line argument names: a snapshot directory, a directory of
/// snapshot directories, or a `.tar.gz` of either. `roce_priority` as in
/// [`RawSnapshot::to_snapshot`].
pub fn load_dump(path: &Path, roce_priority: u8) -> Result<Dump, DoctorError> {
    let name = name_of(path);
    if path.is_file() && (name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
        return load_tarball(path, roce_priority);
    }
    if !path.is_dir() {
        return Err(DoctorError::Invalid(format!("{}: not a dump directory or .tar.gz", path.display())));
    }
    if path.join("meta.json").is_file() {
        return Ok(Dump { snapshots: vec![read_snapshot(path, roce_priority)?], skipped: Vec::new() });
    }
    let mut out = Dump::default();
    for d in subdirs(path) {
        if d.join("meta.json").is_file() {
            out.snapshots.push(read_snapshot(&d, roce_priority)?);
        } else {
            let why = if name_of(&d).ends_with(".partial") {
                "an unfinished snapshot (collect was interrupted)"
            } else {
                "no meta.json, so not a snapshot (see docs/collect.md for the layout)"
            };
            out.skipped.push(crate::quality::DataProblem {
                node: "dump".into(),
                subject: d.display().to_string(),
                message: format!("skipped: {why}"),
            });
        }
    }
    if out.snapshots.is_empty() {
        return Err(DoctorError::Invalid(format!(
            "{}: no snapshot found (a snapshot directory holds meta.json; see docs/collect.md)",
            path.display()
        )));
    }
    Ok(out)
}

fn load_tarball(path: &Path, roce_priority: u8) -> Result<Dump, DoctorError> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "rocelab-doctor-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&tmp).map_err(|e| DoctorError::io(&tmp, e))?;
    let result = (|| {
        unpack_tar_gz(path, &tmp)?;
        // `tar -C dir .` (what collect writes) or a tarball of one top directory.
        let top = subdirs(&tmp);
        let root = if top.len() == 1 && !top[0].join("meta.json").is_file() { top[0].clone() } else { tmp.clone() };
        let mut dump = load_dump(&root, roce_priority)?;
        let (tmp_s, path_s) = (tmp.display().to_string(), path.display().to_string());
        for s in &mut dump.snapshots {
            s.origin = s.origin.replace(&tmp_s, &path_s);
        }
        for p in &mut dump.skipped {
            p.subject = p.subject.replace(&tmp_s, &path_s);
        }
        Ok(dump)
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Most a dump tarball may unpack to: entries and bytes (counter dumps are small; a larger
/// archive is not a dump and must not fill the disk).
const MAX_TAR_ENTRIES: usize = 100_000;
const MAX_TAR_BYTES: u64 = 1 << 30;

/// Unpacks a `.tar.gz` into `dest` with the `tar` and `flate2` crates: regular files and
/// directories only (links are skipped), no path outside `dest`, bounded in size.
fn unpack_tar_gz(path: &Path, dest: &Path) -> Result<(), DoctorError> {
    let bad = |e: std::io::Error| DoctorError::Invalid(format!("{}: cannot unpack: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| DoctorError::io(path, e))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)));
    archive.set_preserve_permissions(false);
    archive.set_preserve_mtime(false);
    let (mut count, mut bytes) = (0usize, 0u64);
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        count += 1;
        bytes = bytes.saturating_add(entry.size());
        // NCCL outputs are streamed when read, so only the archive's total bounds them.
        let is_log = entry
            .path()
            .map(|p| p.components().any(|c| matches!(c.as_os_str().to_str(), Some("nccl" | "nccl-log"))))
            .unwrap_or(false);
        if count > MAX_TAR_ENTRIES || bytes > MAX_TAR_BYTES || (!is_log && entry.size() > crate::util::MAX_TEXT_BYTES) {
            return Err(DoctorError::Invalid(format!(
                "{}: too large for a counter dump (over {MAX_TAR_ENTRIES} entries, {MAX_TAR_BYTES} bytes, or a file over {} bytes)",
                path.display(),
                crate::util::MAX_TEXT_BYTES
            )));
        }
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        // `unpack_in` refuses `..` and absolute paths (returns false): such an entry is skipped.
        entry.unpack_in(dest).map_err(bad)?;
    }
    Ok(())
}

/// Packs the directory `dir` into the `.tar.gz` file `dest` (its contents at the top, as
/// `tar -C dir .` would) with the `tar` and `flate2` crates; links are stored as links.
pub fn pack_tar_gz(dir: &Path, dest: &Path) -> std::io::Result<()> {
    let file = std::fs::File::create(dest)?;
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(file, flate2::Compression::default()));
    builder.follow_symlinks(false);
    builder.append_dir_all(".", dir)?;
    builder.into_inner()?.finish()?.sync_all()
}
