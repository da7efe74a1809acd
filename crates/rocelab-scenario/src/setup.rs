//! Each kind turned into a run: its traffic (messages with start times), its faults, the
//! changes it makes to the fleet (watchdog, convergence, a second NIC profile), and the
//! parameters as resolved. Checks every parameter it reads, naming the key.

use crate::fabric::{self, Scale};
use rocelab_model::config::{
    CongestionControl, FaultConfig, FaultKind, HashField, HotspotTarget, NicConfig, PfcWatchdogConfig,
    RoutingChangeKind, ScenarioConfig, ScenarioKind, SustainedPattern, TrafficConfig, TrafficPattern, WatchdogAction,
};
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
    pub c: &'a ScenarioConfig,
    pub path: String,
    pub seed: u64,
    pub scale: Scale,
}

fn err(path: &str, key: &str, msg: String, hint: &str) -> Diagnostic {
    Diagnostic::new(format!("{path}.{key}"), msg, hint)
}

impl Ctx<'_> {
    fn time(&self, key: &str, v: Option<f64>, default: SimTime) -> Result<SimTime, Diagnostic> {
        match v {
            None => Ok(default),
            Some(x) if x.is_finite() && x > 0.0 && x <= 1e9 => Ok(SimTime::from_secs_f64(x * 1e-6)),
            Some(x) => Err(err(&self.path, key, format!("{key} = {x} is not a valid time"), "a time in µs, > 0")),
        }
    }

    fn fraction(&self, key: &str, v: Option<f64>, default: f64, zero_ok: bool) -> Result<f64, Diagnostic> {
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

    fn fan_in(&self, default: usize, reserve: usize) -> Result<usize, Diagnostic> {
        let most = self.scale.hosts.len().saturating_sub(reserve);
        match self.c.fan_in {
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

    fn size(&self, key: &str, v: Option<u64>, default: u64) -> Result<u64, Diagnostic> {
        match v {
            None => Ok(default),
            Some(s) if (1..=rocelab_sim::traffic::MAX_FLOW_BYTES).contains(&s) => Ok(s),
            Some(s) => Err(err(&self.path, key, format!("{key} = {s} B is outside 1 B..1 TB"), "give a size in bytes")),
        }
    }

    fn host(&self, key: &str, name: &str) -> Result<NodeId, Diagnostic> {
        match self.m.node_by_name(name) {
            Some(h) if self.m.node(h).is_host() => Ok(h),
            Some(_) => Err(err(&self.path, key, format!("`{name}` is a switch"), "name a host")),
            None => {
                Err(err(&self.path, key, format!("no host named `{name}`"), "host names: `rocelab topo --format json`"))
            }
        }
    }

    /// The receiver: `dst`, or the first host.
    fn dst(&self) -> Result<NodeId, Diagnostic> {
        match &self.c.dst {
            Some(d) => self.host("dst", d),
            None => Ok(self.scale.hosts[0]),
        }
    }

    /// The `n` hosts after `dst` in ring order (wrapping), `dst` left out.
    fn after(&self, dst: NodeId, n: usize) -> Vec<NodeId> {
        let h = &self.scale.hosts;
        let i = h.iter().position(|x| *x == dst).unwrap_or(h.len() - 1);
        (1..h.len()).map(|k| h[(i + k) % h.len()]).filter(|x| *x != dst).take(n).collect()
    }

    fn duration(&self, default_us: u64) -> Result<SimTime, Diagnostic> {
        self.time("duration_us", self.c.duration_us, SimTime::from_us(default_us))
    }

    fn load(&self) -> Result<f64, Diagnostic> {
        self.fraction("load", self.c.load, 1.0, false)
    }
}

pub fn msg(src: NodeId, dst: NodeId, size: u64, start: SimTime) -> Message {
    Message { start: Some(start), ..Message::new(src, dst, size) }
}

impl Setup {
    fn new(duration: Option<SimTime>, horizon: SimTime) -> Setup {
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
            params: BTreeMap::new(),
            marks: Marks::default(),
        }
    }

    fn param(&mut self, k: &str, v: Value) {
        self.params.insert(k.to_string(), v);
    }
}

/// A permutation or all-to-all over the scenario's hosts, through the same expansion as
/// `[[traffic]]` (its seeded derangement), offered at `load` × line rate for `dur`: one message
/// per pair at full load; below it, a chunk every period (`on/off` at the load's duty cycle) on
/// the pair's one source port, so it keeps its ECMP path as a long-lived QP would.
fn background(cx: &Ctx, pattern: SustainedPattern, hosts: &[NodeId], dur: SimTime, load: f64) -> Vec<Message> {
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
fn stream(cx: &Ctx, src: NodeId, dst: NodeId, dur: SimTime, load: f64, pairs: u64, rng: &mut Rng) -> Vec<Message> {
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

fn with_convergence(cx: &Ctx, s: &mut Setup) -> Result<(), Diagnostic> {
    if let Some(c) = cx.c.convergence_us {
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
fn busiest<T: Copy>(
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
fn link(cx: &Ctx, probe: &dyn Fn() -> Vec<u64>) -> Result<PortId, Diagnostic> {
    let m = cx.m;
    let a = cx.c.a.as_deref().unwrap_or("busiest-spine-uplink");
    if a == "busiest-spine-uplink" {
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
    let bn =
        cx.c.b.as_deref().ok_or_else(|| err(&cx.path, "b", "a link needs both ends".into(), "add `b = \"NODE\"`"))?;
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
fn probe(m: &Model, msgs: &[Message], until: SimTime, seed: u64) -> Vec<u64> {
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

/// The collective a `collective` scenario runs (op, size, ranks, channels) and the number of
/// NICs per rank its busbw is bounded by: one per rank, or, with GPUs as the ranks, the NICs
/// of a node that the channels leave it on (each channel crosses on one). The flow engine's
/// `validate` runs the same collective through `rocelab_workload` directly.
pub fn collective_spec(m: &Model, c: &ScenarioConfig, path: &str) -> Result<(CollectiveSpec, u32), Vec<Diagnostic>> {
    let scale = crate::fabric::Scale::new(m, &c.hosts, path).map_err(|d| vec![d])?;
    let cx = Ctx { m, c, path: path.to_string(), seed: 0, scale };
    collective_spec_in(&cx).map(|(spec, nics, _)| (spec, nics)).map_err(|d| vec![d])
}

/// The same, with the number of ranks.
fn collective_spec_in(cx: &Ctx) -> Result<(CollectiveSpec, u32, usize), Diagnostic> {
    let (m, c) = (cx.m, cx.c);
    let hosts = &cx.scale.hosts;
    let n = hosts.len();
    let op_name = c.op.as_deref().unwrap_or("all_reduce");
    let op = rocelab_workload::parse_op(op_name).map_err(|e| err(&cx.path, "op", e, "e.g. op = \"all_reduce\""))?;
    let ranks = match c.ranks {
        None => None,
        Some(r) if r >= 2 && r as usize <= n => Some(hosts[..r as usize].to_vec()),
        Some(r) => {
            return Err(err(&cx.path, "ranks", format!("ranks = {r}, with {n} hosts"), &format!("use 2 to {n}")))
        }
    };
    let rank_count =
        ranks.as_ref().map_or(rocelab_workload::placement::placement(m).map(|p| p.ranks()).unwrap_or(n), |r| r.len());
    let size = cx.size("size_bytes", c.size_bytes, ((4u64 << 20) * rank_count as u64 / 8).clamp(1 << 20, 64 << 20))?;
    // NCCL's ring channels on these ranks, as every caller of a collective settles them.
    let spec = CollectiveSpec { channels: None, ranks, ..CollectiveSpec::new(op, size) };
    let resolved = spec.resolve(m).map_err(|d| {
        d.into_iter().next().unwrap_or_else(|| err(&cx.path, "op", format!("{op_name} cannot run here"), ""))
    })?;
    let channels = resolved.channels;
    let bound_nics = match (&spec.ranks, rocelab_workload::placement::placement(m)) {
        (None, Ok(rocelab_workload::placement::Placement::Gpus(g))) => {
            let per_node = g.nodes.iter().map(|n| n.len() as u32).min().unwrap_or(1);
            channels.min(per_node).max(1)
        }
        _ => 1,
    };
    Ok((CollectiveSpec { channels: Some(channels), ..spec }, bound_nics, rank_count))
}

pub fn build(cx: &Ctx) -> Result<Setup, Vec<Diagnostic>> {
    build_kind(cx).map_err(|d| vec![d])
}

fn build_kind(cx: &Ctx) -> Result<Setup, Diagnostic> {
    let c = cx.c;
    let m = cx.m;
    let sc = &cx.scale;
    let hosts = sc.hosts.clone();
    let n = hosts.len();
    match c.kind {
        ScenarioKind::Sustained => {
            let dur = cx.duration(200)?;
            let load = cx.load()?;
            let pattern = c.pattern.unwrap_or(SustainedPattern::Permutation);
            let mut s = Setup::new(Some(dur), dur);
            s.msgs = background(cx, pattern, &hosts, dur, load);
            s.marks.senders = hosts;
            s.param(
                "pattern",
                json!(if pattern == SustainedPattern::Permutation { "permutation" } else { "all-to-all" }),
            );
            s.param("load", json!(load));
            s.param("duration_us", json!(dur.as_us_f64()));
            Ok(s)
        }
        ScenarioKind::Incast => {
            let dst = cx.dst()?;
            let k = cx.fan_in(32, 1)?;
            let size = cx.size("size_bytes", c.size_bytes, (8 * sc.bdp_bytes).clamp(64 << 10, 4 << 20))?;
            let jitter = match c.jitter_us {
                Some(0.0) | None => SimTime::ZERO,
                v => cx.time("jitter_us", v, SimTime::ZERO)?,
            };
            let senders = cx.after(dst, k);
            let ideal = SimTime::from_secs_f64(k as f64 * size as f64 * 8.0 / (m.host_speed(dst).gbps() * 1e9));
            let mut s = Setup::new(None, ideal + ideal + jitter + sc.rtt);
            let mut rng = Rng::new(cx.seed, 0x696e_6361);
            for &h in &senders {
                let start = SimTime((rng.unit() * jitter.0 as f64) as u64);
                s.msgs.push(msg(h, dst, size, start));
            }
            s.marks = Marks { dst: Some(dst), senders, ideal, ..Marks::default() };
            s.param("fan_in", json!(k));
            s.param("size_bytes", json!(size));
            s.param("jitter_us", json!(jitter.as_us_f64()));
            s.param("dst", json!(m.node(dst).name));
            Ok(s)
        }
        ScenarioKind::Microburst => {
            let dst = cx.dst()?;
            let k = cx.fan_in(16, 1)?;
            let burst = cx.size("burst_bytes", c.burst_bytes, (2 * sc.bdp_bytes).clamp(16 << 10, 1 << 20))?;
            let duty = cx.fraction("duty_cycle", c.duty_cycle, 0.25, false)?;
            let on = sc.time_for(k as u64 * burst);
            let period = cx.time("period_us", c.period_us, SimTime((on.0 as f64 / duty) as u64))?;
            let dur = cx.time("duration_us", c.duration_us, SimTime(period.0 * 10))?;
            let bursts = dur.0.div_ceil(period.0.max(1)).max(1);
            if bursts * k as u64 > 1_000_000 {
                return Err(err(
                    &cx.path,
                    "period_us",
                    format!("{bursts} bursts of {k} senders"),
                    "use fewer bursts (a longer period or a shorter duration)",
                ));
            }
            let jitter = match c.jitter_us {
                Some(0.0) | None => SimTime::ZERO,
                v => cx.time("jitter_us", v, SimTime::ZERO)?,
            };
            let senders = cx.after(dst, k);
            let mut s = Setup::new(None, dur + period);
            let mut rng = Rng::new(cx.seed, 0x6d62_7572);
            for b in 0..bursts {
                for &h in &senders {
                    let start = SimTime(b * period.0 + (rng.unit() * jitter.0 as f64) as u64);
                    s.msgs.push(msg(h, dst, burst, start));
                }
            }
            s.marks = Marks { dst: Some(dst), senders, ..Marks::default() };
            s.param("fan_in", json!(k));
            s.param("burst_bytes", json!(burst));
            s.param("duty_cycle", json!(duty));
            s.param("period_us", json!(period.as_us_f64()));
            s.param("duration_us", json!(dur.as_us_f64()));
            s.param("bursts", json!(bursts));
            s.param("dst", json!(m.node(dst).name));
            Ok(s)
        }
        ScenarioKind::Hotspot => {
            let dur = cx.duration(200)?;
            let load = cx.load()?;
            let target = c.target.unwrap_or(HotspotTarget::Receiver);
            let mut s = Setup::new(Some(dur), dur);
            s.param("duration_us", json!(dur.as_us_f64()));
            s.param("load", json!(load));
            let mut rng = Rng::new(cx.seed, 0x686f_7473);
            match target {
                HotspotTarget::Receiver => {
                    if n < 3 {
                        return Err(err(
                            &cx.path,
                            "target",
                            "a receiver hotspot needs 3 hosts".into(),
                            "use target = \"uplink\"",
                        ));
                    }
                    let dst = cx.dst()?;
                    let k = cx.fan_in(8, 2)?;
                    let senders = cx.after(dst, k);
                    for &h in &senders {
                        s.msgs.extend(stream(cx, h, dst, dur, load, 1, &mut rng));
                    }
                    let hot = s.msgs.len();
                    let victims: Vec<NodeId> =
                        hosts.iter().copied().filter(|h| *h != dst && !senders.contains(h)).collect();
                    if victims.len() >= 2 {
                        s.msgs.extend(background(cx, SustainedPattern::Permutation, &victims, dur, load));
                    }
                    let port = m.port(m.node(dst).first_port_id()).peer;
                    s.marks = Marks {
                        dst: Some(dst),
                        senders,
                        others: victims,
                        port: Some(port),
                        flows_of_others: (hot..s.msgs.len()).collect(),
                        ..Marks::default()
                    };
                    s.param("target", json!("receiver"));
                    s.param("fan_in", json!(k));
                    s.param("dst", json!(m.node(dst).name));
                }
                HotspotTarget::Uplink => {
                    let leaf = fabric::leaf_of(m, hosts[0]);
                    let ups: Vec<PortId> =
                        fabric::spine_uplinks(m).into_iter().filter(|p| m.port(*p).node == leaf).collect();
                    if ups.is_empty() {
                        return Err(err(
                            &cx.path,
                            "target",
                            "the first host's leaf has no spine uplinks".into(),
                            "use target = \"receiver\"",
                        ));
                    }
                    for &p in &ups[1..] {
                        s.faults.push(Fault {
                            at: SimTime::ZERO,
                            action: FaultAction::Route { ports: (p.0, m.port(p).peer.0), withdrawn: true },
                        });
                    }
                    let local: Vec<NodeId> = hosts.iter().copied().filter(|h| fabric::leaf_of(m, *h) == leaf).collect();
                    let remote: Vec<NodeId> =
                        hosts.iter().copied().filter(|h| fabric::leaf_of(m, *h) != leaf).collect();
                    if remote.is_empty() {
                        return Err(err(
                            &cx.path,
                            "hosts",
                            "every host is on one leaf".into(),
                            "include hosts of another leaf",
                        ));
                    }
                    for (i, &h) in local.iter().enumerate() {
                        s.msgs.extend(stream(cx, h, remote[i % remote.len()], dur, load, 1, &mut rng));
                    }
                    s.marks = Marks { senders: local, port: Some(ups[0]), ..Marks::default() };
                    s.param("target", json!("uplink"));
                    s.param("uplink", json!(m.port_name(ups[0])));
                }
                HotspotTarget::CnpPath => {
                    // `a` streams into the hot receiver `dst` (k senders beside it there),
                    // while k others stream into `a`: the receiver's CNPs for `a`'s flow
                    // queue at the egress toward `a`, behind that incast's data.
                    let k = cx.fan_in(4, 0)?.min((n.saturating_sub(2)) / 2);
                    if k == 0 {
                        return Err(err(
                            &cx.path,
                            "target",
                            "a CNP-path hotspot needs 4 hosts".into(),
                            "use target = \"receiver\"",
                        ));
                    }
                    let dst = cx.dst()?;
                    let others = cx.after(dst, 2 * k + 1);
                    let a = others[0];
                    let (into_a, into_dst) = others[1..].split_at(k);
                    s.msgs.extend(stream(cx, a, dst, dur, load, 1, &mut rng));
                    for &h in into_dst {
                        s.msgs.extend(stream(cx, h, dst, dur, load, 1, &mut rng));
                    }
                    let hot = s.msgs.len();
                    for &h in into_a {
                        s.msgs.extend(stream(cx, h, a, dur, load, 1, &mut rng));
                    }
                    let mut senders = vec![a];
                    senders.extend_from_slice(into_dst);
                    s.marks = Marks {
                        dst: Some(dst),
                        senders,
                        others: into_a.to_vec(),
                        port: Some(m.port(m.node(dst).first_port_id()).peer),
                        flows_of_others: (hot..s.msgs.len()).collect(),
                        ..Marks::default()
                    };
                    s.param("target", json!("cnp-path"));
                    s.param("fan_in", json!(k));
                    s.param("dst", json!(m.node(dst).name));
                    s.param("cnp_sender", json!(m.node(a).name));
                    s.param("cnp_path_egress", json!(m.port_name(m.port(m.node(a).first_port_id()).peer)));
                }
            }
            Ok(s)
        }
        ScenarioKind::SlowReceiver => {
            // Long enough for a switch buffer to fill twice over at one line rate, so pauses
            // have the time to climb past the first hop.
            let fill = sc.time_for(2 * sc.buffer_bytes);
            let dur =
                cx.time("duration_us", c.duration_us, (SimTime::from_us(20) + fill).max(SimTime::from_us(400)))?;
            let load = cx.load()?;
            let dst = cx.dst()?;
            let k = cx.fan_in(4, 1)?;
            let f = cx.fraction("drain_fraction", c.drain_fraction, 0.0, true)?;
            let at = cx.time("at_us", c.at_us, SimTime::from_us(20).min(SimTime(dur.0 / 10)))?;
            let period = cx.time("period_us", c.period_us, SimTime::from_us(20))?;
            // The farthest hosts first: their pauses have the most hops to travel.
            let d = fabric::distances(m, dst);
            let mut cand: Vec<NodeId> = hosts.iter().copied().filter(|h| *h != dst).collect();
            cand.sort_by_key(|h| std::cmp::Reverse(d[h.idx()]));
            let senders: Vec<NodeId> = cand.into_iter().take(k).collect();
            let mut s = Setup::new(Some(dur), dur);
            let mut rng = Rng::new(cx.seed, 0x736c_6f77);
            for &h in &senders {
                s.msgs.extend(stream(cx, h, dst, dur, load, 1, &mut rng));
            }
            let stall = |at| Fault { at, action: FaultAction::Host { host: dst, stall: true } };
            let resume = |at| Fault { at, action: FaultAction::Host { host: dst, stall: false } };
            if f == 0.0 {
                s.faults.push(stall(at));
            } else if f < 1.0 {
                let mut t = at;
                let mut cycles = 0;
                while t < dur && cycles < 100_000 {
                    s.faults.push(stall(t));
                    s.faults.push(resume(t + SimTime(((1.0 - f) * period.0 as f64) as u64)));
                    t += period;
                    cycles += 1;
                }
            }
            match c.watchdog {
                Some(true) => {
                    let det = cx.time("watchdog_detection_us", c.watchdog_detection_us, SimTime::from_us(100))?;
                    // Polled every tenth of it: below 1 µs the polls would swamp the run.
                    if det < SimTime::from_us(1) {
                        return Err(err(
                            &cx.path,
                            "watchdog_detection_us",
                            format!("watchdog_detection_us = {} is too short", c.watchdog_detection_us.unwrap_or(0.0)),
                            "use 1 µs or more (SONiC's default is 200 ms)",
                        ));
                    }
                    let ms = det.as_secs_f64() * 1e3;
                    s.watchdog = Some(PfcWatchdogConfig {
                        enabled: true,
                        detection_ms: ms,
                        restoration_ms: ms,
                        poll_ms: ms / 10.0,
                        action: WatchdogAction::Drop,
                    });
                    s.param("watchdog_detection_us", json!(det.as_us_f64()));
                }
                Some(false) => {
                    s.watchdog = Some(PfcWatchdogConfig { enabled: false, ..m.config.qos.pfc_watchdog.clone() });
                }
                None => {}
            }
            let wd = s.watchdog.as_ref().unwrap_or(&m.config.qos.pfc_watchdog);
            s.param("watchdog", json!(wd.enabled));
            s.marks = Marks { at, dst: Some(dst), senders, ..Marks::default() };
            s.param("drain_fraction", json!(f));
            s.param("fan_in", json!(k));
            s.param("at_us", json!(at.as_us_f64()));
            s.param("duration_us", json!(dur.as_us_f64()));
            s.param("dst", json!(m.node(dst).name));
            Ok(s)
        }
        ScenarioKind::LinkLoss | ScenarioKind::LinkFlap | ScenarioKind::SwitchReboot | ScenarioKind::RoutingChange => {
            let dur = cx.duration(400)?;
            let load = cx.load()?;
            let at_default = if c.kind == ScenarioKind::RoutingChange { dur.0 / 2 } else { dur.0 / 4 };
            let at = cx.time("at_us", c.at_us, SimTime(at_default))?;
            if at >= dur {
                return Err(err(
                    &cx.path,
                    "at_us",
                    format!("at {} µs is not before the end ({} µs)", at.as_us_f64(), dur.as_us_f64()),
                    "make at_us smaller than duration_us",
                ));
            }
            let mut s = Setup::new(Some(dur), dur);
            s.msgs = background(cx, SustainedPattern::Permutation, &hosts, dur, load);
            with_convergence(cx, &mut s)?;
            s.param("duration_us", json!(dur.as_us_f64()));
            s.param("at_us", json!(at.as_us_f64()));
            s.param("load", json!(load));
            s.marks.at = at;
            let msgs = s.msgs.clone();
            let seed = cx.seed;
            let probe_tx = || probe(m, &msgs, at, seed);
            let link_fault = |p: PortId, at: SimTime, up: bool| Fault {
                at,
                action: FaultAction::Link { ports: (p.0, m.port(p).peer.0), up },
            };
            match c.kind {
                ScenarioKind::LinkLoss => {
                    let p = link(cx, &probe_tx)?;
                    s.faults.push(link_fault(p, at, false));
                    s.marks.port = Some(p);
                    s.param("link", json!(format!("{} -- {}", m.port_name(p), m.port_name(m.port(p).peer))));
                }
                ScenarioKind::LinkFlap => {
                    let p = link(cx, &probe_tx)?;
                    let count = match c.count {
                        None => 3,
                        Some(k) if (1..=10_000).contains(&k) => k,
                        Some(k) => return Err(err(&cx.path, "count", format!("count = {k}"), "use 1 to 10000")),
                    };
                    let period = cx.time("period_us", c.period_us, SimTime(dur.0 / 8))?;
                    for i in 0..count as u64 {
                        let down = at + SimTime(i * period.0);
                        s.faults.push(link_fault(p, down, false));
                        s.faults.push(link_fault(p, down + SimTime(period.0 / 2), true));
                    }
                    s.marks.port = Some(p);
                    s.param("link", json!(format!("{} -- {}", m.port_name(p), m.port_name(m.port(p).peer))));
                    s.param("count", json!(count));
                    s.param("period_us", json!(period.as_us_f64()));
                }
                ScenarioKind::SwitchReboot => {
                    let a = c.a.as_deref().unwrap_or("busiest-spine");
                    let sw = if a == "busiest-spine" {
                        let sp = fabric::spines(m);
                        busiest(cx, sp, "spines", &probe_tx, |tx, n| fabric::node_tx(m, tx, n), |n| n.0)?
                    } else {
                        match m.node_by_name(a) {
                            Some(n) if !m.node(n).is_host() => n,
                            Some(_) => {
                                return Err(err(&cx.path, "a", format!("`{a}` is a host"), "a reboot takes a switch"))
                            }
                            None => {
                                return Err(err(
                                    &cx.path,
                                    "a",
                                    format!("no switch named `{a}`"),
                                    "use a switch name, or \"busiest-spine\"",
                                ))
                            }
                        }
                    };
                    let down = cx.time("down_us", c.down_us, SimTime(dur.0 / 4))?;
                    for p in m.node(sw).ports() {
                        s.faults.push(link_fault(p, at, false));
                        s.faults.push(link_fault(p, at + down, true));
                    }
                    s.marks.switch = Some(sw);
                    s.param("switch", json!(m.node(sw).name));
                    s.param("down_us", json!(down.as_us_f64()));
                }
                _ => {
                    let change = c.change.unwrap_or(RoutingChangeKind::HashSeed);
                    match change {
                        RoutingChangeKind::HashSeed => {
                            let seed = c.seed.unwrap_or(m.config.routing.ecmp_seed.wrapping_add(1));
                            s.faults.push(Fault { at, action: FaultAction::Reseed { switch: None, seed } });
                            s.param("change", json!("hash-seed"));
                            s.param("seed", json!(seed));
                        }
                        RoutingChangeKind::HashFields => {
                            s.fault_tables.push(FaultConfig {
                                fields: Some(vec![
                                    HashField::SrcIp,
                                    HashField::DstIp,
                                    HashField::Protocol,
                                    HashField::DstPort,
                                ]),
                                ..FaultConfig::new(FaultKind::EcmpHashFields, at.as_us_f64(), "*")
                            });
                            s.param("change", json!("hash-fields"));
                        }
                        RoutingChangeKind::RouteWithdraw => {
                            let p = link(cx, &probe_tx)?;
                            s.faults.push(Fault {
                                at,
                                action: FaultAction::Route { ports: (p.0, m.port(p).peer.0), withdrawn: true },
                            });
                            s.marks.port = Some(p);
                            s.param("change", json!("route-withdraw"));
                            s.param("link", json!(format!("{} -- {}", m.port_name(p), m.port_name(m.port(p).peer))));
                        }
                    }
                }
            }
            Ok(s)
        }
        ScenarioKind::FirmwareMix => {
            let dur = cx.duration(200)?;
            let dst = cx.dst()?;
            let k = cx.fan_in(8, 1)?;
            let share = cx.fraction("share", c.share, 0.25, false)?;
            let senders = cx.after(dst, k);
            // Every 1/share-th sender, at least one.
            let mut others: Vec<NodeId> = (0..k)
                .filter(|&i| ((i + 1) as f64 * share).floor() > (i as f64 * share).floor())
                .map(|i| senders[i])
                .collect();
            if others.is_empty() {
                others.push(senders[k - 1]);
            }
            let cc = c.congestion_control.unwrap_or(if c.dcqcn.is_some() {
                CongestionControl::Dcqcn
            } else {
                CongestionControl::None
            });
            let mut nic = m.config.nic.clone();
            nic.congestion_control = Some(cc);
            if let Some(d) = &c.dcqcn {
                // The given keys over the fleet's.
                let mut base = serde_json::to_value(&nic.dcqcn).unwrap_or_default();
                if let (Some(b), Some(o)) =
                    (base.as_object_mut(), serde_json::to_value(d).unwrap_or_default().as_object())
                {
                    for (key, v) in o.iter().filter(|(_, v)| !v.is_null()) {
                        b.insert(key.clone(), v.clone());
                    }
                }
                nic.dcqcn = serde_json::from_value(base).unwrap_or_else(|_| d.clone());
            }
            let names: Vec<String> = others.iter().map(|h| m.node(*h).name.clone()).collect();
            let mut s = Setup::new(Some(dur), dur);
            for &h in &senders {
                s.msgs.push(msg(h, dst, sc.bytes_in(dur, 1.0), SimTime::ZERO));
            }
            s.marks = Marks {
                dst: Some(dst),
                flows_of_others: senders
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| others.contains(h))
                    .map(|(i, _)| i)
                    .collect(),
                senders,
                others,
                ..Marks::default()
            };
            s.profile = Some((nic, names.clone()));
            s.param("share", json!(share));
            s.param("congestion_control", json!(if cc == CongestionControl::None { "none" } else { "dcqcn" }));
            if let Some(d) = &c.dcqcn {
                s.param("dcqcn", serde_json::to_value(d).unwrap_or_default());
            }
            s.param("other_profile_hosts", json!(names));
            s.param("fan_in", json!(k));
            s.param("duration_us", json!(dur.as_us_f64()));
            s.param("dst", json!(m.node(dst).name));
            Ok(s)
        }
        ScenarioKind::Mixed => {
            let dur = cx.duration(400)?;
            let dst = cx.dst()?;
            let k = cx.fan_in(((n - 1) / 2).clamp(1, 4), 2)?;
            let most = n - 1 - k;
            let t = match c.tcp_senders {
                None => k.min(most),
                Some(t) if t >= 1 && t as usize <= most => t as usize,
                Some(t) => {
                    return Err(err(
                        &cx.path,
                        "tcp_senders",
                        format!("tcp_senders = {t}, with {most} hosts left"),
                        &format!("use 1 to {most}"),
                    ))
                }
            };
            let size = cx.size("size_bytes", c.size_bytes, (8 * sc.bdp_bytes).clamp(64 << 10, 1 << 20))?;
            let shared = c.shared_class.unwrap_or(false);
            let q = &m.qos;
            let class = if shared {
                q.rdma_class()
            } else {
                match &c.tcp_class {
                    Some(name) => {
                        let i = q.class_by_name(name).ok_or_else(|| {
                            let names: Vec<&str> = q.classes.iter().map(|c| c.name.as_str()).collect();
                            err(
                                &cx.path,
                                "tcp_class",
                                format!("no traffic class `{name}`"),
                                &format!("use one of: {}", names.join(", ")),
                            )
                        })?;
                        i
                    }
                    None => {
                        use rocelab_model::config::TrafficKind;
                        let lossy: Vec<usize> = (0..q.classes.len()).filter(|i| !q.classes[*i].lossless).collect();
                        let carries = |i: usize, k: TrafficKind| q.classes[i].carries.contains(&k);
                        // A lossy class for TCP; else the fabric's own TCP class, lossless as
                        // it may be (a misconfiguration the run then shows); else a lossy one.
                        let pick = lossy
                            .iter()
                            .copied()
                            .find(|i| carries(*i, TrafficKind::Tcp))
                            .or_else(|| (0..q.classes.len()).find(|i| carries(*i, TrafficKind::Tcp)))
                            .or_else(|| {
                                lossy.iter().copied().find(|i| {
                                    !carries(*i, TrafficKind::Cnp)
                                        && q.classes[*i].queue != q.classes[q.rdma_class()].queue
                                })
                            });
                        pick.ok_or_else(|| {
                            err(
                                &cx.path,
                                "tcp_class",
                                "the fabric has no lossy class for TCP".into(),
                                "declare one in [[qos.class]], or set shared_class = true",
                            )
                        })?
                    }
                }
            };
            let others = cx.after(dst, k + t);
            let (rdma, tcps) = others.split_at(k);
            let at = SimTime(dur.0 / 4);
            let mut s = Setup::new(Some(dur), dur);
            for &h in rdma {
                s.msgs.push(msg(h, dst, size, at));
            }
            for &h in tcps {
                s.msgs.push(Message { class: Some(class), ..msg(h, dst, sc.bytes_in(dur, 1.0), SimTime::ZERO) });
            }
            let tcp = if c.tcp_ecn.unwrap_or(true) { Transport::Dctcp } else { Transport::LossBased };
            s.transport = (0..s.msgs.len()).map(|i| if i >= k { tcp } else { Transport::Rdma }).collect();
            s.marks = Marks { at, dst: Some(dst), senders: rdma.to_vec(), others: tcps.to_vec(), ..Marks::default() };
            s.param("fan_in", json!(k));
            s.param("tcp_senders", json!(t));
            s.param("size_bytes", json!(size));
            s.param("tcp_class", json!(q.classes[class].name));
            s.param("tcp_class_lossless", json!(q.classes[class].lossless));
            s.param("tcp_priority", json!(q.classes[class].priority));
            s.param("tcp_ecn", json!(tcp == Transport::Dctcp));
            s.param("shared_class", json!(shared));
            s.param("duration_us", json!(dur.as_us_f64()));
            s.param("dst", json!(m.node(dst).name));
            Ok(s)
        }
        ScenarioKind::Collective => {
            let (spec, bound_nics, rank_count) = collective_spec_in(cx)?;
            let (op, size, channels) = (spec.op, spec.bytes, spec.channels.unwrap_or(2));
            let op_name = c.op.as_deref().unwrap_or("all_reduce");
            // Ring time at line rate, plus a round trip per step.
            let steps = op.ring_steps(rank_count as u32).max(1);
            let ideal = sc.time_for((size as f64 * 2.0) as u64) + SimTime(sc.rtt.0 * steps);
            let mut s = Setup::new(None, ideal + ideal);
            s.collective = Some(spec);
            s.param("op", json!(rocelab_workload::nccl_name(op).unwrap_or(op_name)));
            s.param("size_bytes", json!(size));
            s.param("ranks", json!(rank_count));
            s.param("channels", json!(channels));
            s.param("busbw_bound_nics", json!(bound_nics));
            if let Some(b) = &c.beside {
                let (i, other) =
                    m.config.scenario.iter().enumerate().find(|(_, o)| o.display_name() == b).ok_or_else(|| {
                        err(
                            &cx.path,
                            "beside",
                            format!("no [[scenario]] named `{b}`"),
                            "name a [[scenario]] of this file",
                        )
                    })?;
                if !matches!(
                    other.kind,
                    ScenarioKind::Sustained | ScenarioKind::Incast | ScenarioKind::Microburst | ScenarioKind::Hotspot
                ) {
                    return Err(err(
                        &cx.path,
                        "beside",
                        format!("`{b}` is a {} scenario", other.kind.name()),
                        "run beside a sustained, incast, microburst or hotspot scenario",
                    ));
                }
                let ocx = Ctx {
                    m,
                    c: other,
                    path: format!("scenario[{i}]"),
                    seed: cx.seed,
                    scale: Scale::new(m, &other.hosts, &format!("scenario[{i}]"))?,
                };
                let o = build_kind(&ocx)?;
                s.msgs = o.msgs;
                s.faults = o.faults;
                s.param("beside", json!(b));
            }
            Ok(s)
        }
    }
}
