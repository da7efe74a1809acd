//! A SONiC switch's `config_db.json` as intent: the QoS, buffer and PFC settings an operator
//! already has, written as a rocelab fabric file (`rocelab import sonic`, `doctor --intent`).
//!
//! Tables read (layouts as SONiC's `sonic-config-engine` renders them, e.g. its
//! `tests/sample_output/py3/qos-*.json` and `buffers-*.json`; table references may be bare
//! names or `[TABLE|name]`):
//!
//! | table | becomes |
//! |---|---|
//! | `PORT` (`speed` in Mb/s, `mtu`, `admin_status`) + `CABLE_LENGTH` | one host link per port (`speed_gbps`, `mtu`, `length_m`) on an explicit one-switch topology |
//! | `DSCP_TO_TC_MAP` (the one `PORT_QOS_MAP` names) | one `[[qos.class]]` per traffic class, with its DSCPs; priority = TC |
//! | `TC_TO_QUEUE_MAP` | the class's `queue` |
//! | `PORT_QOS_MAP.pfc_enable` | `lossless` classes and `[qos.pfc] priorities` |
//! | `QUEUE` → `SCHEDULER` (`STRICT`, `DWRR`/`WRR` + `weight`) | `scheduler`, `weight` |
//! | `QUEUE` → `WRED_PROFILE` (`green_min/max_threshold` in bytes, `green_drop_probability` in %, `ecn`) | `ecn = { kmin_bytes, kmax_bytes, pmax }` |
//! | `BUFFER_POOL`, `BUFFER_PROFILE` (`dynamic_th`: α = 2^dynamic_th), `BUFFER_PG` (`xoff` of a lossless PG profile) | `[switch_models.sonic]` buffer and α's; `[qos.pfc] headroom_bytes` |
//! | `PFC_WD` (`detection_time`, `restoration_time` in ms, `action`; `GLOBAL.POLL_INTERVAL`) | `[qos.pfc_watchdog]` |
//!
//! rocelab has one class set per fabric; when ports differ (maps, `pfc_enable`, schedulers),
//! the setting most ports have is imported and a note names the others. Everything not
//! carried over is a note too, written at the top of the file.

use crate::ImportError;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// A switch configuration turned into a fabric file.
#[derive(Clone, Debug, PartialEq)]
pub struct SonicImport {
    pub switch: String,
    pub ports: usize,
    pub classes: usize,
    /// What was not carried over exactly, in words.
    pub notes: Vec<String>,
    /// The fabric file (TOML), notes at the top.
    pub toml: String,
}

pub fn import(path: &Path) -> Result<SonicImport, ImportError> {
    let text = crate::read_text(path)?;
    from_json(&path.display().to_string(), &text)
}

#[derive(Clone, Debug)]
struct Port {
    name: String,
    speed_mbps: u64,
    mtu: Option<u32>,
    length_m: Option<f64>,
}

#[derive(Clone, Debug, Default)]
struct Class {
    tc: u8,
    dscp: Vec<u8>,
    queue: u8,
    lossless: bool,
    strict: bool,
    weight: Option<u32>,
    /// (kmin, kmax, pmax, profile name)
    ecn: Option<(u64, u64, f64, String)>,
}

/// A queue's (scheduler, WRED profile) names on one port.
type QueueSetting = (Option<String>, Option<String>);
/// α and the `dynamic_th` it came from.
type Alpha = (f64, i32);

fn bad(file: &str, what: impl Into<String>) -> ImportError {
    ImportError::at(file, 0, what, "check the table against SONiC's config_db schema (sonic-yang-models)")
}

/// `[DSCP_TO_TC_MAP|AZURE]` or `AZURE` -> `AZURE`.
fn reference(v: &str) -> &str {
    let v = v.trim();
    match v.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        Some(inner) => inner.split_once('|').map(|(_, n)| n).unwrap_or(inner),
        None => v,
    }
}

fn table<'a>(root: &'a Map<String, Value>, name: &str) -> Option<&'a Map<String, Value>> {
    root.get(name).and_then(Value::as_object)
}

fn field<'a>(entry: &'a Value, key: &str) -> Option<&'a str> {
    entry.get(key).and_then(Value::as_str)
}

fn num<T: std::str::FromStr>(file: &str, at: &str, s: &str) -> Result<T, ImportError> {
    s.trim().parse().map_err(|_| bad(file, format!("{at}: `{s}` is not a number")))
}

/// `Ethernet4` < `Ethernet12`: by prefix, then by the number at the end.
pub(crate) fn port_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = name.split_at(name.len() - digits);
    (head.to_string(), tail.parse().unwrap_or(0), name.to_string())
}

/// A name rocelab accepts for a node: letters, digits, `-`, `_`, `.`.
pub(crate) fn node_name(s: &str) -> String {
    let n: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' }).collect();
    if n.is_empty() {
        "sonic".into()
    } else {
        n
    }
}

/// The value most entries have (ties: the smallest), and the others with their counts.
fn majority<T: Ord + Clone>(values: &[T]) -> Option<(T, Vec<(T, usize)>)> {
    let mut count: BTreeMap<T, usize> = BTreeMap::new();
    for v in values {
        *count.entry(v.clone()).or_default() += 1;
    }
    let best = count.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?.0.clone();
    let others = count.into_iter().filter(|(k, _)| *k != best).collect();
    Some((best, others))
}

/// `QUEUE` keys: `Ethernet4|3`, `Ethernet0,Ethernet4|0-2`.
fn queue_entries(q: &Map<String, Value>) -> Vec<(Vec<String>, Vec<u8>, &Value)> {
    let mut out = Vec::new();
    for (k, v) in q {
        let Some((ports, queues)) = k.split_once('|') else { continue };
        let ports: Vec<String> = ports.split(',').map(|p| p.trim().to_string()).collect();
        let qs: Vec<u8> = match queues.split_once('-') {
            Some((a, b)) => match (a.trim().parse::<u8>(), b.trim().parse::<u8>()) {
                (Ok(a), Ok(b)) if a <= b && b < 8 => (a..=b).collect(),
                _ => continue,
            },
            None => match queues.trim().parse::<u8>() {
                Ok(q) if q < 8 => vec![q],
                _ => continue,
            },
        };
        out.push((ports, qs, v));
    }
    out
}

pub fn from_json(file: &str, text: &str) -> Result<SonicImport, ImportError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        ImportError::at(
            file,
            e.line(),
            format!("not JSON: {e}"),
            "give SONiC's config_db.json (`show runningconfiguration all` prints it)",
        )
    })?;
    let Some(root) = root.as_object() else {
        return Err(bad(file, "the top level is not an object of tables"));
    };
    let mut notes: Vec<String> = Vec::new();
    let switch = table(root, "DEVICE_METADATA")
        .and_then(|m| m.get("localhost"))
        .and_then(|l| field(l, "hostname"))
        .map(node_name)
        .unwrap_or_else(|| "sonic".into());
    if let Some(sku) = table(root, "DEVICE_METADATA").and_then(|m| m.get("localhost")).and_then(|l| field(l, "hwsku")) {
        notes.push(format!("hwsku `{sku}`: the ASIC's buffer size and cell are not in config_db; the switch model starts from the spectrum-3 preset"));
    }

    // Ports: PORT (speeds), else the ports PORT_QOS_MAP configures.
    let cable: BTreeMap<String, f64> = table(root, "CABLE_LENGTH")
        .and_then(|t| t.values().next())
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(p, v)| Some((p.clone(), v.as_str()?.trim().trim_end_matches('m').parse::<f64>().ok()?)))
                .collect()
        })
        .unwrap_or_default();
    let mut ports: Vec<Port> = Vec::new();
    match table(root, "PORT") {
        Some(pt) => {
            let mut down = Vec::new();
            for (name, e) in pt {
                if field(e, "admin_status") == Some("down") {
                    down.push(name.clone());
                    continue;
                }
                let Some(speed) = field(e, "speed") else {
                    return Err(bad(file, format!("PORT|{name} has no `speed`")));
                };
                let speed_mbps: u64 = num(file, &format!("PORT|{name} speed"), speed)?;
                if speed_mbps == 0 || speed_mbps > 10_000_000 {
                    return Err(bad(file, format!("PORT|{name} speed {speed_mbps} Mb/s is out of range")));
                }
                let mtu = field(e, "mtu").map(|m| num::<u32>(file, &format!("PORT|{name} mtu"), m)).transpose()?;
                ports.push(Port { name: name.clone(), speed_mbps, mtu, length_m: cable.get(name).copied() });
            }
            if !down.is_empty() {
                notes.push(format!("{} port(s) with admin_status down left out: {}", down.len(), down.join(", ")));
            }
        }
        None => {
            let names: Vec<&String> =
                table(root, "PORT_QOS_MAP").map(|t| t.keys().filter(|k| *k != "global").collect()).unwrap_or_default();
            if names.is_empty() {
                return Err(bad(file, "no PORT table and no port in PORT_QOS_MAP: nothing to build a fabric on"));
            }
            notes.push(format!("no PORT table: {} port(s) from PORT_QOS_MAP at an assumed 100 Gb/s; give the full config_db.json for real speeds", names.len()));
            for n in names {
                ports.push(Port { name: n.clone(), speed_mbps: 100_000, mtu: None, length_m: cable.get(n).copied() });
            }
        }
    }
    ports.sort_by_key(|p| port_key(&p.name));
    if ports.is_empty() {
        return Err(bad(file, "no port is up: nothing to build a fabric on"));
    }

    // Which maps and PFC priorities the ports use.
    let pqm = table(root, "PORT_QOS_MAP");
    let port_setting = |key: &str| -> Vec<String> {
        ports
            .iter()
            .filter_map(|p| {
                pqm.and_then(|t| t.get(&p.name).or_else(|| t.get("global")))
                    .and_then(|e| field(e, key))
                    .map(|v| reference(v).to_string())
            })
            .collect()
    };
    let pick = |key: &str, what: &str, notes: &mut Vec<String>| -> Option<String> {
        let (best, others) = majority(&port_setting(key))?;
        if !others.is_empty() {
            let o: Vec<String> = others.iter().map(|(v, n)| format!("`{v}` on {n} port(s)")).collect();
            notes.push(format!("ports differ in {what}: `{best}` (most ports) is imported; also {}", o.join(", ")));
        }
        Some(best)
    };
    let dscp_map_name = pick("dscp_to_tc_map", "dscp_to_tc_map", &mut notes).or_else(|| {
        table(root, "DSCP_TO_TC_MAP").and_then(|t| (t.len() == 1).then(|| t.keys().next().cloned()).flatten())
    });
    let dscp_to_tc: BTreeMap<u8, u8> = match &dscp_map_name {
        Some(n) => {
            let m = table(root, "DSCP_TO_TC_MAP")
                .and_then(|t| t.get(n))
                .and_then(Value::as_object)
                .ok_or_else(|| bad(file, format!("PORT_QOS_MAP names DSCP_TO_TC_MAP|{n}, which is not defined")))?;
            let mut out = BTreeMap::new();
            for (d, tc) in m {
                let d: u8 = num(file, &format!("DSCP_TO_TC_MAP|{n} key"), d)?;
                let tc: u8 = num(file, &format!("DSCP_TO_TC_MAP|{n}|{d}"), tc.as_str().unwrap_or(""))?;
                if d > 63 || tc > 7 {
                    return Err(bad(
                        file,
                        format!("DSCP_TO_TC_MAP|{n}: {d} -> {tc} is out of range (DSCP 0-63, TC 0-7)"),
                    ));
                }
                out.insert(d, tc);
            }
            out
        }
        None => {
            notes.push("no DSCP_TO_TC_MAP: rocelab's default classes are used".into());
            BTreeMap::new()
        }
    };
    let tc_to_queue: BTreeMap<u8, u8> = pick("tc_to_queue_map", "tc_to_queue_map", &mut notes)
        .and_then(|n| table(root, "TC_TO_QUEUE_MAP").and_then(|t| t.get(&n)).and_then(Value::as_object).cloned())
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<u8>().ok()?, v.as_str()?.parse::<u8>().ok()?)))
                .filter(|(t, q)| *t < 8 && *q < 8)
                .collect()
        })
        .unwrap_or_default();
    let pfc: BTreeSet<u8> = match pick("pfc_enable", "pfc_enable", &mut notes) {
        Some(list) => {
            let mut s = BTreeSet::new();
            for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let p: u8 = num(file, "PORT_QOS_MAP pfc_enable", p)?;
                if p > 7 {
                    return Err(bad(file, format!("PORT_QOS_MAP pfc_enable: priority {p} is out of range (0-7)")));
                }
                s.insert(p);
            }
            s
        }
        None => BTreeSet::new(),
    };

    // Classes: one per TC the DSCP map uses, or that PFC names.
    let mut classes: BTreeMap<u8, Class> = BTreeMap::new();
    for (d, tc) in &dscp_to_tc {
        classes.entry(*tc).or_insert_with(|| Class { tc: *tc, ..Default::default() }).dscp.push(*d);
    }
    if !dscp_to_tc.is_empty() {
        for p in &pfc {
            classes.entry(*p).or_insert_with(|| Class { tc: *p, ..Default::default() });
        }
    }
    for c in classes.values_mut() {
        c.queue = tc_to_queue.get(&c.tc).copied().unwrap_or(c.tc);
        c.lossless = pfc.contains(&c.tc);
    }
    // Schedulers and WRED of each queue, per port; the most common per queue.
    if let Some(qt) = table(root, "QUEUE") {
        let sched = table(root, "SCHEDULER");
        let wred = table(root, "WRED_PROFILE");
        let port_names: BTreeSet<&str> = ports.iter().map(|p| p.name.as_str()).collect();
        // queue -> (scheduler, WRED profile) of every port.
        let mut per_queue: BTreeMap<u8, Vec<QueueSetting>> = BTreeMap::new();
        for (qports, qs, v) in queue_entries(qt) {
            for p in &qports {
                if !port_names.contains(p.as_str()) {
                    continue;
                }
                for q in &qs {
                    per_queue.entry(*q).or_default().push((
                        field(v, "scheduler").map(|s| reference(s).to_string()),
                        field(v, "wred_profile").map(|s| reference(s).to_string()),
                    ));
                }
            }
        }
        for c in classes.values_mut() {
            let Some(list) = per_queue.get(&c.queue) else { continue };
            let Some(((s, w), others)) = majority(list) else { continue };
            if !others.is_empty() {
                notes.push(format!("queue {}: ports differ in scheduler/WRED; the most common is imported", c.queue));
            }
            if let Some(s) = s {
                let e = sched
                    .and_then(|t| t.get(&s))
                    .ok_or_else(|| bad(file, format!("QUEUE names SCHEDULER|{s}, which is not defined")))?;
                match field(e, "type").map(str::to_ascii_uppercase).as_deref() {
                    Some("STRICT") => c.strict = true,
                    Some("DWRR") | Some("WRR") | None => {
                        c.weight = field(e, "weight")
                            .map(|w| num::<u32>(file, &format!("SCHEDULER|{s} weight"), w))
                            .transpose()?;
                    }
                    Some(other) => notes.push(format!("SCHEDULER|{s}: type {other} is not modelled; DWRR used")),
                }
            }
            if let Some(w) = w {
                let e = wred
                    .and_then(|t| t.get(&w))
                    .ok_or_else(|| bad(file, format!("QUEUE names WRED_PROFILE|{w}, which is not defined")))?;
                let ecn = field(e, "ecn").unwrap_or("ecn_none");
                if ecn == "ecn_none" {
                    notes.push(format!("WRED_PROFILE|{w} drops (ecn_none) and marks nothing: rocelab models WRED only as ECN marking, so queue {} gets no ECN", c.queue));
                } else {
                    let g = |k: &str| {
                        field(e, k).map(|v| num::<u64>(file, &format!("WRED_PROFILE|{w} {k}"), v)).transpose()
                    };
                    let (kmin, kmax, prob) =
                        (g("green_min_threshold")?, g("green_max_threshold")?, g("green_drop_probability")?);
                    match (kmin, kmax, prob) {
                        (Some(kmin), Some(kmax), Some(p)) if kmin <= kmax && p > 0 && p <= 100 => {
                            c.ecn = Some((kmin, kmax, p as f64 / 100.0, w.clone()));
                        }
                        _ => notes.push(format!("WRED_PROFILE|{w}: green thresholds or probability missing or out of range; no ECN imported")),
                    }
                }
            }
        }
    }
    // The CNP class: DSCP 48 (NVIDIA's and SONiC's CNP code point), else the highest strict class.
    let cnp_tc = dscp_to_tc
        .get(&48)
        .copied()
        .filter(|tc| !pfc.contains(tc))
        .or_else(|| classes.values().filter(|c| c.strict && !c.lossless).map(|c| c.tc).max());
    // The added CNP class needs a queue and a priority of its own: a queue shared with an
    // imported DWRR class would give one queue two schedulers, which the loader refuses.
    let free = |used: &dyn Fn(u8) -> bool| [6u8, 7, 5, 4, 3, 2, 1, 0].into_iter().find(|&q| !used(q));
    let cnp_slot =
        free(&|q| classes.values().any(|c| c.queue == q)).zip(free(&|p| classes.values().any(|c| c.tc == p)));
    if !classes.is_empty() && cnp_tc.is_none() {
        let Some((q, p)) = cnp_slot else {
            return Err(ImportError::at(
                file,
                0,
                "no class for CNPs (DSCP 48 unmapped and no strict lossy class) and no free egress queue or priority to add one",
                "map DSCP 48 to a strict-priority traffic class of its own in DSCP_TO_TC_MAP and SCHEDULER",
            ));
        };
        notes.push(format!("no class for CNPs (DSCP 48 unmapped and no strict lossy class): rocelab's `cnp` class is added on priority {p}, queue {q}, DSCP 48"));
    }
    let rdma_tc = classes.values().find(|c| c.lossless).map(|c| c.tc);

    // Buffers.
    let pools = table(root, "BUFFER_POOL");
    let profiles = table(root, "BUFFER_PROFILE");
    let buffer_bytes = pools
        .and_then(|t| t.iter().filter_map(|(_, v)| field(v, "size")?.parse::<u64>().ok()).max().filter(|b| *b > 0));
    if let Some(x) = pools.and_then(|t| t.get("ingress_lossless_pool")).and_then(|p| field(p, "xoff")) {
        notes.push(format!("ingress_lossless_pool has a shared headroom pool (xoff {x} B): rocelab reserves headroom per port and priority instead"));
    }
    // SAI encodes α as 2^dynamic_th; Spectrum allows 1/128 to 64 (dynamic_th -7..6), and
    // SONiC's profiles use up to 7. Anything else is not a setting but a typo.
    let alpha = |name: &str| -> Option<Alpha> {
        let th: i32 = profiles?.get(name).and_then(|p| field(p, "dynamic_th"))?.trim().parse().ok()?;
        (-8..=8).contains(&th).then(|| (2f64.powi(th), th))
    };
    // (key, (α, dynamic_th), profile)
    let alphas: Vec<(&str, Option<Alpha>, &str)> = vec![
        ("ingress_lossless_alpha", alpha("ingress_lossless_profile"), "ingress_lossless_profile"),
        ("ingress_lossy_alpha", alpha("ingress_lossy_profile"), "ingress_lossy_profile"),
        ("egress_lossless_alpha", alpha("egress_lossless_profile"), "egress_lossless_profile"),
        (
            "egress_lossy_alpha",
            alpha("q_lossy_profile").or(alpha("egress_lossy_profile")),
            if alpha("q_lossy_profile").is_some() { "q_lossy_profile" } else { "egress_lossy_profile" },
        ),
    ];
    // Headroom of the lossless priority groups (static profiles; the dynamic model computes it).
    let mut headroom: Vec<u64> = Vec::new();
    if let (Some(pg), Some(pr)) = (table(root, "BUFFER_PG"), profiles) {
        for (k, v) in pg {
            let Some(name) = field(v, "profile").map(reference) else { continue };
            if let Some(x) = pr.get(name).and_then(|p| field(p, "xoff")).and_then(|x| x.parse::<u64>().ok()) {
                if k.split_once('|').is_some() {
                    headroom.push(x);
                }
            }
        }
    }
    let headroom_bytes = match majority(&headroom) {
        Some((h, others)) => {
            if !others.is_empty() {
                notes
                    .push(format!("lossless priority groups have different headroom (xoff); {h} B (most) is imported"));
            }
            Some(h)
        }
        None => None,
    };

    // PFC watchdog.
    let wd = table(root, "PFC_WD");
    let wd_ports: Vec<&Value> =
        wd.map(|t| t.iter().filter(|(k, _)| *k != "GLOBAL").map(|(_, v)| v).collect()).unwrap_or_default();
    let poll_ms = wd
        .and_then(|t| t.get("GLOBAL"))
        .and_then(|g| field(g, "POLL_INTERVAL"))
        .map(|p| num::<u64>(file, "PFC_WD|GLOBAL POLL_INTERVAL", p))
        .transpose()?;
    let wd_field = |k: &str| -> Option<String> {
        majority(&wd_ports.iter().filter_map(|v| field(v, k).map(str::to_string)).collect::<Vec<_>>()).map(|(b, _)| b)
    };
    let wd_action = wd_field("action");
    if let Some(a) = wd_action.as_deref().filter(|a| !matches!(*a, "drop" | "forward" | "alert")) {
        notes.push(format!("PFC_WD action `{a}` is not modelled; rocelab's default (drop) is used"));
    }

    // Render.
    let mut t = String::new();
    let _ = writeln!(t, "# Imported from {file} by `rocelab import sonic` (SONiC config_db.json).");
    let _ = writeln!(t, "# One switch ({switch}) and one host per port, so the switch's QoS can be linted,");
    let _ = writeln!(t, "# simulated and compared with hosts (`rocelab doctor --intent`).");
    for n in &notes {
        let _ = writeln!(t, "# note: {n}");
    }
    let _ = writeln!(
        t,
        "\n[fabric]\nname = \"sonic-{switch}\"\ndescription = \"SONiC config_db.json from {}\"",
        toml_str(file)
    );
    let _ = writeln!(t, "\n[switch_models.sonic]\npreset = \"spectrum-3\"");
    if ports.len() > 64 {
        let _ = writeln!(t, "ports = {}", ports.len());
    }
    if let Some(b) = buffer_bytes {
        let _ = writeln!(t, "buffer_bytes = {b}   # the largest BUFFER_POOL size");
    }
    for (key, a, profile) in &alphas {
        if let Some((a, th)) = a {
            let _ = writeln!(t, "{key} = {a}   # BUFFER_PROFILE|{profile} dynamic_th = {th}");
        }
    }
    let _ = writeln!(t, "\n[[topology.explicit.node]]\nname = \"{switch}\"\nkind = \"switch\"\nmodel = \"sonic\"");
    for p in &ports {
        let _ = writeln!(t, "\n[[topology.explicit.node]]\nname = \"host-{}\"\nkind = \"host\"", node_name(&p.name));
    }
    for p in &ports {
        let _ = write!(
            t,
            "\n[[topology.explicit.link]]   # PORT|{}\na = \"host-{}\"\nb = \"{switch}\"\nspeed_gbps = {}",
            p.name,
            node_name(&p.name),
            fmt_f(p.speed_mbps as f64 / 1000.0)
        );
        if let Some(m) = p.mtu {
            let _ = write!(t, "\nmtu = {m}");
        }
        if let Some(l) = p.length_m {
            let _ = write!(t, "\nlength_m = {}   # CABLE_LENGTH", fmt_f(l));
        }
        t.push('\n');
    }
    if !classes.is_empty() {
        let _ = writeln!(t, "\n[qos]\ntrust = \"dscp\"\ncnp_class = \"cnp\"");
        for c in classes.values() {
            let name = if Some(c.tc) == cnp_tc {
                "cnp".to_string()
            } else if c.lossless {
                format!("lossless{}", c.tc)
            } else {
                format!("tc{}", c.tc)
            };
            let dscp: Vec<String> = c.dscp.iter().map(|d| d.to_string()).collect();
            let _ = writeln!(t, "\n[[qos.class]]   # TC {}", c.tc);
            let _ = writeln!(
                t,
                "name = \"{name}\"\ndscp = [{}]\npriority = {}\nqueue = {}",
                dscp.join(", "),
                c.tc,
                c.queue
            );
            if c.lossless {
                let _ = writeln!(t, "lossless = true   # pfc_enable");
            }
            if c.strict {
                let _ = writeln!(t, "scheduler = \"strict\"");
            } else {
                let _ = writeln!(t, "scheduler = \"dwrr\"\nweight = {}", c.weight.unwrap_or(1).max(1));
            }
            let carries = if Some(c.tc) == cnp_tc {
                "[\"cnp\"]"
            } else if Some(c.tc) == rdma_tc {
                "[\"rdma\"]"
            } else {
                "[]"
            };
            let _ = writeln!(t, "carries = {carries}");
            if let Some((kmin, kmax, pmax, w)) = &c.ecn {
                let _ = writeln!(
                    t,
                    "ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {} }}   # WRED_PROFILE|{w}",
                    fmt_f(*pmax)
                );
            }
        }
        if cnp_tc.is_none() {
            let (q, p) = cnp_slot.unwrap_or((6, 6));
            let _ = writeln!(t, "\n[[qos.class]]   # not in the config: rocelab's CNP class\nname = \"cnp\"\ndscp = [48]\npriority = {p}\nqueue = {q}\nscheduler = \"strict\"\ncarries = [\"cnp\"]");
        }
        let pr: Vec<String> = pfc.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(t, "\n[qos.pfc]\npriorities = [{}]   # pfc_enable", pr.join(", "));
        if let Some(h) = headroom_bytes {
            let _ = writeln!(t, "headroom_bytes = {h}   # BUFFER_PROFILE xoff of the lossless priority groups");
        }
    }
    if wd.is_some() && !wd_ports.is_empty() {
        let _ = writeln!(t, "\n[qos.pfc_watchdog]   # PFC_WD\nenabled = true");
        for (k, key) in [("detection_time", "detection_ms"), ("restoration_time", "restoration_ms")] {
            if let Some(v) = wd_field(k) {
                let v: u64 = num(file, &format!("PFC_WD {k}"), &v)?;
                let _ = writeln!(t, "{key} = {v}");
            }
        }
        if let Some(p) = poll_ms {
            let _ = writeln!(t, "poll_ms = {p}");
        }
        if let Some(a) = wd_action.filter(|a| matches!(a.as_str(), "drop" | "forward" | "alert")) {
            let _ = writeln!(t, "action = \"{a}\"");
        }
    } else {
        let _ = writeln!(t, "\n[qos.pfc_watchdog]   # no PFC_WD entry for any port\nenabled = false");
    }
    Ok(SonicImport { switch, ports: ports.len(), classes: classes.len(), notes, toml: t })
}

pub(crate) fn fmt_f(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

pub(crate) fn toml_str(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_port_order() {
        assert_eq!(reference("[DSCP_TO_TC_MAP|AZURE]"), "AZURE");
        assert_eq!(reference("AZURE"), "AZURE");
        let mut v = vec!["Ethernet12", "Ethernet4", "Ethernet100"];
        v.sort_by_key(|p| port_key(p));
        assert_eq!(v, vec!["Ethernet4", "Ethernet12", "Ethernet100"]);
        assert_eq!(majority(&[1, 2, 2, 3]).unwrap().0, 2);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for text in [
            "",
            "[]",
            "{\"PORT\": {\"Ethernet0\": {}}}",
            "{\"PORT\": {\"Ethernet0\": {\"speed\": \"x\"}}}",
            "{\"DSCP_TO_TC_MAP\": {\"A\": {\"99\": \"1\"}}, \"PORT\": {\"E0\": {\"speed\": \"100000\"}}}",
        ] {
            assert!(from_json("t.json", text).is_err(), "{text}");
        }
    }
}
