//! HPCC ns-3 scenarios: `config.txt`, its topology and flow files, and ns-3-style outputs.
//!
//! Formats, as `mix/config_doc.txt` and `scratch/third.cc` of alibaba-edu's
//! High-Precision-Congestion-Control define them:
//!
//! * config: one `KEY value...` per line (`{...}` comments as in `config_doc.txt` are skipped);
//! * topology: `nodes switches links`, then the switch ids, then per link
//!   `src dst rate delay error_rate` (`100Gbps 0.001ms 0`);
//! * flows: a count, then per flow `src dst priority dport size start_seconds`.
//!
//! Node `i` becomes `h<i>` (host) or `s<i>` (switch), so ids survive the trip. The outputs
//! follow `third.cc`: the FCT file (`%08x %08x %u %u %lu %lu %lu %lu`: sip dip sport dport size
//! start_ns fct_ns ideal_fct_ns) and the PFC file (`time_ns node node_type ifindex type`, type 1
//! = pause, 0 = resume, logged where the frame is received). `docs/import.md` has the details.

use crate::fabric::{CcTable, Dcqcn, Ecn, Fault, FlowSpec, LinkSpec, NodeSpec, Ns3Switch, Scenario, Transport};
use crate::text::{parse_rate, parse_time_ps, Tokens};
use crate::{read_text, ImportError};
use rocelab_model::{Model, NodeId, PortId, SimTime};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// ns-3 starts HPCC's link-down event at 2 s + LINK_DOWN's first value (µs), the time its
/// example flows start (`third.cc`: `Seconds(2) + MicroSeconds(link_down_time)`).
pub const LINK_DOWN_BASE_PS: u64 = 2_000_000_000_000;
/// Each host numbers its flows' UDP source ports from 10000 in flow-file order (`third.cc`).
pub const FIRST_SPORT: u32 = 10000;

/// One config line: its number and the values after the key.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub line: usize,
    pub values: Vec<String>,
}

/// The config file as read: the last value of each key (as in ns-3), duplicates, order kept.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ns3Config {
    pub file: String,
    pub entries: BTreeMap<String, Entry>,
    pub duplicates: Vec<(String, usize)>,
}

/// Keys `third.cc` reads. Anything else is reported as unknown.
pub const KNOWN_KEYS: &[&str] = &[
    "ENABLE_QCN",
    "USE_DYNAMIC_PFC_THRESHOLD",
    "CLAMP_TARGET_RATE",
    "PAUSE_TIME",
    "DATA_RATE",
    "LINK_DELAY",
    "PACKET_PAYLOAD_SIZE",
    "L2_CHUNK_SIZE",
    "L2_ACK_INTERVAL",
    "L2_BACK_TO_ZERO",
    "TOPOLOGY_FILE",
    "FLOW_FILE",
    "TRACE_FILE",
    "TRACE_OUTPUT_FILE",
    "SIMULATOR_STOP_TIME",
    "ALPHA_RESUME_INTERVAL",
    "RP_TIMER",
    "EWMA_GAIN",
    "FAST_RECOVERY_TIMES",
    "RATE_AI",
    "RATE_HAI",
    "ERROR_RATE_PER_LINK",
    "CC_MODE",
    "RATE_DECREASE_INTERVAL",
    "MIN_RATE",
    "FCT_OUTPUT_FILE",
    "HAS_WIN",
    "GLOBAL_T",
    "MI_THRESH",
    "VAR_WIN",
    "FAST_REACT",
    "U_TARGET",
    "INT_MULTI",
    "RATE_BOUND",
    "ACK_HIGH_PRIO",
    "DCTCP_RATE_AI",
    "PFC_OUTPUT_FILE",
    "LINK_DOWN",
    "ENABLE_TRACE",
    "KMAX_MAP",
    "KMIN_MAP",
    "PMAX_MAP",
    "BUFFER_SIZE",
    "QLEN_MON_FILE",
    "QLEN_MON_START",
    "QLEN_MON_END",
    "MULTI_RATE",
    "SAMPLE_FEEDBACK",
    "PINT_LOG_BASE",
    "PINT_PROB",
];

/// Keys only HPCC, TIMELY, DCTCP or PINT read: no effect with CC_MODE 1, in ns-3 either.
/// (HAS_WIN, GLOBAL_T and VAR_WIN set the sending window under every CC_MODE: imported.)
const NOT_FOR_DCQCN: &[&str] = &[
    "MI_THRESH",
    "FAST_REACT",
    "U_TARGET",
    "INT_MULTI",
    "MULTI_RATE",
    "SAMPLE_FEEDBACK",
    "PINT_LOG_BASE",
    "PINT_PROB",
    "DCTCP_RATE_AI",
];

/// Keys HPCC (CC_MODE 3) does not read.
const NOT_FOR_HPCC: &[&str] = &[
    "ALPHA_RESUME_INTERVAL",
    "RATE_DECREASE_INTERVAL",
    "CLAMP_TARGET_RATE",
    "RP_TIMER",
    "FAST_RECOVERY_TIMES",
    "EWMA_GAIN",
    "RATE_HAI",
    "DCTCP_RATE_AI",
    "PINT_LOG_BASE",
    "PINT_PROB",
];

/// Keys TIMELY (CC_MODE 7) does not read.
const NOT_FOR_TIMELY: &[&str] = &[
    "ALPHA_RESUME_INTERVAL",
    "RATE_DECREASE_INTERVAL",
    "CLAMP_TARGET_RATE",
    "RP_TIMER",
    "FAST_RECOVERY_TIMES",
    "EWMA_GAIN",
    "MI_THRESH",
    "FAST_REACT",
    "U_TARGET",
    "INT_MULTI",
    "MULTI_RATE",
    "SAMPLE_FEEDBACK",
    "DCTCP_RATE_AI",
    "PINT_LOG_BASE",
    "PINT_PROB",
];

/// Keys DCTCP (CC_MODE 8) does not read.
const NOT_FOR_DCTCP: &[&str] = &[
    "ALPHA_RESUME_INTERVAL",
    "RATE_DECREASE_INTERVAL",
    "CLAMP_TARGET_RATE",
    "RP_TIMER",
    "FAST_RECOVERY_TIMES",
    "RATE_AI",
    "RATE_HAI",
    "MI_THRESH",
    "FAST_REACT",
    "U_TARGET",
    "INT_MULTI",
    "MULTI_RATE",
    "SAMPLE_FEEDBACK",
    "PINT_LOG_BASE",
    "PINT_PROB",
];

/// The `[nic.hpcc]`, `[nic.timely]` or `[nic.dctcp]` table of CC_MODE 3, 7 or 8 from its
/// keys (`third.cc` passes them to `RdmaHw`; the ones a config leaves out keep `RdmaHw`'s
/// defaults, which are also rocelab's); `None` for DCQCN.
fn other_cc(cfg: &Ns3Config, mode: u32, g: f64, topo: &Topology, payload: u32) -> Result<Option<CcTable>, ImportError> {
    let mut items: Vec<(&'static str, String, String)> = Vec::new();
    let rate = |key: &'static str, ns3: &str, items: &mut Vec<_>| -> Result<(), ImportError> {
        if let Some(v) = cfg.rate_mbps(ns3)? {
            items.push((key, fmt_f64(v), ns3.to_string()));
        }
        Ok(())
    };
    let name = match mode {
        3 => {
            if let Some(v) = cfg.positive_f64("U_TARGET")? {
                if v > 1.0 {
                    let line = cfg.get("U_TARGET").map(|e| e.line).unwrap_or(0);
                    return Err(ImportError::at(&cfg.file, line, format!("U_TARGET {v} is above 1"), "HPCC uses 0.95"));
                }
                items.push(("target_util", fmt_f64(v), "U_TARGET".into()));
            }
            for (key, ns3) in [("mi_thresh", "MI_THRESH"), ("int_multi", "INT_MULTI")] {
                if let Some((_, v)) = cfg.num::<u32>(ns3, "a whole number")? {
                    items.push((key, v.to_string(), ns3.into()));
                }
            }
            for (key, ns3) in
                [("fast_react", "FAST_REACT"), ("multi_rate", "MULTI_RATE"), ("sample_feedback", "SAMPLE_FEEDBACK")]
            {
                if let Some((_, v)) = cfg.flag(ns3)? {
                    items.push((key, v.to_string(), ns3.into()));
                }
            }
            rate("rate_ai_mbps", "RATE_AI", &mut items)?;
            rate("min_rate_mbps", "MIN_RATE", &mut items)?;
            // T: third.cc gives every QP the largest base RTT under GLOBAL_T 1, its own pair's
            // otherwise (rocelab's default: the QP's own path).
            if cfg.flag("GLOBAL_T")?.is_some_and(|x| x.1) {
                let us = max_rtt_ps(topo, payload) as f64 / 1e6;
                items.push(("base_rtt_us", fmt_f64(us), "GLOBAL_T 1: third.cc's maxRtt".into()));
            }
            "hpcc"
        }
        7 => {
            rate("rate_ai_mbps", "RATE_AI", &mut items)?;
            rate("rate_hai_mbps", "RATE_HAI", &mut items)?;
            rate("min_rate_mbps", "MIN_RATE", &mut items)?;
            "timely"
        }
        8 => {
            items.push(("g", fmt_f64(g), "EWMA_GAIN (RdmaHw's 1/16 when absent)".into()));
            rate("rate_ai_mbps", "DCTCP_RATE_AI", &mut items)?;
            rate("min_rate_mbps", "MIN_RATE", &mut items)?;
            "dctcp"
        }
        _ => return Ok(None),
    };
    let what = match mode {
        3 => "HPCC",
        7 => "TIMELY",
        _ => "DCTCP, rate-based as ns-3 runs it on RDMA QPs",
    };
    Ok(Some(CcTable { name, origin: format!("CC_MODE {mode}: {what}"), items }))
}

/// A float as TOML.
fn fmt_f64(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

/// Outputs rocelab does not produce.
const NOT_PRODUCED: &[&str] =
    &["TRACE_FILE", "TRACE_OUTPUT_FILE", "ENABLE_TRACE", "QLEN_MON_FILE", "QLEN_MON_START", "QLEN_MON_END"];

/// Parses a config file: `KEY value...` per line; `{...}` spans are comments.
pub fn parse_config(file: &str, text: &str) -> Result<Ns3Config, ImportError> {
    let mut c = Ns3Config { file: file.to_string(), ..Default::default() };
    let mut depth = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let mut line = String::with_capacity(raw.len());
        for ch in raw.chars() {
            match ch {
                '{' => depth += 1,
                '}' if depth > 0 => depth -= 1,
                '}' => {
                    return Err(ImportError::at(
                        file,
                        i + 1,
                        "a `}` without its `{`",
                        "comments are written `{like this}`",
                    ))
                }
                _ if depth == 0 => line.push(ch),
                _ => {}
            }
        }
        // A comment may not span lines in config_doc.txt; close it at the line end.
        depth = 0;
        let mut toks = line.split_whitespace();
        let Some(key) = toks.next() else { continue };
        if key.starts_with('#') {
            continue;
        }
        let values: Vec<String> = toks.map(str::to_string).collect();
        if let Some(old) = c.entries.insert(key.to_string(), Entry { line: i + 1, values }) {
            c.duplicates.push((key.to_string(), old.line));
        }
    }
    Ok(c)
}

impl Ns3Config {
    fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    fn one(&self, key: &str) -> Result<Option<(usize, &str)>, ImportError> {
        match self.get(key) {
            None => Ok(None),
            Some(e) if e.values.len() == 1 => Ok(Some((e.line, e.values[0].as_str()))),
            Some(e) => Err(ImportError::at(
                &self.file,
                e.line,
                format!("{key} takes one value, found {}", e.values.len()),
                format!("write `{key} VALUE`"),
            )),
        }
    }

    fn num<T: std::str::FromStr>(&self, key: &str, what: &str) -> Result<Option<(usize, T)>, ImportError> {
        match self.one(key)? {
            None => Ok(None),
            Some((line, v)) => v.parse::<T>().map(|x| Some((line, x))).map_err(|_| {
                ImportError::at(
                    &self.file,
                    line,
                    format!("{key} `{v}` is not {what}"),
                    format!("write {key} as {what}"),
                )
            }),
        }
    }

    fn flag(&self, key: &str) -> Result<Option<(usize, bool)>, ImportError> {
        match self.one(key)? {
            None => Ok(None),
            Some((line, v)) => match v.to_ascii_lowercase().as_str() {
                "0" | "no" | "false" => Ok(Some((line, false))),
                "1" | "yes" | "true" => Ok(Some((line, true))),
                _ => v.parse::<u32>().map(|x| Some((line, x != 0))).map_err(|_| {
                    ImportError::at(&self.file, line, format!("{key} `{v}` is not 0 or 1"), "write 0 (off) or 1 (on)")
                }),
            },
        }
    }

    fn rate_mbps(&self, key: &str) -> Result<Option<f64>, ImportError> {
        match self.one(key)? {
            None => Ok(None),
            Some((line, v)) => parse_rate(v).map(|b| Some(b as f64 / 1e6)).ok_or_else(|| {
                ImportError::at(
                    &self.file,
                    line,
                    format!("{key} `{v}` is not an ns-3 data rate"),
                    "write a rate with its unit, e.g. 50Mb/s or 100Gbps",
                )
            }),
        }
    }

    fn positive_f64(&self, key: &str) -> Result<Option<f64>, ImportError> {
        match self.num::<f64>(key, "a number")? {
            None => Ok(None),
            Some((_, v)) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
            Some((line, v)) => Err(ImportError::at(
                &self.file,
                line,
                format!("{key} {v} must be a non-negative number"),
                "see mix/config_doc.txt for units",
            )),
        }
    }

    /// `KMAX_MAP n rate1 v1 rate2 v2 ...`: speed (bit/s) -> value.
    fn speed_map(&self, key: &str) -> Result<Option<SpeedMap>, ImportError> {
        let Some(e) = self.get(key) else { return Ok(None) };
        let bad = |m: String| {
            ImportError::at(
                &self.file,
                e.line,
                m,
                format!("write `{key} N speed1 value1 ... speedN valueN`, speeds in bit/s"),
            )
        };
        let n: usize = e
            .values
            .first()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad(format!("{key} must start with the number of entries")))?;
        if n.checked_mul(2).and_then(|x| x.checked_add(1)) != Some(e.values.len()) {
            return Err(bad(format!(
                "{key} announces {n} entries but has {} values after the count",
                e.values.len() - 1
            )));
        }
        let mut m = BTreeMap::new();
        for pair in e.values[1..].chunks(2) {
            let speed: u64 = pair[0]
                .parse()
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| bad(format!("`{}` is not a link speed in bit/s", pair[0])))?;
            let v: f64 = pair[1]
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad(format!("`{}` is not a non-negative number", pair[1])))?;
            m.insert(speed, v);
        }
        Ok(Some((e.line, m)))
    }
}

/// A `*_MAP` key: its line and speed (bit/s) -> value.
type SpeedMap = (usize, BTreeMap<u64, f64>);

/// An imported ns-3 scenario: the rocelab scenario plus what the ns-3-style outputs need.
#[derive(Clone, Debug)]
pub struct Ns3Import {
    pub scenario: Scenario,
    /// ns-3 node id of each `scenario.nodes` entry.
    pub node_ids: Vec<u32>,
    /// Per flow (same order as `scenario.flows`): UDP source and destination ports.
    pub sports: Vec<u32>,
    pub dports: Vec<u32>,
    /// PACKET_PAYLOAD_SIZE, used by the ideal FCT as in ns-3.
    pub payload_bytes: u32,
    /// L2_ACK_INTERVAL (a run option in rocelab: `--ack-interval`).
    pub ack_interval: Option<u32>,
    /// File names (without directory) from FCT_OUTPUT_FILE and PFC_OUTPUT_FILE.
    pub fct_file: String,
    pub pfc_file: String,
    /// Where ns-3 itself would write the FCT and PFC files (FCT_OUTPUT_FILE and
    /// PFC_OUTPUT_FILE from its run directory), when the config names both.
    pub ns3_outputs: Option<(PathBuf, PathBuf)>,
    /// Unknown config keys with their lines (also summarized in `scenario.notes`).
    pub unknown_keys: Vec<(String, usize)>,
}

/// Where the config's TOPOLOGY_FILE / FLOW_FILE may be: as written (ns-3 runs from its
/// simulation directory, so `mix/topology.txt` is relative to the parent of `mix/`), relative to
/// the config's own directory, or to that directory's parent.
fn resolve(config_path: &Path, given: &str) -> Vec<PathBuf> {
    let g = Path::new(given);
    let mut c = vec![g.to_path_buf()];
    if g.is_relative() {
        if let Some(dir) = config_path.parent() {
            c.push(dir.join(g));
            if let Some(up) = dir.parent() {
                c.push(up.join(g));
            }
            if let Some(name) = g.file_name() {
                c.push(dir.join(name));
            }
        }
    }
    c
}

fn locate_input(cfg: &Ns3Config, config_path: &Path, key: &str, flag: &str) -> Result<PathBuf, ImportError> {
    let Some((line, v)) = cfg.one(key)? else {
        return Err(ImportError::at(
            &cfg.file,
            0,
            format!("no {key} in the config"),
            format!("add `{key} path` to the config, or pass {flag}"),
        ));
    };
    let cands = resolve(config_path, v);
    cands.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        let tried: Vec<String> = cands.iter().map(|p| p.display().to_string()).collect();
        ImportError::at(
            &cfg.file,
            line,
            format!("{key} `{v}` not found (tried {})", tried.join(", ")),
            format!("pass the file with {flag}"),
        )
    })
}

/// Reads a config file and the topology and flow files it names (or the overrides).
pub fn import(config: &Path, topology: Option<&Path>, flows: Option<&Path>) -> Result<Ns3Import, ImportError> {
    let cfg_name = config.display().to_string();
    let cfg = parse_config(&cfg_name, &read_text(config)?)?;
    let topo_path = match topology {
        Some(p) => p.to_path_buf(),
        None => locate_input(&cfg, config, "TOPOLOGY_FILE", "--topology")?,
    };
    let flow_path = match flows {
        Some(p) => p.to_path_buf(),
        None => locate_input(&cfg, config, "FLOW_FILE", "--flows")?,
    };
    let topo_name = topo_path.display().to_string();
    let flow_name = flow_path.display().to_string();
    let name = config.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "ns3".into());
    let mut imp = import_str(
        &name,
        (&cfg_name, &read_text(config)?),
        (&topo_name, &read_text(&topo_path)?),
        (&flow_name, &read_text(&flow_path)?),
    )?;
    // ns-3 writes its outputs at the paths the config names, relative to the directory it runs
    // in: the one the config's input paths resolve from.
    let run_dir = ns3_run_dir(&cfg, config);
    let out_path = |key: &str| cfg.get(key).and_then(|e| e.values.first()).map(|v| run_dir.join(v));
    imp.ns3_outputs = out_path("FCT_OUTPUT_FILE").zip(out_path("PFC_OUTPUT_FILE"));
    Ok(imp)
}

/// The directory ns-3 ran the config from: the base against which its TOPOLOGY_FILE (or
/// FLOW_FILE) resolves, or the config's parent's parent (`simulation/` for `mix/config.txt`).
fn ns3_run_dir(cfg: &Ns3Config, config_path: &Path) -> PathBuf {
    for key in ["TOPOLOGY_FILE", "FLOW_FILE"] {
        // An absolute input path says nothing about where ns-3 ran.
        if let Some(v) = cfg.get(key).and_then(|e| e.values.first()).filter(|v| Path::new(v).is_relative()) {
            for c in resolve(config_path, v) {
                if c.is_file() {
                    let mut base = c.clone();
                    for _ in Path::new(v).components() {
                        base.pop();
                    }
                    return base;
                }
            }
        }
    }
    config_path.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default()
}

/// The parsed topology file.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub nodes: u32,
    pub is_switch: Vec<bool>,
    /// `(src, dst, bit/s, delay ps, error rate, line)`.
    pub links: Vec<(u32, u32, u64, u64, f64, usize)>,
    /// First line after the announced links, if the file goes on (ns-3 never reads it).
    pub ignored_from: Option<usize>,
}

pub fn parse_topology(file: &str, text: &str) -> Result<Topology, ImportError> {
    let mut t = Tokens::new(file, text);
    let (l1, nodes) = t.next_parse::<u32>("node count")?;
    let (_, switches) = t.next_parse::<u32>("switch count")?;
    let (_, links) = t.next_parse::<u32>("link count")?;
    if nodes == 0 || nodes > 1_000_000 || switches > nodes || links > 10_000_000 {
        return Err(ImportError::at(
            file,
            l1,
            format!("{nodes} nodes, {switches} switches, {links} links is not a topology"),
            "the first line is `nodes switches links`, with switches <= nodes",
        ));
    }
    let mut is_switch = vec![false; nodes as usize];
    for _ in 0..switches {
        let (line, id) = t.next_parse::<u32>("switch id")?;
        if id >= nodes {
            return Err(ImportError::at(
                file,
                line,
                format!("switch id {id} is not below the node count {nodes}"),
                "node ids run from 0 to nodes-1",
            ));
        }
        if std::mem::replace(&mut is_switch[id as usize], true) {
            return Err(ImportError::at(
                file,
                line,
                format!("switch id {id} is listed twice"),
                "list each switch once",
            ));
        }
    }
    let mut out = Vec::with_capacity(links as usize);
    for _ in 0..links {
        let (line, a) = t.next_parse::<u32>("link source node id")?;
        let (_, b) = t.next_parse::<u32>("link destination node id")?;
        let (_, rate) = t.next("link rate")?;
        let (_, delay) = t.next("link delay")?;
        let (_, err) = t.next_parse::<f64>("link error rate")?;
        for id in [a, b] {
            if id >= nodes {
                return Err(ImportError::at(
                    file,
                    line,
                    format!("link end {id} is not a node (there are {nodes})"),
                    "node ids run from 0 to nodes-1",
                ));
            }
        }
        if a == b {
            return Err(ImportError::at(file, line, format!("link from node {a} to itself"), "a link joins two nodes"));
        }
        if !is_switch[a as usize] && !is_switch[b as usize] {
            return Err(ImportError::at(
                file,
                line,
                format!("link joins two hosts ({a} and {b})"),
                "list the switch ids on the second line; hosts attach to switches",
            ));
        }
        let bps = parse_rate(rate).ok_or_else(|| {
            ImportError::at(file, line, format!("`{rate}` is not an ns-3 data rate"), "e.g. 100Gbps or 25Gb/s")
        })?;
        let ps = parse_time_ps(delay).ok_or_else(|| {
            ImportError::at(file, line, format!("`{delay}` is not an ns-3 time"), "e.g. 0.001ms or 1us")
        })?;
        if !(err.is_finite() && (0.0..=1.0).contains(&err)) {
            return Err(ImportError::at(file, line, format!("error rate {err} is not in [0, 1]"), "0 means no loss"));
        }
        out.push((a, b, bps, ps, err, line));
    }
    // ns-3 reads exactly the announced links; HPCC's own mix/topology.txt has more lines.
    let ignored_from = t.rest_line();
    Ok(Topology { nodes, is_switch, links: out, ignored_from })
}

/// One line of the flow file.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns3Flow {
    pub src: u32,
    pub dst: u32,
    pub priority: u32,
    pub dport: u32,
    pub size: u64,
    pub start_ps: u64,
    pub line: usize,
}

/// The flows ns-3 reads: the announced count of them, and the first line after them, if any.
pub struct Ns3Flows {
    pub flows: Vec<Ns3Flow>,
    pub ignored_from: Option<usize>,
}

pub fn parse_flows(file: &str, text: &str, topo: &Topology) -> Result<Ns3Flows, ImportError> {
    let mut t = Tokens::new(file, text);
    let (l1, n) = t.next_parse::<u64>("flow count")?;
    if n > 50_000_000 {
        return Err(ImportError::at(
            file,
            l1,
            format!("{n} flows is more than rocelab imports"),
            "split the flow file",
        ));
    }
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (line, src) = t.next_parse::<u32>("source node id")?;
        let (_, dst) = t.next_parse::<u32>("destination node id")?;
        let (_, priority) = t.next_parse::<u32>("priority")?;
        let (_, dport) = t.next_parse::<u32>("destination port")?;
        let (_, size) = t.next_parse::<u64>("flow size in bytes")?;
        let (_, start) = t.next_parse::<f64>("start time in seconds")?;
        for (end, id) in [("source", src), ("destination", dst)] {
            if id >= topo.nodes {
                return Err(ImportError::at(
                    file,
                    line,
                    format!("{end} {id} is not a node (the topology has {})", topo.nodes),
                    "node ids run from 0 to nodes-1",
                ));
            }
            if topo.is_switch[id as usize] {
                return Err(ImportError::at(file, line, format!("{end} {id} is a switch"), "flows run between hosts"));
            }
        }
        if src == dst {
            return Err(ImportError::at(
                file,
                line,
                format!("a flow from host {src} to itself"),
                "pick another destination",
            ));
        }
        if priority != 3 {
            return Err(ImportError::at(
                file,
                line,
                format!("priority {priority}: rocelab imports ns-3 data on priority 3 (its lossless RoCE class) only"),
                "use priority 3, as HPCC's traffic generator does",
            ));
        }
        if size == 0 || size > u32::MAX as u64 {
            return Err(ImportError::at(
                file,
                line,
                format!("flow size {size} bytes"),
                "ns-3 reads the size as a 32-bit count of bytes above 0",
            ));
        }
        if dport > u16::MAX as u32 {
            return Err(ImportError::at(file, line, format!("destination port {dport} is above 65535"), "a UDP port"));
        }
        if !(start.is_finite() && (0.0..1e6).contains(&start)) {
            return Err(ImportError::at(file, line, format!("start time {start} s"), "a time in seconds, >= 0"));
        }
        v.push(Ns3Flow { src, dst, priority, dport, size, start_ps: (start * 1e12).round() as u64, line });
    }
    Ok(Ns3Flows { flows: v, ignored_from: t.rest_line() })
}

fn node_name(id: u32, is_switch: bool) -> String {
    if is_switch {
        format!("s{id}")
    } else {
        format!("h{id}")
    }
}

/// Imports from text: `(file name, text)` of the config, topology and flow files.
pub fn import_str(
    name: &str,
    (cfg_file, cfg_text): (&str, &str),
    (topo_file, topo_text): (&str, &str),
    (flow_file, flow_text): (&str, &str),
) -> Result<Ns3Import, ImportError> {
    let cfg = parse_config(cfg_file, cfg_text)?;
    let topo = parse_topology(topo_file, topo_text)?;
    let Ns3Flows { flows, ignored_from: flows_ignored } = parse_flows(flow_file, flow_text, &topo)?;
    let mut notes = Vec::new();
    if let Some(line) = topo.ignored_from {
        notes.push(format!(
            "{}: the first line announces {} links; from line {line} on the file is ignored, as ns-3 reads only \
             the announced count",
            base(topo_file),
            topo.links.len()
        ));
    }
    if let Some(line) = flows_ignored {
        notes.push(format!(
            "{}: the first line announces {} flows; from line {line} on the file is ignored, as ns-3 reads only \
             the announced count",
            base(flow_file),
            flows.len()
        ));
    }

    // CC_MODE first: refuse what rocelab does not model.
    let cc_mode = cfg.num::<u32>("CC_MODE", "a whole number")?;
    let mode = match cc_mode {
        None => 1,
        Some((_, m @ (1 | 3 | 7 | 8))) => m,
        Some((line, m)) => {
            let what = if m == 10 { "HPCC-PINT" } else { "an unknown congestion control" };
            return Err(ImportError::at(
                cfg_file,
                line,
                format!("CC_MODE {m} ({what}) is not modelled by rocelab"),
                "rocelab models DCQCN (CC_MODE 1), HPCC (3), TIMELY (7) and DCTCP (8); choose one of them",
            ));
        }
    };
    if cc_mode.is_none() {
        notes.push("CC_MODE not given: ns-3's default 1 (DCQCN)".to_string());
    }

    // Unknown keys: one warning that lists them all.
    let mut unknown: Vec<(String, usize)> = cfg
        .entries
        .iter()
        .filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str()))
        .map(|(k, e)| (k.clone(), e.line))
        .collect();
    unknown.sort_by_key(|u| u.1);
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|(k, l)| format!("{k} (line {l})")).collect();
        notes.push(format!("unknown config keys, not imported: {}", list.join(", ")));
    }
    for (k, old) in &cfg.duplicates {
        notes.push(format!("{k} is given more than once (also line {old}): the last value wins, as in ns-3"));
    }

    // Nodes: hosts without links are left out (rocelab hosts need a NIC link).
    let mut degree = vec![0u32; topo.nodes as usize];
    for l in &topo.links {
        degree[l.0 as usize] += 1;
        degree[l.1 as usize] += 1;
    }
    let mut index: HashMap<u32, usize> = HashMap::new();
    let mut nodes = Vec::new();
    let mut node_ids = Vec::new();
    let mut unlinked = Vec::new();
    for id in 0..topo.nodes {
        let sw = topo.is_switch[id as usize];
        if degree[id as usize] == 0 {
            unlinked.push(node_name(id, sw));
            continue;
        }
        if !sw && degree[id as usize] > 1 {
            return Err(ImportError::at(
                topo_file,
                0,
                format!("host {id} has {} links; rocelab hosts have one NIC link", degree[id as usize]),
                "connect each host to one switch",
            ));
        }
        index.insert(id, nodes.len());
        node_ids.push(id);
        nodes.push(NodeSpec { name: node_name(id, sw), is_switch: sw });
    }
    if !unlinked.is_empty() {
        notes.push(format!("nodes without links left out: {}", unlinked.join(", ")));
    }
    let links: Vec<LinkSpec> = topo
        .links
        .iter()
        .map(|&(a, b, bps, ps, _, line)| LinkSpec {
            a: index[&a],
            b: index[&b],
            speed_bps: bps,
            delay_ps: ps,
            origin: format!("{}:{line}", base(topo_file)),
        })
        .collect();
    let lossy: Vec<String> = topo.links.iter().filter(|l| l.4 > 0.0).map(|l| format!("line {}", l.5)).collect();
    if !lossy.is_empty() {
        notes.push(format!("links with an error rate above 0 ({}): random loss is not modelled", lossy.join(", ")));
    }

    // Flows and their ports, numbered per source host as ns-3 does.
    let mut next_sport: HashMap<u32, u32> = HashMap::new();
    let mut sports = Vec::with_capacity(flows.len());
    let mut dports = Vec::with_capacity(flows.len());
    let mut fspecs = Vec::with_capacity(flows.len());
    let mut unsorted = None;
    for (i, fl) in flows.iter().enumerate() {
        if i > 0 && fl.start_ps < flows[i - 1].start_ps && unsorted.is_none() {
            unsorted = Some(fl.line);
        }
        let p = next_sport.entry(fl.src).or_insert(FIRST_SPORT);
        sports.push(*p);
        *p += 1;
        dports.push(fl.dport);
        let (Some(&src), Some(&dst)) = (index.get(&fl.src), index.get(&fl.dst)) else {
            return Err(ImportError::at(
                flow_file,
                fl.line,
                format!("flow between {} and {}, but one of them has no link", fl.src, fl.dst),
                "connect both hosts in the topology file",
            ));
        };
        fspecs.push(FlowSpec {
            src,
            dst,
            size_bytes: fl.size,
            start_ps: fl.start_ps,
            origin: format!("{}:{}", base(flow_file), fl.line),
        });
    }
    if let Some(line) = unsorted {
        notes.push(format!(
            "the flow file is not sorted by start time (line {line}): ns-3 reads flows in order and would start later \
             ones late; rocelab starts every flow at its own time"
        ));
    }

    // Switch buffer, headroom, ECN.
    let buffer_mib = cfg.num::<u64>("BUFFER_SIZE", "a whole number of MiB")?;
    let buffer_bytes = match buffer_mib {
        Some((line, 0)) => {
            return Err(ImportError::at(cfg_file, line, "BUFFER_SIZE 0", "the switch buffer in MiB (HPCC: 32)"))
        }
        Some((line, v)) if v > 1 << 20 => {
            return Err(ImportError::at(cfg_file, line, format!("BUFFER_SIZE {v} MiB is too large"), "e.g. 32"))
        }
        Some((_, v)) => v * 1024 * 1024,
        None => {
            notes.push("BUFFER_SIZE not given: ns-3's default 16 MiB".into());
            16 * 1024 * 1024
        }
    };
    // HPCC: headroom = rate · delay(ns) / 8 / 1e9 · 3 per switch port.
    let hdrm: Vec<u64> =
        topo.links.iter().map(|l| (l.2 as u128 * (l.3 / 1000) as u128 / 8 / 1_000_000_000 * 3) as u64).collect();
    let headroom_bytes = hdrm.iter().copied().max().unwrap_or(0);
    if hdrm.iter().any(|h| *h != headroom_bytes) {
        notes.push(format!(
            "HPCC sizes headroom per port (3 · rate · delay, {} to {} B here); rocelab uses one value for every port: the \
             largest",
            hdrm.iter().min().unwrap_or(&0),
            headroom_bytes
        ));
    }
    let nic_rate = topo.links.iter().find_map(|l| {
        (!topo.is_switch[l.0 as usize]).then_some(l.2).or((!topo.is_switch[l.1 as usize]).then_some(l.2))
    });
    if let Some(nic) = nic_rate {
        if topo.links.iter().any(|l| l.2 > nic) {
            notes.push(
                "HPCC raises the PFC α of ports faster than the NIC (1/8 doubled per speed doubling); rocelab's \
                 ns3-reference preset uses 1/8 on every port"
                    .into(),
            );
        }
    }

    let qcn = cfg.flag("ENABLE_QCN")?.map(|x| x.1).unwrap_or(true);
    let speeds: std::collections::BTreeSet<u64> = topo.links.iter().map(|l| l.2).collect();
    let kmin = cfg.speed_map("KMIN_MAP")?;
    let kmax = cfg.speed_map("KMAX_MAP")?;
    let pmax = cfg.speed_map("PMAX_MAP")?;
    let ecn_by_speed = if !qcn {
        notes.push("ENABLE_QCN 0: switches mark no ECN, so DCQCN never slows down".into());
        None
    } else {
        let mut m = BTreeMap::new();
        for (key, map) in [("KMIN_MAP", &kmin), ("KMAX_MAP", &kmax), ("PMAX_MAP", &pmax)] {
            let Some((line, map)) = map else {
                return Err(ImportError::at(
                    cfg_file,
                    0,
                    format!("no {key}: ns-3 needs ECN thresholds for every link speed"),
                    format!("add `{key} N speed value ...`, e.g. `{key} 1 100000000000 ...`"),
                ));
            };
            for s in &speeds {
                if !map.contains_key(s) {
                    return Err(ImportError::at(
                        cfg_file,
                        *line,
                        format!("{key} has no entry for {} Gb/s, a link speed of the topology", *s as f64 / 1e9),
                        format!("add `{s} VALUE` to {key} (ns-3 stops with \"must set ... for each link speed\")"),
                    ));
                }
            }
        }
        let (kmin, kmax, pmax) = (
            &kmin.as_ref().expect("checked").1,
            &kmax.as_ref().expect("checked").1,
            &pmax.as_ref().expect("checked").1,
        );
        for s in kmin.keys().filter(|s| kmax.contains_key(s) && pmax.contains_key(s)) {
            // Thresholds are in KB of 1000 bytes (switch-mmu.cc multiplies by 1000).
            let e = Ecn {
                kmin_bytes: (kmin[s] * 1000.0).round() as u64,
                kmax_bytes: (kmax[s] * 1000.0).round() as u64,
                pmax: pmax[s],
            };
            if e.kmin_bytes > e.kmax_bytes || e.pmax <= 0.0 || e.pmax > 1.0 {
                let line = cfg.get("KMIN_MAP").map(|e| e.line).unwrap_or(0);
                return Err(ImportError::at(
                    cfg_file,
                    line,
                    format!(
                        "ECN at {} Gb/s: Kmin {} KB, Kmax {} KB, Pmax {} is not a RED profile",
                        *s as f64 / 1e9,
                        kmin[s],
                        kmax[s],
                        pmax[s]
                    ),
                    "Kmin <= Kmax and Pmax in (0, 1]",
                ));
            }
            if speeds.contains(s) {
                m.insert(*s, e);
            }
        }
        Some(m)
    };

    // NIC.
    let payload = match cfg.num::<u32>("PACKET_PAYLOAD_SIZE", "a whole number of bytes")? {
        Some((line, v)) if !(256..=4096).contains(&v) => {
            return Err(ImportError::at(
                cfg_file,
                line,
                format!("PACKET_PAYLOAD_SIZE {v} is outside 256..=4096"),
                "rocelab models RoCE path MTUs, 256 to 4096 bytes of payload",
            ))
        }
        Some((_, v)) => v,
        None => {
            notes.push("PACKET_PAYLOAD_SIZE not given: ns-3's default 1000".into());
            1000
        }
    };
    let require = |key: &str| {
        ImportError::at(
            cfg_file,
            0,
            format!("no {key}: ns-3's DCQCN has no usable default for it"),
            format!("add `{key} ...` (see mix/config_doc.txt)"),
        )
    };
    let alpha = cfg.positive_f64("ALPHA_RESUME_INTERVAL")?.unwrap_or(55.0);
    let decrease = cfg.positive_f64("RATE_DECREASE_INTERVAL")?.unwrap_or(4.0);
    // (DCTCP reads EWMA_GAIN too; RdmaHw's default is 1/16.)
    let g = match cfg.positive_f64("EWMA_GAIN")? {
        Some(g) => g,
        None if mode == 8 => 1.0 / 16.0,
        None if mode != 1 => 0.00390625,
        None => return Err(require("EWMA_GAIN")),
    };
    if !(g > 0.0 && g <= 1.0) {
        let line = cfg.get("EWMA_GAIN").map(|e| e.line).unwrap_or(0);
        return Err(ImportError::at(cfg_file, line, format!("EWMA_GAIN {g} is not in (0, 1]"), "HPCC uses 0.00390625"));
    }
    let cc_table = other_cc(&cfg, mode, g, &topo, payload)?;
    let dcqcn = if mode != 1 {
        Dcqcn::default()
    } else {
        Dcqcn {
            g: Some(g),
            alpha_timer_us: Some(alpha),
            increase_timer_us: Some(cfg.positive_f64("RP_TIMER")?.ok_or_else(|| require("RP_TIMER"))?),
            byte_counter_bytes: Some(0),
            fast_recovery_steps: Some(
                cfg.num::<u32>("FAST_RECOVERY_TIMES", "a whole number")?.map(|x| x.1).unwrap_or(5),
            ),
            rate_ai_mbps: Some(cfg.rate_mbps("RATE_AI")?.ok_or_else(|| require("RATE_AI"))?),
            rate_hai_mbps: Some(cfg.rate_mbps("RATE_HAI")?.ok_or_else(|| require("RATE_HAI"))?),
            min_rate_mbps: Some(cfg.rate_mbps("MIN_RATE")?.unwrap_or(100.0)),
            rate_reduce_period_us: Some(decrease),
            initial_alpha: Some(1.0),
            clamp_target_rate: Some(cfg.flag("CLAMP_TARGET_RATE")?.map(|x| x.1).unwrap_or(false)),
            cnp_interval_us: Some(alpha.min(decrease)),
        }
    };

    // Simulation: stop time and the link-down fault.
    let stop = cfg.positive_f64("SIMULATOR_STOP_TIME")?.unwrap_or_else(|| {
        notes.push("SIMULATOR_STOP_TIME not given: ns-3's default 3.01 s".into());
        3.01
    });
    let mut faults = Vec::new();
    if let Some(e) = cfg.get("LINK_DOWN") {
        let bad = || {
            ImportError::at(
                cfg_file,
                e.line,
                "LINK_DOWN takes `time_us node_a node_b`",
                "`LINK_DOWN 0 0 0` means no link down",
            )
        };
        if e.values.len() != 3 {
            return Err(bad());
        }
        let at: u64 = e.values[0].parse().map_err(|_| bad())?;
        let a: u32 = e.values[1].parse().map_err(|_| bad())?;
        let b: u32 = e.values[2].parse().map_err(|_| bad())?;
        if at > 1_000_000_000_000 {
            return Err(ImportError::at(
                cfg_file,
                e.line,
                format!("LINK_DOWN at {at} µs is too late"),
                "a time in µs after 2 s",
            ));
        }
        if at > 0 {
            let linked = topo.links.iter().any(|l| (l.0, l.1) == (a, b) || (l.0, l.1) == (b, a));
            if !linked {
                return Err(ImportError::at(
                    cfg_file,
                    e.line,
                    format!("LINK_DOWN names nodes {a} and {b}, which share no link"),
                    "name the two ends of a link in the topology file",
                ));
            }
            faults.push(Fault {
                at_ps: LINK_DOWN_BASE_PS + at * 1_000_000,
                a: index[&a],
                b: index[&b],
                origin: format!("LINK_DOWN {at} {a} {b}: ns-3 takes it down at 2 s + {at} µs"),
            });
        }
    }

    // Keys rocelab reads but models differently, or not at all.
    let mut differs = |key: &str, note: &str, when: &dyn Fn(&str) -> bool| {
        if let Some(e) = cfg.get(key) {
            let v = e.values.join(" ");
            if when(&v) {
                notes.push(format!("{key} {v} (line {}): {note}", e.line));
            }
        }
    };
    let on = |v: &str| v != "0";
    let off = |v: &str| v == "0";
    let any = |_: &str| true;
    differs("RATE_BOUND", "rocelab always paces each QP at its DCQCN rate", &off);
    differs("L2_BACK_TO_ZERO", "rocelab retransmits go-back-N; the same unless packets are lost", &off);
    differs("ACK_HIGH_PRIO", "rocelab's ACKs share the data priority (as with ACK_HIGH_PRIO 0)", &on);
    differs("ERROR_RATE_PER_LINK", "random loss is not modelled", &|v| {
        v.parse::<f64>().map(|x| x > 0.0).unwrap_or(true)
    });
    differs("USE_DYNAMIC_PFC_THRESHOLD", "rocelab keeps the dynamic PFC threshold", &off);
    differs("PAUSE_TIME", "rocelab's pauses carry 65535 quanta, are refreshed and end with an explicit resume", &any);
    differs("L2_CHUNK_SIZE", "no rocelab equivalent", &|v| v != "0");
    differs("DATA_RATE", "not used: link rates come from the topology file (as in ns-3)", &any);
    differs("LINK_DELAY", "not used: link delays come from the topology file (as in ns-3)", &any);
    let ack_interval = match cfg.num::<u32>("L2_ACK_INTERVAL", "a whole number")? {
        Some((line, 0)) => {
            return Err(ImportError::at(cfg_file, line, "L2_ACK_INTERVAL 0", "1 acknowledges every packet"))
        }
        Some((line, v)) => {
            notes.push(format!(
                "L2_ACK_INTERVAL {v} (line {line}) is a run option in rocelab: `rocelab simulate --ack-interval {v}` (the \
                 ns-3 shortcuts pass it)"
            ));
            Some(v)
        }
        None => None,
    };
    let unused_keys: &[&str] = match mode {
        1 => NOT_FOR_DCQCN,
        3 => NOT_FOR_HPCC,
        7 => NOT_FOR_TIMELY,
        _ => NOT_FOR_DCTCP,
    };
    let unused: Vec<&str> = unused_keys.iter().copied().filter(|k| cfg.get(k).is_some()).collect();
    if !unused.is_empty() {
        notes.push(format!("read but unused with CC_MODE {mode}, in ns-3 too: {}", unused.join(", ")));
    }
    let not_produced: Vec<&str> = NOT_PRODUCED.iter().copied().filter(|k| cfg.get(k).is_some()).collect();
    if !not_produced.is_empty() {
        notes.push(format!(
            "no packet trace or queue-length file is written ({}); `rocelab simulate --sample-us` samples buffers",
            not_produced.join(", ")
        ));
    }
    let out_name = |key: &str, dflt: &str| -> Result<String, ImportError> {
        Ok(match cfg.one(key)? {
            Some((_, v)) => Path::new(v).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or(dflt.into()),
            None => dflt.into(),
        })
    };
    let fct_file = out_name("FCT_OUTPUT_FILE", "fct.txt")?;
    let pfc_file = out_name("PFC_OUTPUT_FILE", "pfc.txt")?;

    let transport = ns3_transport(&cfg, &topo, payload)?;

    let scenario = Scenario {
        name: name.to_string(),
        description: format!("imported from HPCC ns-3 input {}", base(cfg_file)),
        sources: vec![cfg_file.to_string(), topo_file.to_string(), flow_file.to_string()],
        nodes,
        links,
        flows: fspecs,
        ns3_switch: Some(Ns3Switch { buffer_bytes, headroom_bytes }),
        mtu: Some(payload),
        dcqcn_on: mode == 1,
        dcqcn,
        transport,
        cc_table,
        header_overhead: Some((
            "ns3",
            "count the 48 B per packet ns-3 counts (plus its INT or timestamp header), not the 82 B of the real wire"
                .to_string(),
        )),
        ecn_by_speed,
        duration_us: Some((stop * 1e12).round() / 1e6),
        seed: 1,
        faults,
        notes,
    };
    Ok(Ns3Import {
        scenario,
        node_ids,
        sports,
        dports,
        payload_bytes: payload,
        ack_interval,
        fct_file,
        pfc_file,
        ns3_outputs: None,
        unknown_keys: unknown,
    })
}

/// The transport as HPCC runs it: no retransmit timeout (NAK recovery only), and the window of
/// HAS_WIN / GLOBAL_T / VAR_WIN, sized as `third.cc` sizes it.
fn ns3_transport(cfg: &Ns3Config, topo: &Topology, payload: u32) -> Result<Transport, ImportError> {
    let mut t = Transport {
        ack_timeout: Some((0, "ns-3 (HPCC) has no retransmit timeout: NAK-driven go-back-N only".into())),
        ..Transport::default()
    };
    let has_win = cfg.flag("HAS_WIN")?.map(|x| x.1).unwrap_or(false);
    if !has_win {
        return Ok(t);
    }
    let global = cfg.flag("GLOBAL_T")?.map(|x| x.1).unwrap_or(false);
    let var = cfg.flag("VAR_WIN")?.map(|x| x.1).unwrap_or(false);
    let bdp = max_bdp_bytes(topo, payload);
    let why = if global {
        "HAS_WIN 1, GLOBAL_T 1: the largest bandwidth-delay product over host pairs (third.cc maxBdp)"
    } else {
        "HAS_WIN 1, GLOBAL_T 0: ns-3 gives each pair its own BDP; rocelab's window is per NIC, so the largest"
    };
    // (0 would mean "no window" to rocelab; one byte still allows one packet at a time.)
    t.window_bytes = Some((bdp.max(1), why.into()));
    t.window_scales_with_rate = Some((var, format!("VAR_WIN {}", var as u8)));
    Ok(t)
}

/// third.cc's window: for each host pair on a shortest path, rtt = 2 · (sum of link delays) +
/// one payload's serialization per hop at that hop's rate, bdp = rtt · (the slowest link on the
/// path) / 8; the largest over all pairs. One BFS per host: fine for ns-3-sized topologies
/// (thousands of hosts), slow beyond.
pub fn max_bdp_bytes(topo: &Topology, payload: u32) -> u64 {
    pair_extremes(topo, payload).0
}

/// third.cc's `maxRtt`: the largest base RTT over host pairs, ps (as `max_bdp_bytes` sizes it).
pub fn max_rtt_ps(topo: &Topology, payload: u32) -> u64 {
    pair_extremes(topo, payload).1
}

/// The largest bandwidth-delay product (bytes) and base RTT (ps) over host pairs.
fn pair_extremes(topo: &Topology, payload: u32) -> (u64, u64) {
    let n = topo.nodes as usize;
    let mut adj: Vec<Vec<(usize, u64, u64)>> = vec![Vec::new(); n];
    for &(a, b, bps, ps, _, _) in &topo.links {
        adj[a as usize].push((b as usize, bps, ps));
        adj[b as usize].push((a as usize, bps, ps));
    }
    let (mut best, mut max_rtt) = (0u64, 0u64);
    let mut dist = vec![u32::MAX; n];
    let mut rtt_ps = vec![0u128; n];
    // The slowest link on the path (third.cc's pairBw).
    let mut bw = vec![u64::MAX; n];
    for src in (0..n).filter(|&i| !topo.is_switch[i]) {
        dist.iter_mut().for_each(|d| *d = u32::MAX);
        dist[src] = 0;
        rtt_ps[src] = 0;
        bw[src] = u64::MAX;
        let mut q = std::collections::VecDeque::from([src]);
        while let Some(u) = q.pop_front() {
            // Hosts do not forward.
            if u != src && !topo.is_switch[u] {
                continue;
            }
            for &(v, bps, ps) in &adj[u] {
                if dist[v] == u32::MAX {
                    dist[v] = dist[u] + 1;
                    let tx_ps = payload as u128 * 8 * 1_000_000_000_000 / bps.max(1) as u128;
                    rtt_ps[v] = rtt_ps[u] + 2 * ps as u128 + tx_ps;
                    bw[v] = bw[u].min(bps);
                    q.push_back(v);
                }
            }
        }
        for dst in (0..n).filter(|&j| j != src && !topo.is_switch[j] && dist[j] != u32::MAX) {
            let bdp = rtt_ps[dst] * bw[dst] as u128 / 8 / 1_000_000_000_000;
            best = best.max(bdp.min(u64::MAX as u128) as u64);
            max_rtt = max_rtt.max(rtt_ps[dst].min(u64::MAX as u128) as u64);
        }
    }
    (best, max_rtt)
}

fn base(path: &str) -> String {
    Path::new(path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.to_string())
}

/// HPCC's host address: 11.x.y.1 with x.y the node id (`node_id_to_ip` in third.cc).
pub fn node_ip(id: u32) -> u32 {
    0x0b00_0001 + (id / 256) * 0x0001_0000 + (id % 256) * 0x0000_0100
}

/// The ideal ("standalone") FCT in ns, computed as ns-3 does: base RTT (two one-way delays plus
/// one payload's serialization per hop) plus all bytes with headers over the bottleneck rate.
/// Headers are rocelab's per-packet wire overhead, as its FCTs include them.
pub fn ideal_fct_ns(m: &Model, src: NodeId, dst: NodeId, size: u64, payload: u32) -> Option<u64> {
    // BFS from src through switches; the first path found is a shortest one.
    let n = m.nodes.len();
    let mut prev: Vec<Option<PortId>> = vec![None; n];
    let mut seen = vec![false; n];
    let mut q = std::collections::VecDeque::new();
    seen[src.idx()] = true;
    q.push_back(src);
    while let Some(u) = q.pop_front() {
        if u == dst {
            break;
        }
        if u != src && m.node(u).is_host() {
            continue;
        }
        for p in m.node(u).ports() {
            let v = m.port(m.port(p).peer).node;
            if !seen[v.idx()] {
                seen[v.idx()] = true;
                prev[v.idx()] = Some(p);
                q.push_back(v);
            }
        }
    }
    if !seen[dst.idx()] {
        return None;
    }
    let (mut delay_ns, mut tx_ns, mut bw) = (0u64, 0u64, u64::MAX);
    let mut v = dst;
    while let Some(p) = prev[v.idx()] {
        let port = m.port(p);
        delay_ns += port.delay.0 / 1000;
        tx_ns += (payload as u128 * 8 * 1_000_000_000 / port.speed.0.max(1) as u128) as u64;
        bw = bw.min(port.speed.0.max(1));
        v = port.node;
    }
    let packets = size.div_ceil(payload as u64);
    let total = size + packets * data_overhead(m);
    Some(2 * delay_ns + tx_ns + (total as u128 * 8_000_000_000 / bw as u128) as u64)
}

/// Bytes the model's run counts around each data payload, without INT (as ns-3's ideal FCT
/// leaves it out): ns-3's 48 B under `header_overhead = "ns3"`, the real wire's 82 B otherwise.
pub fn data_overhead(m: &Model) -> u64 {
    match m.config.simulation.header_overhead.unwrap_or_default() {
        rocelab_model::cc::HeaderOverhead::Ns3 => NS3_DATA_OVERHEAD,
        rocelab_model::cc::HeaderOverhead::Roce => rocelab_sim::packet::DATA_OVERHEAD as u64,
    }
}

/// What HPCC's ns-3 model counts around a data payload (`CustomHeader::GetStaticWholeHeaderSize`
/// without INT): a 14 B link header, IPv4 20, UDP 8, sequence 4, priority group 2.
pub const NS3_DATA_OVERHEAD: u64 = 48;

/// A PFC frame as received (what ns-3's PFC file logs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PfcRecord {
    pub time: SimTime,
    pub port: PortId,
    pub pause: bool,
}

/// ns-3's interface index of each rocelab port: 1 + the rank of its link among the node's links
/// in topology-file order (device 0 is the loopback).
pub fn ifindex(m: &Model, p: PortId) -> u32 {
    let node = m.node(m.port(p).node);
    let link = m.port(p).link.0;
    1 + node.ports().filter(|q| m.port(*q).link.0 < link).count() as u32
}

impl Ns3Import {
    /// ns-3 id of a rocelab node, by name (`h12` -> 12).
    fn ns3_id(&self, m: &Model, n: NodeId) -> u32 {
        let name = &m.node(n).name;
        match self.scenario.node_index(name) {
            Some(i) => self.node_ids[i],
            None => name.trim_start_matches(['h', 's']).parse().unwrap_or(u32::MAX),
        }
    }

    /// The FCT file: one line per completed flow, in completion order, as third.cc writes it.
    /// `done[i]`: when flow i's sender saw its last byte acknowledged (ns-3's QP completion).
    pub fn fct_text(&self, m: &Model, starts: &[SimTime], done: &[Option<SimTime>]) -> String {
        let hosts: Vec<NodeId> = self
            .scenario
            .flows
            .iter()
            .flat_map(|f| [&self.scenario.nodes[f.src].name, &self.scenario.nodes[f.dst].name])
            .map(|n| m.node_by_name(n).unwrap_or(NodeId(0)))
            .collect();
        let mut order: Vec<(u64, usize)> = done
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.map(|t| (t.0, i)))
            .filter(|(_, i)| *i < self.scenario.flows.len() && *i < starts.len())
            .collect();
        order.sort();
        let mut o = String::new();
        for (end, i) in order {
            let f = &self.scenario.flows[i];
            let (s, d) = (hosts[2 * i], hosts[2 * i + 1]);
            let start = starts[i].0;
            let ideal = ideal_fct_ns(m, s, d, f.size_bytes, self.payload_bytes).unwrap_or(0);
            let _ = writeln!(
                o,
                "{:08x} {:08x} {} {} {} {} {} {}",
                node_ip(self.ns3_id(m, s)),
                node_ip(self.ns3_id(m, d)),
                self.sports[i],
                self.dports[i],
                f.size_bytes,
                (start + 500) / 1000,
                (end.saturating_sub(start) + 500) / 1000,
                ideal
            );
        }
        o
    }

    /// The PFC file: `time_ns node node_type ifindex type` per received PFC frame.
    pub fn pfc_text(&self, m: &Model, events: &[PfcRecord]) -> String {
        let mut o = String::new();
        for e in events {
            let node = m.port(e.port).node;
            let _ = writeln!(
                o,
                "{} {} {} {} {}",
                (e.time.0 + 500) / 1000,
                self.ns3_id(m, node),
                u32::from(!m.node(node).is_host()),
                ifindex(m, e.port),
                u32::from(e.pause)
            );
        }
        o
    }
}

/// Imports and writes `out_dir/fabric.toml`; returns the import and the fabric file's path.
pub fn import_and_write(
    config: &Path,
    topology: Option<&Path>,
    flows: Option<&Path>,
    out_dir: &Path,
) -> Result<(Ns3Import, PathBuf), ImportError> {
    let imp = import(config, topology, flows)?;
    std::fs::create_dir_all(out_dir).map_err(|error| ImportError::Io { file: out_dir.display().to_string(), error })?;
    let path = out_dir.join("fabric.toml");
    rocelab_model::atomic::write_atomic(&path, crate::fabric::to_toml(&imp.scenario).as_bytes())
        .map_err(|error| ImportError::Io { file: path.display().to_string(), error })?;
    Ok((imp, path))
}

/// What a run of an imported scenario produced.
pub struct Ns3Run {
    pub report: rocelab_sim::RunReport,
    pub fct: String,
    pub pfc: String,
}

/// Runs an imported scenario on its model and renders the ns-3-style outputs.
pub fn run(
    imp: &Ns3Import,
    m: &Model,
    mut opts: rocelab_sim::SimOptions,
) -> Result<Ns3Run, Vec<rocelab_model::Diagnostic>> {
    if let Some(a) = imp.ack_interval {
        opts.ack_interval = a;
    }
    let mut sim = rocelab_sim::build(m, opts)?;
    let pfc = sim.record_pfc();
    sim.run(&mut |_| {});
    let snap = sim.snapshot();
    let report = rocelab_sim::RunReport::from_snapshot(&snap, m);
    let starts = snap.flow_starts();
    let done = snap.flow_sender_done();
    // HPCC logs a line when a queue pauses and when it resumes; rocelab refreshes a pause
    // before it expires, and a refresh is not a new pause.
    let mut paused: BTreeMap<(PortId, u8), bool> = BTreeMap::new();
    let events: Vec<PfcRecord> = pfc
        .events()
        .iter()
        .filter(|e| paused.insert((e.port, e.priority), e.pause).unwrap_or(false) != e.pause)
        .map(|e| PfcRecord { time: e.time, port: e.port, pause: e.pause })
        .collect();
    Ok(Ns3Run { fct: imp.fct_text(m, &starts, &done), pfc: imp.pfc_text(m, &events), report })
}
