//! Run intent, resolved at load: the `[[traffic]]`, `[[fault]]` and `[[workload]]` tables.
//!
//! These tables say what to run on the fabric. They used to be checked only by whatever ran
//! them, so `rocelab lint` accepted a file whose traffic named an unknown host and `simulate`
//! refused it afterwards. Here every reference is resolved (host and switch names to ids, class
//! names to indices, link ends to ports) and every size, count and time is bounded when the
//! file loads, so every verb refuses the same file with the same located error. The engines
//! keep their own checks as a second line of defence; the limits below are theirs.
//!
//! ```text
//! Config.traffic  --resolve_traffic--> Vec<Traffic>   (hosts, class, QPs, start; flow count)
//! Config.fault    --resolve_faults---> Vec<Fault>     (node, link ports, times)
//! Config.workload --resolve_workloads-> Vec<Workload> (collective or step, sweep, counts)
//! ```
//! `[[scenario]]` tables are resolved by `rocelab-scenario` (its kinds own their parameters).

use crate::config::{FaultKind, HashField, TrafficPattern, WorkloadConfig};
use crate::diag::Diagnostic;
use crate::events::RebootMode;
use crate::model::{glob_match, Model, NodeId, PortId};
use crate::units::{BitsPerSec, SimTime};

/// The largest message or flow the engines take: 1 TB (a QP's packets are numbered with 32-bit
/// PSNs; 1 TB keeps every QP well inside that at any MTU, and is far beyond any collective).
pub const MAX_MESSAGE_BYTES: u64 = 1_000_000_000_000;
/// The latest a traffic table may start: 10⁹ µs (about 17 minutes of simulated time).
pub const MAX_TRAFFIC_START_US: f64 = 1e9;
/// Times in a fault table stay below 10¹² µs (11.6 days), inside the engines' picosecond clock.
pub const MAX_FAULT_TIME_US: f64 = 1e12;
/// Queue pairs per `[[traffic]]` flow.
pub const MAX_QPS_PER_FLOW: u32 = 1024;
/// Queue pairs all `[[traffic]]` tables may open together: an all-to-all grows as N², and ten
/// million QPs already take gigabytes of engine state.
pub const MAX_TRAFFIC_QPS: u64 = 10_000_000;
/// Down/up cycles of one `link-flap`.
pub const MAX_FLAP_COUNT: u32 = 100_000;
/// NCCL channels of one workload: the twin's tags hold 8 bits of channel (NCCL uses at most 64).
pub const MAX_CHANNELS: u32 = 256;
/// QPs per connection: NCCL's `NCCL_IB_MAX_QPS` (src/transport/net_ib.cc).
pub const MAX_QPS_PER_CONNECTION: u32 = 128;
/// The collectives the twin runs, as nccl-tests names them (its `*_perf` binaries).
pub const COLLECTIVES: [&str; 6] = ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"];

/// The resolved run intent of a fabric file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Intent {
    pub traffic: Vec<Traffic>,
    pub faults: Vec<Fault>,
    pub workloads: Vec<Workload>,
    /// The `[[job]]` tables (`crate::jobs`).
    pub jobs: Vec<crate::jobs::Job>,
}

/// One `[[traffic]]` table, its names resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Traffic {
    pub pattern: TrafficPattern,
    /// `flow`: the sender.
    pub src: Option<NodeId>,
    /// `flow` and `incast`: the receiver.
    pub dst: Option<NodeId>,
    /// `incast`: the senders (the receiver left out, `senders` applied); `permutation` and
    /// `all-to-all`: the hosts taking part. Empty for `flow`.
    pub hosts: Vec<NodeId>,
    pub size_bytes: u64,
    pub start: SimTime,
    /// Switch-side class index.
    pub class: usize,
    pub qps: u32,
}

impl Traffic {
    /// Flows the table expands to.
    pub fn flows(&self) -> u64 {
        let n = self.hosts.len() as u64;
        match self.pattern {
            TrafficPattern::Flow => 1,
            TrafficPattern::Incast | TrafficPattern::Permutation => n,
            TrafficPattern::AllToAll => n * n.saturating_sub(1),
        }
    }
}

/// One `[[fault]]` table, its names resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    pub at: SimTime,
    /// The host or switch `a` names; `None` for `a = "*"` (every switch).
    pub node: Option<NodeId>,
    /// Link faults and route changes: the link's two ports, `a`'s side first.
    pub link: Option<(PortId, PortId)>,
    /// `switch-reboot`: how long it is down.
    pub duration: Option<SimTime>,
    /// `link-flap`: the cycle's period and count.
    pub period: Option<SimTime>,
    pub count: u32,
    /// `ecmp-reseed`.
    pub seed: Option<u64>,
    /// `ecmp-hash-fields`.
    pub fields: Vec<HashField>,
    /// `switch-reboot`: cold or warm (its `duration` is then the data-plane outage).
    pub mode: Option<RebootMode>,
    /// `switch-reboot`, cold: how long after the ports return the routes are advertised.
    pub routes_after: SimTime,
    /// `host-stall` with `drain_gbps`: the rate the host still drains at; `None`: a full stall.
    pub drain: Option<BitsPerSec>,
    /// `nic-reset`: the NIC profile (index into `Model::nics`) it comes back with, if new.
    pub profile: Option<usize>,
}

/// What a `[[workload]]` runs.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadRun {
    /// A collective (nccl-tests' name) over the sizes `min_bytes`, `min_bytes · step_factor`,
    /// … up to `max_bytes`.
    Collective { op: &'static str, min_bytes: u64, max_bytes: u64, step_factor: u64 },
    /// A training step: `"plan"` (this file's `[plan]`) or a plan file's path.
    Step { plan: String },
    /// Inference serving: the plan and the `[serve]` keys.
    Serve(crate::serving::ServeTable),
}

/// One `[[workload]]` table, checked. Values left out stay `None` (the run's flags decide).
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Its name in the outputs and its output directory (`workload<i>` when left out).
    pub name: String,
    pub run: WorkloadRun,
    pub nodes: Option<u32>,
    pub channels: Option<u32>,
    pub qps_per_connection: Option<u32>,
    pub chunk_bytes: Option<u64>,
    pub root: Option<u32>,
}

/// Resolves the three tables of `m.config`; every problem is pushed to `errs`.
pub(crate) fn resolve(m: &Model, errs: &mut Vec<Diagnostic>) -> Intent {
    let mut intent = Intent {
        traffic: resolve_traffic(m, errs),
        faults: resolve_faults(m, errs),
        workloads: resolve_workloads(m, errs),
        ..Default::default()
    };
    intent.jobs = crate::jobs::resolve(m, errs);
    intent
}

fn host_named(m: &Model, name: &str, path: String) -> Result<NodeId, Diagnostic> {
    match m.node_by_name(name) {
        Some(id) if m.node(id).is_host() => Ok(id),
        Some(_) => Err(Diagnostic::new(
            path,
            format!("`{name}` is a switch, not a host"),
            "traffic runs between hosts (NICs); `rocelab topo --format json` lists them",
        )),
        None => Err(unknown_node(m, name, path, true)),
    }
}

/// "no host named `x`", with the nearest name when there is one.
fn unknown_node(m: &Model, name: &str, path: String, hosts_only: bool) -> Diagnostic {
    let names: Vec<String> = m.nodes.iter().filter(|n| !hosts_only || n.is_host()).map(|n| n.name.clone()).collect();
    let what = if hosts_only { "host" } else { "node" };
    Diagnostic::new(
        path,
        format!("no {what} named `{name}`"),
        match crate::topology::closest(name, names.iter()) {
            Some(n) => format!("did you mean `{n}`? `rocelab topo --format json` lists the {what}s"),
            None => format!("`rocelab topo --format json` lists the {what}s"),
        },
    )
}

fn host_set(m: &Model, pats: &Option<Vec<String>>, path: &str) -> Result<Vec<NodeId>, Diagnostic> {
    let all = m.hosts();
    match pats {
        None => Ok(all.collect()),
        Some(ps) => {
            let v: Vec<NodeId> = all.filter(|h| ps.iter().any(|p| glob_match(p, &m.node(*h).name))).collect();
            if v.is_empty() {
                Err(Diagnostic::new(
                    format!("{path}.hosts"),
                    format!("the patterns {ps:?} match no host"),
                    "patterns use `*` and `?`, e.g. \"node1*-nic0\"; `rocelab topo --format json` lists the hosts",
                ))
            } else {
                Ok(v)
            }
        }
    }
}

fn resolve_traffic(m: &Model, errs: &mut Vec<Diagnostic>) -> Vec<Traffic> {
    let mut out = Vec::new();
    let mut qps_total = 0u64;
    for (i, t) in m.config.traffic.iter().enumerate() {
        let p = format!("traffic[{i}]");
        match traffic_table(m, t, &p) {
            Ok(r) => {
                qps_total = qps_total.saturating_add(r.flows().saturating_mul(r.qps as u64));
                if qps_total > MAX_TRAFFIC_QPS {
                    errs.push(Diagnostic::new(
                        p.clone(),
                        format!(
                            "the traffic tables up to this one open {qps_total} queue pairs (flows x qps), more than the {MAX_TRAFFIC_QPS} rocelab simulates at once"
                        ),
                        "narrow `hosts` (an all-to-all of N hosts is N(N-1) flows), use fewer `qps`, or run the load as a `[[scenario]]` or `[[workload]]`",
                    ));
                    // One error says it; the tables after this one would repeat it.
                    qps_total = 0;
                }
                out.push(r);
            }
            Err(d) => errs.push(d),
        }
    }
    out
}

/// One `[[traffic]]` table (at key path `p`) resolved against `m`: the loader's check, and the
/// engine's, which expands tables built in code (the scenarios') through it too.
pub fn traffic_table(m: &Model, t: &crate::config::TrafficConfig, p: &str) -> Result<Traffic, Diagnostic> {
    if t.size_bytes == 0 {
        return Err(Diagnostic::new(format!("{p}.size_bytes"), "a flow of 0 bytes", "give the message size in bytes"));
    }
    if t.size_bytes > MAX_MESSAGE_BYTES {
        return Err(Diagnostic::new(
            format!("{p}.size_bytes"),
            format!("a flow of {} bytes is more than the 1 TB (10^12 B) the engine takes", t.size_bytes),
            "split it into several flows, or shorten the run with duration_us and a smaller size",
        ));
    }
    let start_us = t.start_us.unwrap_or(0.0);
    if !(start_us.is_finite() && (0.0..MAX_TRAFFIC_START_US).contains(&start_us)) {
        return Err(Diagnostic::new(
            format!("{p}.start_us"),
            format!("start time {start_us} µs is not a time from 0 up to 10^9 µs"),
            "use a time >= 0 in µs, e.g. start_us = 100",
        ));
    }
    let class = match &t.class {
        None => m.qos.rdma_class(),
        Some(c) => m.qos.class_by_name(c).ok_or_else(|| {
            let names: Vec<&str> = m.qos.classes.iter().map(|c| c.name.as_str()).collect();
            Diagnostic::new(
                format!("{p}.class"),
                format!("no traffic class `{c}`"),
                format!("use one of: {}", names.join(", ")),
            )
        })?,
    };
    let qps = t.qps.unwrap_or(1);
    if qps == 0 || qps > MAX_QPS_PER_FLOW {
        return Err(Diagnostic::new(
            format!("{p}.qps"),
            format!("{qps} queue pairs per flow"),
            format!("use 1 to {MAX_QPS_PER_FLOW}"),
        ));
    }
    // A key the pattern does not read would be silently ignored: say so instead.
    let stray: [(&str, bool, &[TrafficPattern]); 4] = [
        ("src", t.src.is_some(), &[TrafficPattern::Flow]),
        ("dst", t.dst.is_some(), &[TrafficPattern::Flow, TrafficPattern::Incast]),
        ("hosts", t.hosts.is_some(), &[TrafficPattern::Incast, TrafficPattern::Permutation, TrafficPattern::AllToAll]),
        ("senders", t.senders.is_some(), &[TrafficPattern::Incast]),
    ];
    if let Some((key, _, used_by)) = stray.iter().find(|(_, set, used_by)| *set && !used_by.contains(&t.pattern)) {
        let users: Vec<&str> = used_by.iter().map(|u| pattern_name(*u)).collect();
        return Err(Diagnostic::new(
            format!("{p}.{key}"),
            format!(
                "`{key}` does not apply to pattern `{}`: only {} read it",
                pattern_name(t.pattern),
                users.join(" and ")
            ),
            "remove it, or use the pattern that reads it (docs/fabric-file.md, [[traffic]])",
        ));
    }
    let need = |v: &Option<String>, f: &str| {
        v.clone().ok_or_else(|| {
            Diagnostic::new(
                format!("{p}.{f}"),
                format!("pattern `{}` needs `{f}`", pattern_name(t.pattern)),
                format!("add `{f} = \"HOST\"`"),
            )
        })
    };
    let mut r = Traffic {
        pattern: t.pattern,
        src: None,
        dst: None,
        hosts: Vec::new(),
        size_bytes: t.size_bytes,
        start: SimTime::from_secs_f64(start_us * 1e-6),
        class,
        qps,
    };
    match t.pattern {
        TrafficPattern::Flow => {
            let s = host_named(m, &need(&t.src, "src")?, format!("{p}.src"))?;
            let d = host_named(m, &need(&t.dst, "dst")?, format!("{p}.dst"))?;
            if s == d {
                return Err(Diagnostic::new(
                    format!("{p}.dst"),
                    "a flow from a host to itself",
                    "pick another destination",
                ));
            }
            (r.src, r.dst) = (Some(s), Some(d));
        }
        TrafficPattern::Incast => {
            let d = host_named(m, &need(&t.dst, "dst")?, format!("{p}.dst"))?;
            let mut senders: Vec<NodeId> = host_set(m, &t.hosts, p)?.into_iter().filter(|h| *h != d).collect();
            if let Some(n) = t.senders {
                if n == 0 || n as usize > senders.len() {
                    return Err(Diagnostic::new(
                        format!("{p}.senders"),
                        format!("incast of {n} senders, but only {} hosts besides the receiver", senders.len()),
                        format!("use 1 to {}", senders.len()),
                    ));
                }
                senders.truncate(n as usize);
            }
            if senders.is_empty() {
                return Err(Diagnostic::new(
                    format!("{p}.hosts"),
                    "an incast with no sender: the hosts are only the receiver",
                    "widen `hosts`",
                ));
            }
            (r.dst, r.hosts) = (Some(d), senders);
        }
        TrafficPattern::Permutation | TrafficPattern::AllToAll => {
            let hosts = host_set(m, &t.hosts, p)?;
            if hosts.len() < 2 {
                return Err(Diagnostic::new(
                    format!("{p}.hosts"),
                    format!("{} needs at least 2 hosts, `hosts` selects {}", pattern_name(t.pattern), hosts.len()),
                    "widen `hosts`",
                ));
            }
            r.hosts = hosts;
        }
    }
    Ok(r)
}

fn pattern_name(p: TrafficPattern) -> &'static str {
    match p {
        TrafficPattern::Flow => "flow",
        TrafficPattern::Incast => "incast",
        TrafficPattern::Permutation => "permutation",
        TrafficPattern::AllToAll => "all-to-all",
    }
}

fn fault_name(k: FaultKind) -> &'static str {
    match k {
        FaultKind::LinkDown => "link-down",
        FaultKind::LinkUp => "link-up",
        FaultKind::HostStall => "host-stall",
        FaultKind::HostResume => "host-resume",
        FaultKind::SwitchReboot => "switch-reboot",
        FaultKind::LinkFlap => "link-flap",
        FaultKind::EcmpReseed => "ecmp-reseed",
        FaultKind::EcmpHashFields => "ecmp-hash-fields",
        FaultKind::RouteWithdraw => "route-withdraw",
        FaultKind::RouteRestore => "route-restore",
        FaultKind::NicReset => "nic-reset",
        FaultKind::EcmpMemberRemove => "ecmp-member-remove",
        FaultKind::EcmpMemberAdd => "ecmp-member-add",
    }
}

fn resolve_faults(m: &Model, errs: &mut Vec<Diagnostic>) -> Vec<Fault> {
    let mut out = Vec::new();
    for (i, f) in m.config.fault.iter().enumerate() {
        match fault_one(m, f, &format!("fault[{i}]")) {
            Ok(r) => out.push(r),
            Err(d) => errs.push(d),
        }
    }
    out
}

/// A time in µs from a fault table: finite, below 10¹² µs, positive (or 0 when `zero_ok`).
fn fault_time(p: &str, key: &str, v: Option<f64>, zero_ok: bool, kind: FaultKind) -> Result<SimTime, Diagnostic> {
    match v {
        Some(x) if x.is_finite() && (x > 0.0 || zero_ok && x == 0.0) && x < MAX_FAULT_TIME_US => {
            Ok(SimTime::from_secs_f64(x * 1e-6))
        }
        Some(x) => Err(Diagnostic::new(
            format!("{p}.{key}"),
            format!(
                "{key} = {x} is not a valid time: {} 10^12 µs",
                if zero_ok { "from 0 up to" } else { "above 0 and below" }
            ),
            "a time in µs, e.g. 100",
        )),
        None => Err(Diagnostic::new(
            format!("{p}.{key}"),
            format!("a `{}` fault needs `{key}`", fault_name(kind)),
            format!("add `{key} = ...` (µs)"),
        )),
    }
}

fn fault_one(m: &Model, f: &crate::config::FaultConfig, p: &str) -> Result<Fault, Diagnostic> {
    let at = fault_time(p, "at_us", Some(f.at_us), true, f.kind)?;
    // A key the kind does not read would be silently ignored (a `duration_us` on a
    // `link-down` does not bring the link back): say so instead.
    let link_kinds = [
        FaultKind::LinkDown,
        FaultKind::LinkUp,
        FaultKind::LinkFlap,
        FaultKind::RouteWithdraw,
        FaultKind::RouteRestore,
        FaultKind::EcmpMemberRemove,
        FaultKind::EcmpMemberAdd,
    ];
    let stray: [(&str, bool, &[FaultKind]); 10] = [
        ("b", f.b.is_some(), &link_kinds),
        ("duration_us", f.duration_us.is_some(), &[FaultKind::SwitchReboot, FaultKind::NicReset]),
        ("period_us", f.period_us.is_some(), &[FaultKind::LinkFlap]),
        ("count", f.count.is_some(), &[FaultKind::LinkFlap]),
        ("seed", f.seed.is_some(), &[FaultKind::EcmpReseed]),
        ("fields", f.fields.is_some(), &[FaultKind::EcmpHashFields]),
        ("mode", f.mode.is_some(), &[FaultKind::SwitchReboot]),
        ("routes_after_us", f.routes_after_us.is_some(), &[FaultKind::SwitchReboot]),
        ("drain_gbps", f.drain_gbps.is_some(), &[FaultKind::HostStall]),
        ("profile", f.profile.is_some(), &[FaultKind::NicReset]),
    ];
    if let Some((key, _, used_by)) = stray.iter().find(|(_, set, used_by)| *set && !used_by.contains(&f.kind)) {
        let users: Vec<&str> = used_by.iter().map(|u| fault_name(*u)).collect();
        let hint = match (*key, f.kind) {
            ("duration_us", FaultKind::LinkDown) => {
                "a link stays down until a `link-up` fault; for down-then-up use `link-flap` with count = 1".to_string()
            }
            _ => format!("remove it; only {} read it (docs/fabric-file.md, [[fault]])", users.join(", ")),
        };
        return Err(Diagnostic::new(
            format!("{p}.{key}"),
            format!("`{key}` does not apply to a `{}` fault", fault_name(f.kind)),
            hint,
        ));
    }
    let mut r = Fault {
        kind: f.kind,
        at,
        node: None,
        link: None,
        duration: None,
        period: None,
        count: 1,
        seed: None,
        fields: Vec::new(),
        mode: None,
        routes_after: SimTime::ZERO,
        drain: None,
        profile: None,
    };
    let node = || m.node_by_name(&f.a).ok_or_else(|| unknown_node(m, &f.a, format!("{p}.a"), false));
    let link = |a: NodeId| -> Result<(PortId, PortId), Diagnostic> {
        let bn = f.b.as_deref().ok_or_else(|| {
            Diagnostic::new(
                format!("{p}.b"),
                format!("a `{}` fault needs both ends of the link", fault_name(f.kind)),
                "add `b = \"NODE\"`",
            )
        })?;
        let b = m.node_by_name(bn).ok_or_else(|| unknown_node(m, bn, format!("{p}.b"), false))?;
        let pa = m.node(a).ports().find(|pp| m.port(m.port(*pp).peer).node == b).ok_or_else(|| {
            Diagnostic::new(
                format!("{p}.b"),
                format!("`{}` and `{bn}` are not linked", f.a),
                "name the two ends of an existing link (`rocelab topo --format dot` draws them)",
            )
        })?;
        Ok((pa, m.port(pa).peer))
    };
    let not_a = |what: &str, hint: &str| Diagnostic::new(format!("{p}.a"), format!("`{}` is {what}", f.a), hint);
    match f.kind {
        FaultKind::EcmpReseed => {
            r.seed = Some(f.seed.ok_or_else(|| {
                Diagnostic::new(format!("{p}.seed"), "an `ecmp-reseed` fault needs `seed`", "e.g. seed = 7")
            })?);
            if f.a != "*" {
                let n = node()?;
                if m.node(n).is_host() {
                    return Err(not_a("a host", "name a switch, or \"*\" for every switch"));
                }
                r.node = Some(n);
            }
        }
        FaultKind::EcmpHashFields => {
            r.fields = f.fields.clone().ok_or_else(|| {
                Diagnostic::new(
                    format!("{p}.fields"),
                    "an `ecmp-hash-fields` fault needs `fields`",
                    "e.g. fields = [\"src-ip\", \"dst-ip\", \"protocol\", \"dst-port\"]",
                )
            })?;
            if f.a != "*" {
                return Err(Diagnostic::new(
                    format!("{p}.a"),
                    "the hashed fields change on every switch at once",
                    "write a = \"*\"",
                ));
            }
        }
        FaultKind::LinkDown | FaultKind::LinkUp => {
            let a = node()?;
            (r.node, r.link) = (Some(a), Some(link(a)?));
        }
        FaultKind::LinkFlap => {
            let a = node()?;
            (r.node, r.link) = (Some(a), Some(link(a)?));
            let period = fault_time(p, "period_us", f.period_us, false, f.kind)?;
            let count = f.count.filter(|c| (1..=MAX_FLAP_COUNT).contains(c)).ok_or_else(|| {
                Diagnostic::new(
                    format!("{p}.count"),
                    format!("a `link-flap` fault needs `count` from 1 to {MAX_FLAP_COUNT}"),
                    "e.g. count = 5",
                )
            })?;
            // The last cycle must end inside the engine's clock (10¹² µs), and half a period
            // (the time down) must be at least a picosecond.
            let end = (count as u128 * period.0 as u128).saturating_add(at.0 as u128);
            if end > SimTime::from_secs_f64(MAX_FAULT_TIME_US * 1e-6).0 as u128 || period.0 < 2 {
                return Err(Diagnostic::new(
                    format!("{p}.period_us"),
                    format!(
                        "{count} cycles of {} µs from {} µs end beyond 10^12 µs, or the period is too short",
                        period.as_us_f64(),
                        at.as_us_f64()
                    ),
                    "use a shorter period or fewer cycles",
                ));
            }
            (r.period, r.count) = (Some(period), count);
        }
        FaultKind::RouteWithdraw | FaultKind::RouteRestore | FaultKind::EcmpMemberRemove | FaultKind::EcmpMemberAdd => {
            let a = node()?;
            let l = link(a)?;
            if m.node(a).is_host() || m.node(m.port(l.1).node).is_host() {
                return Err(Diagnostic::new(
                    format!("{p}.a"),
                    "a host link carries no routes",
                    "withdraw a switch-to-switch link, or take a host link down with `link-down`",
                ));
            }
            (r.node, r.link) = (Some(a), Some(l));
        }
        FaultKind::SwitchReboot => {
            let a = node()?;
            if m.node(a).is_host() {
                return Err(not_a("a host", "a reboot takes a switch"));
            }
            let mode = f.mode.unwrap_or_default();
            let d =
                fault_time(p, "duration_us", Some(f.duration_us.unwrap_or(mode.default_outage_us())), false, f.kind)?;
            let routes_after = match (mode, f.routes_after_us) {
                (RebootMode::Warm, Some(_)) => {
                    return Err(Diagnostic::new(
                        format!("{p}.routes_after_us"),
                        "a warm reboot keeps its routes: there is nothing to advertise again",
                        "remove routes_after_us, or make it a cold reboot (mode = \"cold\")",
                    ))
                }
                (_, v) => fault_time(
                    p,
                    "routes_after_us",
                    Some(v.unwrap_or(crate::events::COLD_REBOOT_ROUTES_AFTER_US)),
                    true,
                    f.kind,
                )?,
            };
            let end = at.0 as u128 + d.0 as u128 + routes_after.0 as u128;
            if end > SimTime::from_secs_f64(MAX_FAULT_TIME_US * 1e-6).0 as u128 {
                return Err(Diagnostic::new(
                    format!("{p}.duration_us"),
                    "the switch (or its routes) would come back after 10^12 µs",
                    "use a shorter duration_us or routes_after_us",
                ));
            }
            (r.node, r.duration, r.mode, r.routes_after) = (Some(a), Some(d), Some(mode), routes_after);
        }
        FaultKind::NicReset => {
            let a = node()?;
            if !m.node(a).is_host() {
                return Err(not_a("a switch", "a NIC reset takes a host; a switch reboots with `switch-reboot`"));
            }
            let d = fault_time(
                p,
                "duration_us",
                Some(f.duration_us.unwrap_or(crate::events::NIC_RESET_LINK_DOWN_US)),
                false,
                f.kind,
            )?;
            if at.0 as u128 + d.0 as u128 > SimTime::from_secs_f64(MAX_FAULT_TIME_US * 1e-6).0 as u128 {
                return Err(Diagnostic::new(
                    format!("{p}.duration_us"),
                    "the NIC would come back after 10^12 µs",
                    "use a shorter duration_us",
                ));
            }
            if let Some(name) = &f.profile {
                let i = m.nics.iter().position(|n| &n.name == name).ok_or_else(|| {
                    let names: Vec<&str> = m.nics.iter().map(|n| n.name.as_str()).collect();
                    Diagnostic::new(
                        format!("{p}.profile"),
                        format!("no NIC profile named `{name}`"),
                        format!("use one of: {} (declare others as [nic_profiles.NAME])", names.join(", ")),
                    )
                })?;
                r.profile = Some(i);
            }
            (r.node, r.duration) = (Some(a), Some(d));
        }
        FaultKind::HostStall | FaultKind::HostResume => {
            let a = node()?;
            if !m.node(a).is_host() {
                return Err(not_a("a switch", "host faults take a host"));
            }
            r.node = Some(a);
            if let Some(g) = f.drain_gbps {
                // A drain at or above the NIC's speed would hold nothing back: refuse it rather
                // than run a stall that is not one.
                let nic_gbps = m.host_speed(a).0 as f64 / 1e9;
                if !(g.is_finite() && g > 0.0 && g < nic_gbps) {
                    return Err(Diagnostic::new(
                        format!("{p}.drain_gbps"),
                        format!("drain_gbps = {g} is not a rate above 0 and below the host's {nic_gbps} Gb/s"),
                        "give the rate the host still drains at in Gb/s, e.g. drain_gbps = 200; leave it out for a full stall",
                    ));
                }
                r.drain = Some(BitsPerSec((g * 1e9).round() as u64));
            }
        }
    }
    Ok(r)
}

/// nccl-tests' name of a collective written as nccl-tests or NCCL write it (`all_reduce`,
/// `all_reduce_perf`, `allreduce`, `all-reduce`); `None` if the twin does not run it.
pub fn collective_name(name: &str) -> Option<&'static str> {
    let n = name.trim().trim_end_matches("_perf").replace(['-', '_'], "");
    COLLECTIVES.into_iter().find(|c| c.replace('_', "") == n)
}

fn resolve_workloads(m: &Model, errs: &mut Vec<Diagnostic>) -> Vec<Workload> {
    let mut out: Vec<Workload> = Vec::new();
    for (i, w) in m.config.workload.iter().enumerate() {
        let p = format!("workload[{i}]");
        match workload_one(m, w, i, &p) {
            Ok(r) => {
                if let Some(j) = out.iter().position(|o| o.name == r.name) {
                    errs.push(Diagnostic::new(
                        format!("{p}.name"),
                        format!("workload `{}` is also the name of workload[{j}]", r.name),
                        "give each workload its own name: it names the output directory",
                    ));
                }
                out.push(r);
            }
            Err(d) => errs.push(d),
        }
    }
    out
}

fn workload_one(m: &Model, w: &WorkloadConfig, i: usize, p: &str) -> Result<Workload, Diagnostic> {
    let d = |key: &str, msg: String, hint: &str| Diagnostic::new(format!("{p}.{key}"), msg, hint);
    let name = w.name.clone().unwrap_or_else(|| format!("workload{i}"));
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || name.starts_with('.')
    {
        return Err(d(
            "name",
            format!("workload name `{name}`"),
            "letters, digits, '-', '_' and '.' only (not first): it names the output directory",
        ));
    }
    let size = |key: &str, v: &Option<crate::config::SizeInput>| -> Result<Option<u64>, Diagnostic> {
        let Some(s) = v else { return Ok(None) };
        let shown = match s {
            crate::config::SizeInput::Bytes(b) => b.to_string(),
            crate::config::SizeInput::Text(t) => format!("\"{t}\""),
        };
        match s.bytes() {
            None => Err(d(
                key,
                format!("{shown} is not a size of 1 byte or more"),
                "a byte count, or a string such as \"64K\" or \"1G\" (powers of 1024)",
            )),
            Some(b) if b > MAX_MESSAGE_BYTES => Err(d(
                key,
                format!("{shown} is {b} bytes, more than the 1 TB (10^12 B) message the engine takes"),
                "use a size up to 1 TB, e.g. \"1G\"",
            )),
            Some(b) => Ok(Some(b)),
        }
    };
    if w.serve.is_some() {
        let table = crate::serving::workload(w, m.config.plan.is_some(), p)?;
        let run = WorkloadRun::Serve(table);
        return Ok(Workload {
            name,
            run,
            nodes: None,
            channels: None,
            qps_per_connection: None,
            chunk_bytes: None,
            root: None,
        });
    }
    let run = match (&w.collective, &w.step) {
        (Some(c), None) => {
            let Some(op) = collective_name(c) else {
                let reduce = c.trim().trim_end_matches("_perf").replace(['-', '_'], "") == "reduce";
                return Err(d(
                    "collective",
                    if reduce { format!("`{c}` is not on the twin yet") } else { format!("unknown collective `{c}`") },
                    &format!("use {}", COLLECTIVES.join(", ")),
                ));
            };
            // nccl-tests' defaults: -b 8 and -e equal to -b, -f 2.
            let min_bytes = size("min_bytes", &w.min_bytes)?.unwrap_or(8);
            let max_bytes = size("max_bytes", &w.max_bytes)?.unwrap_or(min_bytes);
            if max_bytes < min_bytes {
                return Err(d(
                    "max_bytes",
                    format!("max_bytes ({max_bytes} B) is below min_bytes ({min_bytes} B)"),
                    "the sweep runs min_bytes, min_bytes x step_factor, ... up to max_bytes",
                ));
            }
            let step_factor = w.step_factor.unwrap_or(2);
            if step_factor < 2 {
                return Err(d("step_factor", format!("step factor {step_factor}"), "use 2 or more (nccl-tests' -f)"));
            }
            WorkloadRun::Collective { op, min_bytes, max_bytes, step_factor }
        }
        (None, Some(st)) => {
            if st == "plan" && m.config.plan.is_none() {
                return Err(d(
                    "step",
                    "step = \"plan\" but the file has no [plan] table".into(),
                    "add a [plan] table (rocelab plan's keys) or give a plan file's path",
                ));
            }
            WorkloadRun::Step { plan: st.clone() }
        }
        _ => {
            return Err(d(
                "collective",
                "a workload names a collective or a step, one of them".into(),
                "collective = \"all_reduce\" (with min_bytes, ...) or step = \"plan\"",
            ))
        }
    };
    // NCCL_ALGO and NCCL_PROTO values in any case, as NCCL reads them; `auto` is NCCL's choice.
    if let Some(a) = &w.algo {
        let a = a.trim().to_ascii_lowercase();
        if !matches!(a.as_str(), "ring" | "tree" | "auto") {
            return Err(d("algo", format!("algorithm `{a}`"), "ring or tree (NCCL_ALGO), or auto (NCCL's choice)"));
        }
        if let WorkloadRun::Collective { op, .. } = &run {
            if a == "tree" && *op != "all_reduce" {
                return Err(d(
                    "algo",
                    format!("NCCL_ALGO=tree for {op}"),
                    "NCCL's tree runs all-reduce only; use the ring for the others",
                ));
            }
        }
    }
    if let Some(p) = &w.proto {
        if !matches!(p.trim().to_ascii_lowercase().as_str(), "ll" | "ll128" | "simple" | "auto") {
            return Err(d(
                "proto",
                format!("protocol `{p}`"),
                "LL, LL128 or Simple (NCCL_PROTO), or auto (NCCL's choice)",
            ));
        }
    }
    if let Some(pl) = &w.placement {
        if pl != "auto" && pl != "nics" {
            return Err(d("placement", format!("placement `{pl}`"), "auto or nics"));
        }
    }
    let bounded = |key: &str, v: Option<u32>, max: u32, hint: &str| -> Result<Option<u32>, Diagnostic> {
        match v {
            Some(x) if x == 0 || x > max => Err(d(key, format!("{key} = {x}"), &format!("use 1 to {max} ({hint})"))),
            _ => Ok(v),
        }
    };
    let channels = bounded("channels", w.channels, MAX_CHANNELS, "NCCL itself uses at most 64")?;
    let qps_per_connection =
        bounded("qps_per_connection", w.qps_per_connection, MAX_QPS_PER_CONNECTION, "NCCL's NCCL_IB_MAX_QPS")?;
    let chunk_bytes = size("chunk_bytes", &w.chunk_bytes)?;
    // Ranks: GPU nodes x GPUs when the hosts sit in GPU nodes (and placement is not "nics"),
    // else one per host NIC.
    let mut gpu_nodes: Vec<u32> = m
        .nodes
        .iter()
        .filter_map(|n| match n.role {
            crate::model::Role::Host { gpu_node, .. } => gpu_node,
            _ => None,
        })
        .collect();
    gpu_nodes.sort_unstable();
    gpu_nodes.dedup();
    let by_gpu = !gpu_nodes.is_empty() && w.placement.as_deref() != Some("nics");
    if by_gpu {
        // GPU placement needs every host in a GPU node (the ranks are GPUs behind NICs).
        if let Some(h) = m.nodes.iter().find(|n| matches!(n.role, crate::model::Role::Host { gpu_node: None, .. })) {
            return Err(d(
                "placement",
                format!(
                    "host `{}` belongs to no GPU node while others do, so the collective cannot place its GPU ranks",
                    h.name
                ),
                "give every host a gpu_node (and rail), or none, or run on the NICs with placement = \"nics\"",
            ));
        }
    }
    if let Some(k) = w.nodes {
        if !by_gpu {
            return Err(d(
                "nodes",
                format!("{k} GPU nodes asked for, but the ranks are host NICs"),
                "name GPU nodes in the fabric (`gpu_node` on hosts, or a rail-optimized topology) with placement \"auto\", or drop `nodes`",
            ));
        }
        if k == 0 || k as usize > gpu_nodes.len() {
            return Err(d(
                "nodes",
                format!("{k} GPU nodes asked for, the fabric has {}", gpu_nodes.len()),
                &format!("give 1 to {}", gpu_nodes.len()),
            ));
        }
    }
    let ranks = if by_gpu {
        w.nodes.map_or(gpu_nodes.len(), |k| k as usize) as u64 * m.gpu_node.gpus as u64
    } else {
        m.hosts().count() as u64
    };
    if let Some(r) = w.root {
        if matches!(run, WorkloadRun::Collective { op: "broadcast", .. }) && r as u64 >= ranks {
            return Err(d(
                "root",
                format!("root {r} of a broadcast over {ranks} ranks"),
                &format!("give a root in 0..{ranks}"),
            ));
        }
    }
    Ok(Workload { name, run, nodes: w.nodes, channels, qps_per_connection, chunk_bytes, root: w.root })
}
