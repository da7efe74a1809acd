//! A Cumulus Linux switch's NVUE configuration as intent: `nv config show -o json`, the
//! YAML `nv config show` prints, `/etc/nvue.d/startup.yaml`, or the NVUE REST API's
//! `?rev=applied` object, all the same tree (`rocelab import nvue`, `doctor --intent`).
//!
//! The file is a list of `- header:` / `- set:` documents (the CLI and startup.yaml) or the
//! bare tree (the REST API). The workspace has no YAML crate, so YAML is read by
//! indentation into the JSON tree ([`yaml_tree`]): block mappings and sequences, quoted
//! scalars, `{}` and `[]`, flow lists of scalars; anything else is an error naming the line.
//!
//! What is read, on top of NVUE's defaults (NVIDIA Cumulus Linux user guide, "RDMA over
//! Converged Ethernet - RoCE" and "Quality of Service"):
//!
//! | NVUE | becomes |
//! |---|---|
//! | `interface.<swpN>.link.speed` (`400G`), `.mtu`, `.state.down` | one host link per port (`speed_gbps`, `mtu`); down ports left out |
//! | `qos.roce` (`enable`, `mode` lossless / lossy / lossless-single-ipool) | the RoCE defaults: DSCP d → switch priority d/8 (DSCP 26 → 3, 48 → 6), SP 3 → TC 3 (RoCE, DWRR 50 %), SP 6 → TC 6 (CNP, strict), others → TC 0 (DWRR 50 %), ECN on TC 0 and 3 (min 150 000 B, max 1 500 000 B, probability 100 %), PFC on SP 3 when lossless |
//! | `qos.mapping.default-global` (`trust` l2 / l3 / both, `dscp.<d>.switch-priority`) | `[qos] trust`, each class's DSCPs |
//! | `qos.egress-queue-mapping.default-global.switch-priority.<sp>.traffic-class` | which class (egress queue) a priority is in |
//! | `qos.pfc.default-global.switch-priority.<sp>` | `lossless` classes and `[qos.pfc] priorities`; `cable-length` → `length_m` |
//! | `qos.egress-scheduler.default-global.traffic-class.<tc>` (`mode` dwrr / strict, `bw-percent`) | `scheduler`, `weight` |
//! | `qos.congestion-control.default-global.traffic-class.<tc>` (`min-threshold`, `max-threshold` in bytes, `probability` in %, `ecn`) | `ecn = { kmin_bytes, kmax_bytes, pmax }` |
//! | `interface.<swpN>.qos.pfc-watchdog`, `qos.pfc-watchdog.polling-interval` | `[qos.pfc_watchdog]` |
//!
//! One class per traffic class: its priority is the PFC priority it carries (else its lowest
//! switch priority), its queue the traffic class. Everything not carried over (other
//! profiles, buffer pools, link pause, RoCE's lossy multi-TC modes) is a note at the top of
//! the file.

use crate::sonic::{fmt_f, node_name, port_key, toml_str};
use crate::ImportError;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// A switch configuration turned into a fabric file.
#[derive(Clone, Debug, PartialEq)]
pub struct NvueImport {
    pub switch: String,
    pub ports: usize,
    pub classes: usize,
    /// What was not carried over exactly, in words.
    pub notes: Vec<String>,
    /// The fabric file (TOML), notes at the top.
    pub toml: String,
}

/// Imports a file; ports whose speed the configuration leaves to autonegotiation get
/// `speed_gbps`.
pub fn import(path: &Path, speed_gbps: f64) -> Result<NvueImport, ImportError> {
    let text = crate::read_text(path)?;
    from_text(&path.display().to_string(), &text, speed_gbps)
}

fn hint() -> &'static str {
    "give the output of `nv config show -o json` (or `nv config show`, or /etc/nvue.d/startup.yaml)"
}

fn bad(file: &str, line: usize, what: impl Into<String>) -> ImportError {
    ImportError::at(file, line, what, hint())
}

/// Whether a switch configuration is NVUE's rather than SONiC's config_db.json (whose
/// tables are upper case: `PORT`, `DEVICE_METADATA`): YAML, a list of documents, or an
/// object with no upper-case table.
pub fn is_nvue(text: &str) -> bool {
    match text.trim_start().chars().next() {
        Some('{') => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => !m.keys().any(|k| k.chars().any(|c| c.is_ascii_uppercase())),
            _ => false,
        },
        Some('[') => true,
        _ => true,
    }
}

/// JSON or YAML, by the first meaningful character.
pub fn from_text(file: &str, text: &str, speed_gbps: f64) -> Result<NvueImport, ImportError> {
    if !(speed_gbps.is_finite() && speed_gbps > 0.0 && speed_gbps <= 10_000.0) {
        return Err(bad(file, 0, format!("link speed {speed_gbps} Gb/s is out of range (0, 10000]")));
    }
    let first = text.trim_start().chars().next();
    let doc: Value = if matches!(first, Some('{') | Some('[')) {
        serde_json::from_str(text).map_err(|e| bad(file, e.line(), format!("not JSON: {e}")))?
    } else {
        yaml_tree(file, text)?
    };
    let mut notes = Vec::new();
    let (tree, header) = config_tree(file, doc, &mut notes)?;
    import_tree(file, &tree, header.as_ref(), speed_gbps, notes)
}

/// The configuration tree of a document: the `set` documents merged in order, or the bare
/// tree; and the `header`.
fn config_tree(file: &str, doc: Value, notes: &mut Vec<String>) -> Result<(Value, Option<Value>), ImportError> {
    let items = match doc {
        Value::Array(v) => v,
        // One `{header, set}` document; the REST API's tree has a `header` too, among its objects.
        Value::Object(m)
            if m.contains_key("set") && m.keys().all(|k| matches!(k.as_str(), "header" | "set" | "unset")) =>
        {
            vec![Value::Object(m)]
        }
        Value::Object(m) => {
            let header = m.get("header").cloned();
            return Ok((Value::Object(m), header));
        }
        _ => return Err(bad(file, 0, "the top level is neither the configuration tree nor a list of `set` documents")),
    };
    let mut tree = Value::Object(Map::new());
    let mut header = None;
    for item in items {
        let Value::Object(m) = item else {
            return Err(bad(file, 0, "a list item that is not a `header:` or `set:` document"));
        };
        for (k, v) in m {
            match k.as_str() {
                "set" => merge(&mut tree, v),
                "header" => header = Some(v),
                "unset" => notes.push("`unset` documents are not applied: the import reads what is set".into()),
                other => notes.push(format!("`{other}` document skipped (only `header` and `set` are read)")),
            }
        }
    }
    Ok((tree, header))
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// The node at `path`, if every step is an object key.
fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.as_object()?.get(*k))
}

/// A scalar as text: NVUE's JSON has numbers where its YAML has plain scalars.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "on" } else { "off" }.into()),
        _ => None,
    }
}

fn text_at(v: &Value, path: &[&str]) -> Option<String> {
    at(v, path).and_then(scalar)
}

fn number(file: &str, what: &str, s: &str) -> Result<u64, ImportError> {
    let t = s.trim();
    let t = t.strip_suffix("ms").unwrap_or(t);
    t.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0 && *x <= 1e15 && x.fract() == 0.0)
        .map(|x| x as u64)
        .ok_or_else(|| bad(file, 0, format!("{what}: `{s}` is not a whole number")))
}

/// Keys of `obj` that are 0..=max numbers, with their values.
fn numbered<'a>(file: &str, what: &str, obj: Option<&'a Value>, max: u8) -> Result<Vec<(u8, &'a Value)>, ImportError> {
    let Some(m) = obj.and_then(Value::as_object) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (k, v) in m {
        match k.trim().parse::<u8>() {
            Ok(n) if n <= max => out.push((n, v)),
            _ => return Err(bad(file, 0, format!("{what} `{k}` is out of range (0-{max})"))),
        }
    }
    Ok(out)
}

/// `swp1-4,swp10` -> swp1..swp4, swp10 (NVUE accepts ranges in interface names).
fn expand(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in name.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let range = part.split_once('-').and_then(|(a, b)| {
            let digits = a.len() - a.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let (prefix, lo) = a.split_at(a.len() - digits);
            let (lo, hi) = (lo.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
            (lo <= hi && hi - lo < 1024).then(|| (lo..=hi).map(|n| format!("{prefix}{n}")).collect::<Vec<_>>())
        });
        match range {
            Some(v) => out.extend(v),
            None => out.push(part.to_string()),
        }
    }
    out
}

#[derive(Clone, Debug)]
struct Port {
    name: String,
    speed_gbps: f64,
    mtu: Option<u64>,
}

#[derive(Clone, Debug)]
struct Class {
    tc: u8,
    priority: u8,
    dscp: Vec<u8>,
    lossless: bool,
    strict: bool,
    weight: u32,
    /// (kmin, kmax, pmax)
    ecn: Option<(u64, u64, f64)>,
}

fn import_tree(
    file: &str,
    tree: &Value,
    header: Option<&Value>,
    speed_gbps: f64,
    mut notes: Vec<String>,
) -> Result<NvueImport, ImportError> {
    if !tree.is_object() {
        return Err(bad(file, 0, "the configuration is not an object"));
    }
    let version = header.and_then(|h| text_at(h, &["version"]));
    let switch = text_at(tree, &["system", "hostname"]).map(|h| node_name(&h)).unwrap_or_else(|| "cumulus".into());

    // Ports: swp interfaces.
    let mut ports: Vec<Port> = Vec::new();
    let mut down = Vec::new();
    let mut auto = Vec::new();
    let mut watchdog_ports = 0usize;
    if let Some(ifs) = at(tree, &["interface"]).and_then(Value::as_object) {
        for (key, e) in ifs {
            let kind = text_at(e, &["type"]);
            if !(kind.as_deref() == Some("swp") || (kind.is_none() && key.starts_with("swp"))) {
                continue;
            }
            for name in expand(key) {
                if at(e, &["link", "state", "down"]).is_some() {
                    down.push(name);
                    continue;
                }
                let speed = match text_at(e, &["link", "speed"]).as_deref() {
                    None | Some("auto") => {
                        auto.push(name.clone());
                        speed_gbps
                    }
                    Some(s) => parse_speed(s)
                        .ok_or_else(|| bad(file, 0, format!("interface {name} link speed `{s}` is not like 400G")))?,
                };
                let mtu = text_at(e, &["link", "mtu"])
                    .map(|m| number(file, &format!("interface {name} mtu"), &m))
                    .transpose()?;
                if at(e, &["qos", "pfc-watchdog"]).is_some_and(|w| text_at(w, &[]).as_deref() != Some("off")) {
                    watchdog_ports += 1;
                }
                ports.push(Port { name, speed_gbps: speed, mtu });
            }
        }
    }
    if !down.is_empty() {
        notes.push(format!("{} port(s) with link state down left out: {}", down.len(), down.join(", ")));
    }
    if !auto.is_empty() {
        notes.push(format!(
            "{} port(s) without a fixed link speed (autonegotiated) at {} Gb/s (--speed-gbps): {}",
            auto.len(),
            fmt_f(speed_gbps),
            auto.join(", ")
        ));
    }
    if ports.is_empty() {
        // A configuration that sets no swp port (they run on defaults) still has its QoS.
        notes.push(format!(
            "no swp interface is configured: two ports at {} Gb/s (--speed-gbps) carry the QoS so it can be linted",
            fmt_f(speed_gbps)
        ));
        for n in ["swp1", "swp2"] {
            ports.push(Port { name: n.into(), speed_gbps, mtu: None });
        }
    }
    ports.sort_by_key(|p| port_key(&p.name));
    ports.dedup_by(|a, b| a.name == b.name);

    // RoCE and the defaults it brings.
    let qos = at(tree, &["qos"]).cloned().unwrap_or(Value::Null);
    let roce = at(&qos, &["roce"]);
    let roce_on = roce.is_some_and(|r| text_at(r, &["enable"]).as_deref() != Some("off"));
    let mode = roce.and_then(|r| text_at(r, &["mode"])).unwrap_or_else(|| "lossless".into());
    if roce_on && !matches!(mode.as_str(), "lossless" | "lossy" | "lossless-single-ipool") {
        notes.push(format!("RoCE mode `{mode}` is imported as lossy RoCE (its multi-TC remarking is not modelled)"));
    }
    if mode == "lossless-single-ipool" && roce_on {
        notes.push("RoCE mode lossless-single-ipool: lossy and lossless share one ingress pool on the switch; rocelab models the buffer per its switch model".into());
    }
    let lossless_roce = roce_on && matches!(mode.as_str(), "lossless" | "lossless-single-ipool");

    // Switch priority of each DSCP and traffic class of each switch priority.
    let mut dscp_sp: [u8; 64] = std::array::from_fn(|d| (d / 8) as u8);
    let mut sp_tc: [u8; 8] = if roce_on { [0, 0, 0, 3, 0, 0, 6, 0] } else { std::array::from_fn(|p| p as u8) };
    let mut trust = if roce_on { "dscp" } else { "pcp" };
    let mapping = at(&qos, &["mapping", "default-global"]);
    if let Some(t) = mapping.and_then(|m| text_at(m, &["trust"])) {
        trust = match t.as_str() {
            "l2" => "pcp",
            "l3" => "dscp",
            "both" => {
                notes.push("trust both (PCP and DSCP): imported as DSCP trust".into());
                "dscp"
            }
            other => return Err(bad(file, 0, format!("qos mapping trust `{other}` is not l2, l3 or both"))),
        };
    }
    for (d, v) in numbered(file, "qos mapping dscp", mapping.and_then(|m| at(m, &["dscp"])), 63)? {
        let sp =
            text_at(v, &["switch-priority"]).map(|s| number(file, &format!("qos mapping dscp {d}"), &s)).transpose()?;
        match sp {
            Some(sp) if sp < 8 => dscp_sp[d as usize] = sp as u8,
            Some(sp) => {
                return Err(bad(file, 0, format!("qos mapping dscp {d}: switch-priority {sp} is out of range (0-7)")))
            }
            None => {}
        }
    }
    let eqm = at(&qos, &["egress-queue-mapping", "default-global", "switch-priority"]);
    for (sp, v) in numbered(file, "egress-queue-mapping switch-priority", eqm, 7)? {
        if let Some(tc) = text_at(v, &["traffic-class"]) {
            let tc = number(file, &format!("egress-queue-mapping switch-priority {sp}"), &tc)?;
            if tc > 7 {
                return Err(bad(
                    file,
                    0,
                    format!("egress-queue-mapping switch-priority {sp}: traffic-class {tc} is out of range (0-7)"),
                ));
            }
            sp_tc[sp as usize] = tc as u8;
        }
    }

    // PFC: the default-global profile's priorities, else RoCE lossless's priority 3.
    let pfc_profile = at(&qos, &["pfc", "default-global"]);
    let explicit_pfc: BTreeSet<u8> =
        numbered(file, "qos pfc switch-priority", pfc_profile.and_then(|p| at(p, &["switch-priority"])), 7)?
            .into_iter()
            .map(|(p, _)| p)
            .collect();
    let pfc: BTreeSet<u8> = if !explicit_pfc.is_empty() {
        explicit_pfc
    } else if lossless_roce {
        [3u8].into_iter().collect()
    } else {
        BTreeSet::new()
    };
    let cable_m = pfc_profile
        .and_then(|p| text_at(p, &["cable-length"]))
        .map(|c| number(file, "qos pfc cable-length", &c))
        .transpose()?;

    // Schedulers and ECN per traffic class, defaults first.
    let mut sched: BTreeMap<u8, (bool, u32)> = BTreeMap::new();
    let mut ecn: BTreeMap<u8, (u64, u64, f64)> = BTreeMap::new();
    if roce_on {
        sched.insert(0, (false, 50));
        sched.insert(3, (false, 50));
        sched.insert(6, (true, 0));
        for tc in [0u8, 3] {
            ecn.insert(tc, (150_000, 1_500_000, 1.0));
        }
    }
    let es = at(&qos, &["egress-scheduler", "default-global", "traffic-class"]);
    for (tc, v) in numbered(file, "egress-scheduler traffic-class", es, 7)? {
        let strict = match text_at(v, &["mode"]).as_deref() {
            Some("strict") => true,
            Some("dwrr") | None => false,
            Some(other) => {
                notes.push(format!("egress-scheduler traffic-class {tc}: mode `{other}` is not modelled; DWRR used"));
                false
            }
        };
        let w = text_at(v, &["bw-percent"])
            .map(|b| number(file, &format!("egress-scheduler traffic-class {tc} bw-percent"), &b))
            .transpose()?;
        sched.insert(tc, (strict, w.map(|w| w.min(100) as u32).unwrap_or(1)));
    }
    let cc = at(&qos, &["congestion-control", "default-global", "traffic-class"]);
    for (tc, v) in numbered(file, "congestion-control traffic-class", cc, 7)? {
        let g = |k: &str| {
            text_at(v, &[k])
                .map(|s| number(file, &format!("congestion-control traffic-class {tc} {k}"), &s))
                .transpose()
        };
        let (kmin, kmax, prob) = (g("min-threshold")?, g("max-threshold")?, g("probability")?);
        if text_at(v, &["ecn"]).as_deref() == Some("disable") {
            ecn.remove(&tc);
            if text_at(v, &["red"]).as_deref() == Some("enable") {
                notes.push(format!("traffic class {tc}: RED drops without ECN; rocelab models WRED only as ECN marking, so it gets no ECN"));
            }
            continue;
        }
        let base = ecn.get(&tc).copied().unwrap_or((150_000, 1_500_000, 1.0));
        let (kmin, kmax, p) =
            (kmin.unwrap_or(base.0), kmax.unwrap_or(base.1), prob.map(|p| p as f64 / 100.0).unwrap_or(base.2));
        if kmin > kmax || !(p > 0.0 && p <= 1.0) {
            return Err(bad(file, 0, format!("congestion-control traffic-class {tc}: min-threshold {kmin} B, max-threshold {kmax} B, probability {} % is not a marking ramp", fmt_f(p * 100.0))));
        }
        ecn.insert(tc, (kmin, kmax, p));
    }

    // Classes: one per traffic class that a switch priority maps to.
    let mut classes: BTreeMap<u8, Class> = BTreeMap::new();
    for sp in 0u8..8 {
        let tc = sp_tc[sp as usize];
        let c = classes.entry(tc).or_insert_with(|| Class {
            tc,
            priority: sp,
            dscp: Vec::new(),
            lossless: false,
            strict: false,
            weight: 1,
            ecn: None,
        });
        if pfc.contains(&sp) && !c.lossless {
            c.priority = sp;
            c.lossless = true;
        }
    }
    for c in classes.values_mut() {
        let sps: Vec<u8> = (0u8..8).filter(|sp| sp_tc[*sp as usize] == c.tc).collect();
        c.dscp = (0u8..64).filter(|d| sps.contains(&dscp_sp[*d as usize])).collect();
        if let Some(&(strict, w)) = sched.get(&c.tc) {
            c.strict = strict;
            c.weight = w.max(1);
        }
        c.ecn = ecn.get(&c.tc).copied();
        let others: Vec<String> = sps.iter().filter(|p| **p != c.priority).map(|p| p.to_string()).collect();
        if !others.is_empty() {
            notes.push(format!(
                "switch priorities {} share traffic class {} with priority {}: one class on priority {}",
                others.join(","),
                c.tc,
                c.priority,
                c.priority
            ));
        }
        let both: Vec<u8> = sps.iter().copied().filter(|p| pfc.contains(p) && *p != c.priority).collect();
        if !both.is_empty() {
            return Err(bad(
                file,
                0,
                format!(
                    "PFC priorities {:?} and {} share traffic class {}: rocelab gives a lossless class one priority",
                    both, c.priority, c.tc
                ),
            ));
        }
    }
    classes.retain(|_, c| !c.dscp.is_empty() || c.lossless);
    // RoCE is DSCP 26's class, CNPs DSCP 48's (NVUE's `roce` and `cnp` code points).
    let class_of = |d: u8| sp_tc[dscp_sp[d as usize] as usize];
    let (rdma_tc, cnp_tc) = (class_of(26), class_of(48));
    if rdma_tc == cnp_tc {
        return Err(ImportError::at(
            file,
            0,
            format!("DSCP 26 (RoCE) and DSCP 48 (CNP) land in the same traffic class {rdma_tc}"),
            "map them to different switch priorities and traffic classes (`nv set qos roce` does)",
        ));
    }
    for p in &pfc {
        if !classes.values().any(|c| c.lossless && c.priority == *p) {
            notes.push(format!("PFC on switch priority {p}, which no DSCP maps to: no class carries it"));
        }
    }

    // Everything else, named.
    if let Some(m) = at(&qos, &["traffic-pool"]).and_then(Value::as_object) {
        let pools: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{k} {}%", text_at(v, &["memory-percent"]).unwrap_or_else(|| "?".into())))
            .collect();
        notes.push(format!(
            "traffic pools ({}) are not imported: the switch model's buffer and α's apply",
            pools.join(", ")
        ));
    }
    if at(&qos, &["link-pause"]).and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
        notes.push("qos link-pause (802.3x) is set: rocelab models PFC only".into());
    }
    for table in ["mapping", "pfc", "egress-queue-mapping", "egress-scheduler", "congestion-control"] {
        if let Some(m) = at(&qos, &[table]).and_then(Value::as_object) {
            let other: Vec<&String> = m.keys().filter(|k| *k != "default-global").collect();
            if !other.is_empty() {
                let o: Vec<&str> = other.iter().map(|s| s.as_str()).collect();
                notes.push(format!(
                    "qos {table} profile(s) {} (per-interface) not imported: default-global is",
                    o.join(", ")
                ));
            }
        }
    }
    let poll_ms = text_at(&qos, &["pfc-watchdog", "polling-interval"])
        .map(|p| number(file, "qos pfc-watchdog polling-interval", &p))
        .transpose()?;

    // Render.
    let mut t = String::new();
    let from = match &version {
        Some(v) => format!("NVUE configuration, {v}"),
        None => "NVUE configuration".to_string(),
    };
    let _ = writeln!(t, "# Imported from {file} by `rocelab import nvue` ({from}).");
    let _ = writeln!(t, "# One switch ({switch}) and one host per port, so the switch's QoS can be linted,");
    let _ = writeln!(t, "# simulated and compared with hosts (`rocelab doctor --intent`).");
    for n in &notes {
        let _ = writeln!(t, "# note: {n}");
    }
    let _ = writeln!(
        t,
        "\n[fabric]\nname = \"nvue-{switch}\"\ndescription = \"Cumulus Linux NVUE configuration from {}\"",
        toml_str(file)
    );
    let _ = writeln!(t, "\n[switch_models.spectrum]\npreset = \"spectrum-3\"");
    if ports.len() > 64 {
        let _ = writeln!(t, "ports = {}", ports.len());
    }
    let _ = writeln!(t, "\n[[topology.explicit.node]]\nname = \"{switch}\"\nkind = \"switch\"\nmodel = \"spectrum\"");
    for p in &ports {
        let _ = writeln!(t, "\n[[topology.explicit.node]]\nname = \"host-{}\"\nkind = \"host\"", node_name(&p.name));
    }
    for p in &ports {
        let _ = write!(
            t,
            "\n[[topology.explicit.link]]   # interface {}\na = \"host-{}\"\nb = \"{switch}\"\nspeed_gbps = {}",
            p.name,
            node_name(&p.name),
            fmt_f(p.speed_gbps)
        );
        if let Some(m) = p.mtu {
            let _ = write!(t, "\nmtu = {m}");
        }
        if let Some(l) = cable_m {
            let _ = write!(t, "\nlength_m = {l}   # qos pfc cable-length");
        }
        t.push('\n');
    }
    let _ = writeln!(t, "\n[qos]\ntrust = \"{trust}\"\ncnp_class = \"cnp\"");
    for c in classes.values() {
        let name = if c.tc == cnp_tc {
            "cnp".to_string()
        } else if c.tc == rdma_tc {
            "roce".to_string()
        } else {
            format!("tc{}", c.tc)
        };
        let dscp: Vec<String> = c.dscp.iter().map(|d| d.to_string()).collect();
        let _ = writeln!(t, "\n[[qos.class]]   # traffic class {}", c.tc);
        let _ =
            writeln!(t, "name = \"{name}\"\ndscp = [{}]\npriority = {}\nqueue = {}", dscp.join(", "), c.priority, c.tc);
        if c.lossless {
            let _ = writeln!(t, "lossless = true   # PFC on switch priority {}", c.priority);
        }
        if c.strict {
            let _ = writeln!(t, "scheduler = \"strict\"");
        } else {
            let _ = writeln!(t, "scheduler = \"dwrr\"\nweight = {}   # bw-percent", c.weight);
        }
        let carries = match () {
            _ if c.tc == cnp_tc => "[\"cnp\"]",
            _ if c.tc == rdma_tc => "[\"rdma\"]",
            _ => "[]",
        };
        let _ = writeln!(t, "carries = {carries}");
        if let Some((kmin, kmax, pmax)) = c.ecn {
            let _ = writeln!(
                t,
                "ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {} }}   # congestion-control",
                fmt_f(pmax)
            );
        }
    }
    let pr: Vec<String> = pfc.iter().map(|p| p.to_string()).collect();
    let _ = writeln!(t, "\n[qos.pfc]\npriorities = [{}]", pr.join(", "));
    if watchdog_ports > 0 {
        let _ = writeln!(
            t,
            "\n[qos.pfc_watchdog]   # interface qos pfc-watchdog on {watchdog_ports} port(s)\nenabled = true"
        );
        if let Some(p) = poll_ms {
            let _ = writeln!(t, "poll_ms = {p}   # qos pfc-watchdog polling-interval");
        }
    } else {
        let _ = writeln!(t, "\n[qos.pfc_watchdog]   # no interface has qos pfc-watchdog\nenabled = false");
    }
    Ok(NvueImport { switch, ports: ports.len(), classes: classes.len(), notes, toml: t })
}

/// `400G` -> 400, `25G` -> 25, `100M` -> 0.1.
fn parse_speed(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len()));
    let v: f64 = num.parse().ok().filter(|v: &f64| v.is_finite() && *v > 0.0)?;
    let g = match unit.trim().to_ascii_uppercase().as_str() {
        "G" | "GB" | "GBPS" | "" => v,
        "M" | "MB" | "MBPS" => v / 1000.0,
        "T" => v * 1000.0,
        _ => return None,
    };
    (g <= 10_000.0).then_some(g)
}

/// One meaningful YAML line.
struct Line {
    n: usize,
    indent: usize,
    text: String,
}

/// The YAML subset NVUE writes, as the JSON tree it describes. Scalars that read as numbers
/// become numbers (as in NVUE's JSON); `on`/`off` stay strings.
pub fn yaml_tree(file: &str, text: &str) -> Result<Value, ImportError> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let body = crate::containerlab::strip_comment(raw);
        let trimmed = body.trim();
        if trimmed.is_empty() || trimmed == "---" || trimmed == "..." {
            continue;
        }
        let indent = body.len() - body.trim_start_matches(' ').len();
        if body[indent..].starts_with('\t') {
            return Err(bad(file, i + 1, "a tab in the indentation (YAML allows spaces only)"));
        }
        lines.push(Line { n: i + 1, indent, text: body.trim().to_string() });
    }
    if lines.is_empty() {
        return Err(bad(file, 0, "empty: no configuration"));
    }
    let mut i = 0;
    let indent = lines[0].indent;
    let v = block(file, &mut lines, &mut i, indent, 0)?;
    if let Some(l) = lines.get(i) {
        return Err(bad(file, l.n, format!("unexpected indentation at `{}`", excerpt(&l.text))));
    }
    Ok(v)
}

fn excerpt(s: &str) -> String {
    let mut e: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        e.push('…');
    }
    e
}

/// Nesting deeper than any configuration is a malformed (or hostile) file.
const MAX_DEPTH: usize = 64;

fn block(file: &str, lines: &mut [Line], i: &mut usize, indent: usize, depth: usize) -> Result<Value, ImportError> {
    if depth > MAX_DEPTH {
        return Err(bad(file, lines[*i].n, "nested deeper than any NVUE configuration"));
    }
    if lines[*i].text == "-" || lines[*i].text.starts_with("- ") {
        let mut items = Vec::new();
        while *i < lines.len()
            && lines[*i].indent == indent
            && (lines[*i].text == "-" || lines[*i].text.starts_with("- "))
        {
            let rest = lines[*i].text[1..].trim_start().to_string();
            if rest.is_empty() {
                *i += 1;
                match lines.get(*i) {
                    Some(l) if l.indent > indent => {
                        let ind = l.indent;
                        items.push(block(file, lines, i, ind, depth + 1)?);
                    }
                    _ => items.push(Value::Null),
                }
            } else if rest.contains(": ") || rest.ends_with(':') {
                // `- key: value`: a mapping whose further keys sit under `key`.
                let offset = lines[*i].text.len() - rest.len();
                lines[*i].indent = indent + offset;
                lines[*i].text = rest;
                let ind = lines[*i].indent;
                items.push(block(file, lines, i, ind, depth + 1)?);
            } else {
                items.push(yaml_scalar(file, lines[*i].n, &rest)?);
                *i += 1;
            }
        }
        return Ok(Value::Array(items));
    }
    let mut map = Map::new();
    while *i < lines.len() && lines[*i].indent == indent {
        let (n, text) = (lines[*i].n, lines[*i].text.clone());
        if text.starts_with("- ") || text == "-" {
            return Err(bad(file, n, "a list item among mapping keys"));
        }
        let (key, rest) = split_key(&text)
            .ok_or_else(|| bad(file, n, format!("expected `key: value`, found `{}`", excerpt(&text))))?;
        if map.contains_key(&key) {
            return Err(bad(file, n, format!("`{key}` appears twice in one mapping")));
        }
        *i += 1;
        let value = if !rest.is_empty() {
            yaml_scalar(file, n, &rest)?
        } else {
            match lines.get(*i) {
                Some(l) if l.indent > indent => {
                    let ind = l.indent;
                    block(file, lines, i, ind, depth + 1)?
                }
                // YAML allows a list at the key's own indentation.
                Some(l) if l.indent == indent && (l.text.starts_with("- ") || l.text == "-") => {
                    block(file, lines, i, indent, depth + 1)?
                }
                _ => Value::Null,
            }
        };
        map.insert(key, value);
    }
    Ok(Value::Object(map))
}

/// `key: rest` with a plain or quoted key (`'::1/128': {}`).
fn split_key(text: &str) -> Option<(String, String)> {
    let (key, rest) = if let Some(q) = text.strip_prefix('\'').or_else(|| text.strip_prefix('"')) {
        let quote = text.chars().next()?;
        let end = q.find(quote)?;
        let rest = q[end + 1..].trim_start().strip_prefix(':')?;
        (q[..end].to_string(), rest)
    } else {
        let k = text.find(": ").or_else(|| text.strip_suffix(':').map(|k| k.len()))?;
        (text[..k].trim().to_string(), text[k + 1..].trim_start_matches(':'))
    };
    (!key.is_empty()).then(|| (key, rest.trim().to_string()))
}

fn yaml_scalar(file: &str, n: usize, s: &str) -> Result<Value, ImportError> {
    let s = s.trim();
    if s == "{}" {
        return Ok(Value::Object(Map::new()));
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let items: Result<Vec<Value>, ImportError> =
            inner.split(',').map(str::trim).filter(|x| !x.is_empty()).map(|x| yaml_scalar(file, n, x)).collect();
        return items.map(Value::Array);
    }
    if s.starts_with('{') || s.starts_with('&') || s.starts_with('*') || s.starts_with('|') || s.starts_with('>') {
        return Err(bad(file, n, format!("`{}`: flow mappings, anchors and block scalars are not read", excerpt(s))));
    }
    let quoted = (s.starts_with('\'') && s.ends_with('\'') || s.starts_with('"') && s.ends_with('"')) && s.len() >= 2;
    if quoted {
        return Ok(Value::String(crate::containerlab::unquote(s).to_string()));
    }
    if let Ok(i) = s.parse::<i64>() {
        return Ok(Value::from(i));
    }
    if let Some(f) = s.parse::<f64>().ok().filter(|f| f.is_finite() && s.contains('.')) {
        return Ok(Value::from(f));
    }
    Ok(Value::String(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_json_give_one_tree() {
        let y = "- header:\n    rev-id: 1.0\n- set:\n    interface:\n      swp1:\n        link:\n          mtu: 9216\n          state:\n            up: {}\n        type: swp\n    qos:\n      roce:\n        enable: 'on'\n      list: [a, 'b']\n";
        let j = r#"[{"header": {"rev-id": 1.0}}, {"set": {"interface": {"swp1": {"link": {"mtu": 9216, "state": {"up": {}}}, "type": "swp"}}, "qos": {"roce": {"enable": "on"}, "list": ["a", "b"]}}}]"#;
        assert_eq!(yaml_tree("t.yaml", y).unwrap(), serde_json::from_str::<Value>(j).unwrap());
    }

    #[test]
    fn ranges_speeds_and_bad_yaml() {
        assert_eq!(expand("swp1-3,swp10"), ["swp1", "swp2", "swp3", "swp10"]);
        assert_eq!(expand("swp1s0"), ["swp1s0"]);
        assert_eq!((parse_speed("400G"), parse_speed("100M"), parse_speed("fast")), (Some(400.0), Some(0.1), None));
        for (y, line) in [
            ("a:\n\tb: 1\n", 2),
            ("a: 1\na: 2\n", 2),
            ("a:\n  b: 1\n   c: 2\n", 3),
            ("a: {b: 1}\n", 1),
            ("a:\n  - x\n  y: 1\n", 3),
        ] {
            let e = yaml_tree("t.yaml", y).unwrap_err().to_string();
            assert!(e.contains(&format!("t.yaml:{line}:")), "{y:?}: {e}");
        }
        let deep: String = (0..100).map(|k| format!("{}k{k}:\n", " ".repeat(k))).collect();
        assert!(yaml_tree("t.yaml", &deep).is_err());
    }
}
