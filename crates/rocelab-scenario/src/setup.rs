//! What every kind's setup is built from (`kinds/<kind>.rs` builds one): a run's traffic
//! (messages with start times), its faults, the changes it makes to the fleet (watchdog,
//! convergence, a second NIC profile), the parameters as resolved, and the checked readers of
//! parameters (each error names its key).

use crate::fabric::{self, Scale};
use rocelab_model::config::{
    FaultConfig, NicConfig, PfcWatchdogConfig, ScenarioConfig, ScenarioParams, SustainedPattern, TrafficConfig,
    TrafficPattern,
};
use rocelab_model::scenario;
use rocelab_model::{Diagnostic, Model, NodeId, PortId, SimTime};
use rocelab_sim::engine::{Fault, FaultAction};
use rocelab_sim::rng::Rng;
use rocelab_sim::traffic::Transport;
use rocelab_sim::workload::Message;
use rocelab_workload::CollectiveSpec;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A scenario, ready to run.
pub struct Setup {
    pub duration: Option<SimTime>,
    /// How long the run is expected to take (the sampling horizon when it runs to completion).
    pub horizon: SimTime,
    pub msgs: Vec<Message>,
    /// How each of `msgs` is paced (`Net::post_with`); empty: all RDMA.
    pub transport: Vec<Transport>,
    pub faults: Vec<Fault>,
    /// Faults only a `[[fault]]` table can name (the hashed fields).
    pub fault_tables: Vec<FaultConfig>,
    pub watchdog: Option<PfcWatchdogConfig>,
    pub convergence_us: Option<f64>,
    /// A second NIC profile and the hosts on it.
    pub profile: Option<(NicConfig, Vec<String>)>,
    pub collective: Option<CollectiveSpec>,
    /// A fault at its published timescale, run in edges (`edges`) instead of `faults`.
    pub edge: Option<crate::edges::EdgePlan>,
    pub params: BTreeMap<String, Value>,
    /// What the evaluation needs to know about the placement.
    pub marks: Marks,
}

#[derive(Clone, Debug, Default)]
pub struct Marks {
    pub at: SimTime,
    pub dst: Option<NodeId>,
    pub senders: Vec<NodeId>,
    /// Senders on the other profile (firmware-mix), or the victims (hotspot).
    pub others: Vec<NodeId>,
    /// The hotspot port, the faulted link's port.
    pub port: Option<PortId>,
    pub switch: Option<NodeId>,
    /// Messages that belong to `others` (by index into `msgs`), hot messages for hotspot.
    pub flows_of_others: Vec<usize>,
    pub ideal: SimTime,
}

pub struct Ctx<'a> {
    pub m: &'a Model,
    /// The table as written (its name, kind, hosts).
    pub c: &'a ScenarioConfig,
    /// Its parameters, typed by its kind.
    pub p: ScenarioParams,
    pub path: String,
    pub seed: u64,
    pub scale: Scale,
}

pub fn err(path: &str, key: &str, msg: String, hint: &str) -> Diagnostic {
    Diagnostic::new(format!("{path}.{key}"), msg, hint)
}

impl Ctx<'_> {
    pub fn time(&self, key: &str, v: Option<f64>, default: SimTime) -> Result<SimTime, Diagnostic> {
        match v {
            None => Ok(default),
            Some(x) if x.is_finite() && x > 0.0 && x <= 1e9 => Ok(SimTime::from_secs_f64(x * 1e-6)),
            Some(x) => Err(err(&self.path, key, format!("{key} = {x} is not a valid time"), "a time in µs, > 0")),
        }
    }

    pub fn fraction(&self, key: &str, v: Option<f64>, default: f64, zero_ok: bool) -> Result<f64, Diagnostic> {
        match v {
            None => Ok(default),
            Some(x) if x.is_finite() && x <= 1.0 && (x > 0.0 || zero_ok && x == 0.0) => Ok(x),
            Some(x) => Err(err(
                &self.path,
                key,
                format!("{key} = {x} is not a fraction"),
                if zero_ok { "use 0 to 1" } else { "use a number in (0, 1]" },
            )),
        }
    }

    pub fn fan_in(&self, v: Option<u32>, default: usize, reserve: usize) -> Result<usize, Diagnostic> {
        let most = self.scale.hosts.len().saturating_sub(reserve);
        match v {
            None => Ok(default.min(most).max(1)),
            Some(n) if n >= 1 && n as usize <= most => Ok(n as usize),
            Some(n) => Err(err(
                &self.path,
                "fan_in",
                format!("fan_in = {n}, but {most} hosts can send here"),
                &format!("use 1 to {most}"),
            )),
        }
    }

    pub fn size(&self, key: &str, v: Option<u64>, default: u64) -> Result<u64, Diagnostic> {
        match v {
            None => Ok(default),
            Some(s) if (1..=rocelab_sim::traffic::MAX_FLOW_BYTES).contains(&s) => Ok(s),
            Some(s) => Err(err(&self.path, key, format!("{key} = {s} B is outside 1 B..1 TB"), "give a size in bytes")),
        }
    }

    pub fn host(&self, key: &str, name: &str) -> Result<NodeId, Diagnostic> {
        match self.m.node_by_name(name) {
            Some(h) if self.m.node(h).is_host() => Ok(h),
            Some(_) => Err(err(&self.path, key, format!("`{name}` is a switch"), "name a host")),
            None => {
                Err(err(&self.path, key, format!("no host named `{name}`"), "host names: `rocelab topo --format json`"))
            }
        }
    }

    /// The receiver: `dst`, or the first host.
    pub fn dst(&self, v: &Option<String>) -> Result<NodeId, Diagnostic> {
        match v {
            Some(d) => self.host("dst", d),
            None => Ok(self.scale.hosts[0]),
        }
    }

    /// The `n` hosts after `dst` in ring order (wrapping), `dst` left out.
    pub fn after(&self, dst: NodeId, n: usize) -> Vec<NodeId> {
        let h = &self.scale.hosts;
        let i = h.iter().position(|x| *x == dst).unwrap_or(h.len() - 1);
        (1..h.len()).map(|k| h[(i + k) % h.len()]).filter(|x| *x != dst).take(n).collect()
    }

    pub fn duration(&self, v: Option<f64>, default_us: u64) -> Result<SimTime, Diagnostic> {
        self.time("duration_us", v, SimTime::from_us(default_us))
    }

    pub fn load(&self, v: Option<f64>) -> Result<f64, Diagnostic> {
        self.fraction("load", v, scenario::LOAD_DEFAULT, false)
    }
}

pub fn msg(src: NodeId, dst: NodeId, size: u64, start: SimTime) -> Message {
    Message { start: Some(start), ..Message::new(src, dst, size) }
}

impl Setup {
    pub fn new(duration: Option<SimTime>, horizon: SimTime) -> Setup {
        Setup {
            duration,
            horizon,
            msgs: Vec::new(),
            transport: Vec::new(),
            faults: Vec::new(),
            fault_tables: Vec::new(),
            watchdog: None,
            convergence_us: None,
            profile: None,
            collective: None,
            edge: None,
            params: BTreeMap::new(),
            marks: Marks::default(),
        }
    }

    pub fn param(&mut self, k: &str, v: Value) {
        self.params.insert(k.to_string(), v);
    }
}

/// A permutation or all-to-all over the scenario's hosts, through the same expansion as
/// `[[traffic]]` (its seeded derangement), offered at `load` × line rate for `dur`: one message
/// per pair at full load; below it, a chunk every period (`on/off` at the load's duty cycle) on
/// the pair's one source port, so it keeps its ECMP path as a long-lived QP would.
pub fn background(cx: &Ctx, pattern: SustainedPattern, hosts: &[NodeId], dur: SimTime, load: f64) -> Vec<Message> {
    let n = hosts.len() as u64;
    let pairs = if pattern == SustainedPattern::AllToAll { (n - 1).max(1) } else { 1 };
    let per_pair = (cx.scale.bytes_in(dur, 1.0) / pairs).max(1);
    let pat = match pattern {
        SustainedPattern::Permutation => TrafficPattern::Permutation,
        SustainedPattern::AllToAll => TrafficPattern::AllToAll,
    };
    let names: Vec<String> = hosts.iter().map(|h| cx.m.node(*h).name.clone()).collect();
    let t = TrafficConfig {
        pattern: pat,
        src: None,
        dst: None,
        hosts: Some(names),
        senders: None,
        size_bytes: per_pair,
        start_us: None,
        class: None,
        qps: None,
    };
    // Host names from the model always match themselves, and the size is in range.
    let flows = rocelab_sim::traffic::expand(cx.m, &[t], cx.seed).unwrap_or_default();
    let mut rng = Rng::new(cx.seed, 0x6c6f_6164);
    flows.into_iter().flat_map(|f| stream(cx, f.src, f.dst, dur, load, pairs, &mut rng)).collect()
}

/// `src` sending to `dst` at `load` × its line rate / `pairs` for `dur`: one message at full
/// load; below it, a chunk every period on one source port.
pub fn stream(cx: &Ctx, src: NodeId, dst: NodeId, dur: SimTime, load: f64, pairs: u64, rng: &mut Rng) -> Vec<Message> {
    let total = (cx.scale.bytes_in(dur, 1.0) / pairs).max(1);
    if load >= 1.0 {
        return vec![msg(src, dst, total, SimTime::ZERO)];
    }
    let chunk = (4 * cx.scale.bdp_bytes).max(64 << 10).min(total);
    let on = SimTime(cx.scale.time_for(chunk).0 * pairs);
    let period = SimTime((on.0 as f64 / load) as u64).max(SimTime(1));
    let sport = Some(rng.sport());
    let mut v = Vec::new();
    let mut t = SimTime::ZERO;
    while t < dur {
        v.push(Message { sport, ..msg(src, dst, chunk, t) });
        t += period;
    }
    v
}

pub fn with_convergence(cx: &Ctx, v: Option<f64>, s: &mut Setup) -> Result<(), Diagnostic> {
    if let Some(c) = v {
        if !(c.is_finite() && (0.0..=1e6).contains(&c)) {
            return Err(err(&cx.path, "convergence_us", format!("convergence_us = {c}"), "a time in µs, 0 to 10⁶"));
        }
        s.convergence_us = Some(c);
        s.param("convergence_us", json!(c));
    }
    Ok(())
}

/// Of `items`, the one with the most bytes in the probe run (`score`), ties to the lowest id:
/// automatic placement (`busiest-spine-uplink`, `busiest-spine`).
pub fn busiest<T: Copy>(
    cx: &Ctx,
    items: Vec<T>,
    what: &str,
    probe: &dyn Fn() -> Vec<u64>,
    score: impl Fn(&[u64], T) -> u64,
    id: impl Fn(T) -> u32,
) -> Result<T, Diagnostic> {
    if items.is_empty() {
        return Err(err(&cx.path, "a", format!("the fabric has no {what}"), "name the place with `a` (and `b`)"));
    }
    let tx = probe();
    Ok(items.iter().copied().max_by_key(|x| (score(&tx, *x), std::cmp::Reverse(id(*x)))).unwrap_or(items[0]))
}

/// The link `a`–`b` by name, or the placement keyword `busiest-spine-uplink`.
pub fn link(
    cx: &Ctx,
    a: &Option<String>,
    b: &Option<String>,
    probe: &dyn Fn() -> Vec<u64>,
) -> Result<PortId, Diagnostic> {
    let m = cx.m;
    let a = a.as_deref().unwrap_or(scenario::BUSIEST_UPLINK);
    if a == scenario::BUSIEST_UPLINK {
        let ups = fabric::spine_uplinks(m);
        return busiest(cx, ups, "leaf-spine links", probe, |tx, p| fabric::link_bytes(m, tx, p), |p| p.0);
    }
    let an = m.node_by_name(a).ok_or_else(|| {
        err(
            &cx.path,
            "a",
            format!("no node named `{a}`"),
            "use a node name from the fabric, or \"busiest-spine-uplink\"",
        )
    })?;
    let bn = b.as_deref().ok_or_else(|| err(&cx.path, "b", "a link needs both ends".into(), "add `b = \"NODE\"`"))?;
    let bi = m
        .node_by_name(bn)
        .ok_or_else(|| err(&cx.path, "b", format!("no node named `{bn}`"), "use a node name from the fabric"))?;
    let p = m.node(an).ports().find(|p| m.port(m.port(*p).peer).node == bi);
    let p = p.ok_or_else(|| {
        err(&cx.path, "b", format!("`{a}` and `{bn}` are not linked"), "name the two ends of an existing link")
    })?;
    if m.node(an).is_host() || m.node(bi).is_host() {
        return Err(err(&cx.path, "a", "a host link".into(), "these scenarios fault switch-to-switch links"));
    }
    Ok(p)
}

/// Wire bytes sent per port by `msgs` up to `until`, with the same seed: where the load goes.
pub fn probe(m: &Model, msgs: &[Message], until: SimTime, seed: u64) -> Vec<u64> {
    let w = crate::Beside { main: None, bg: msgs.to_vec(), transport: Vec::new(), n_bg: msgs.len() };
    let opts = rocelab_sim::SimOptions { seed, duration: Some(until), ..Default::default() };
    match rocelab_sim::Sim::with_workload(m, Box::new(w), Vec::new(), opts) {
        Ok(mut sim) => {
            sim.run_until(until);
            sim.snapshot_totals().ports.iter().map(|p| p.tx_bytes).collect()
        }
        Err(_) => vec![0; m.ports.len()],
    }
}

/// The run the four kinds under load share (link-loss, link-flap, switch-reboot,
/// routing-change): a permutation over the scenario's hosts at `load` for the duration
/// (default [`scenario::FAULT_DURATION_US`]), the fault at `at_us` (default duration /
/// `at_divisor`), before the end. Returns the setup and the fault's time.
pub struct UnderLoad {
    pub duration_us: Option<f64>,
    pub load: Option<f64>,
    pub at_us: Option<f64>,
    pub at_divisor: u64,
    pub convergence_us: Option<f64>,
}

/// The [`UnderLoad`] keys of a kind's parameters, which every kind under load names alike.
macro_rules! under_load_keys {
    ($p:expr, $at_divisor:expr) => {
        $crate::setup::UnderLoad {
            duration_us: $p.duration_us,
            load: $p.load,
            at_us: $p.at_us,
            at_divisor: $at_divisor,
            convergence_us: $p.convergence_us,
        }
    };
}
pub(crate) use under_load_keys;

pub fn under_load(cx: &Ctx, u: UnderLoad) -> Result<(Setup, SimTime), Diagnostic> {
    let dur = cx.duration(u.duration_us, scenario::FAULT_DURATION_US)?;
    let load = cx.load(u.load)?;
    let at = cx.time("at_us", u.at_us, SimTime(dur.0 / u.at_divisor))?;
    if at >= dur {
        return Err(err(
            &cx.path,
            "at_us",
            format!("at {} µs is not before the end ({} µs)", at.as_us_f64(), dur.as_us_f64()),
            "make at_us smaller than duration_us",
        ));
    }
    let mut s = Setup::new(Some(dur), dur);
    s.msgs = background(cx, SustainedPattern::Permutation, &cx.scale.hosts, dur, load);
    with_convergence(cx, u.convergence_us, &mut s)?;
    s.param("duration_us", json!(dur.as_us_f64()));
    s.param("at_us", json!(at.as_us_f64()));
    s.param("load", json!(load));
    s.marks.at = at;
    Ok((s, at))
}

/// The probe of where `s`'s load goes before `at` (same seed), for automatic placement.
pub fn probe_before<'a>(cx: &'a Ctx, s: &Setup, at: SimTime) -> impl Fn() -> Vec<u64> + 'a {
    let msgs = s.msgs.clone();
    move || probe(cx.m, &msgs, at, cx.seed)
}

/// Link `p` (both directions) going down or up at `at`.
pub fn link_fault(m: &Model, p: PortId, at: SimTime, up: bool) -> Fault {
    Fault { at, action: FaultAction::Link { ports: (p.0, m.port(p).peer.0), up } }
}

/// "a -- b", the way results name a link.
pub fn link_name(m: &Model, p: PortId) -> String {
    format!("{} -- {}", m.port_name(p), m.port_name(m.port(p).peer))
}
