//! Traffic: the `[[traffic]]` tables of a fabric file expanded into flows.
//!
//! Patterns: one explicit flow, N:1 incast, a random permutation (a seeded derangement: every
//! host sends to exactly one other and receives from exactly one), and all-to-all. Host sets
//! accept glob patterns. Collectives and stress scenarios build on the same `FlowSpec`.

use crate::rng::Rng;
use rocelab_model::config::{TrafficConfig, TrafficPattern};
use rocelab_model::{glob_match, Diagnostic, Model, NodeId, SimTime};

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub src: NodeId,
    pub dst: NodeId,
    pub size_bytes: u64,
    pub start: SimTime,
    /// Switch-side class index.
    pub class: usize,
    /// Queue pairs the flow is striped over (each with its own UDP source port).
    pub qps: u32,
    /// Index of the `[[traffic]]` table it came from (`usize::MAX`: posted by a workload).
    pub origin: usize,
    /// The workload's label (0 for `[[traffic]]`).
    pub tag: u64,
    /// UDP source port of its first QP (QP k takes the k-th port after it, wrapping inside
    /// 49152..=65535); `None`: drawn from the run's seed, one per QP.
    pub sport: Option<u16>,
    /// How the sender is paced: RDMA unless posted with `Net::post_tcp` or `Net::post_with`.
    pub transport: Transport,
}

impl FlowSpec {
    /// Its QPs' payload sizes, `(k, bytes)`: an equal share each, the remainder on QP 0, and
    /// no QP for a share of 0 bytes (more QPs than bytes).
    pub fn qp_sizes(&self) -> impl Iterator<Item = (u32, u64)> {
        let (size, qps) = (self.size_bytes, self.qps as u64);
        let per = size / qps;
        (0..self.qps).map(move |k| (k, if k == 0 { per + size % qps } else { per })).filter(|&(_, b)| b > 0)
    }
}

/// How a flow's sender is paced and what the switches may mark on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// RDMA RC: DCQCN where the NIC runs it, CE marks answered with CNPs, go-back-N.
    #[default]
    Rdma,
    /// TCP-like with ECN: a DCTCP window (`dctcp`, RFC 8257), CE marks echoed on ACKs.
    Dctcp,
    /// TCP-like without ECN: its packets are not ECN-capable, so no switch can mark them, and
    /// the same window reacts to loss alone, as Reno does (RFC 5681). This is Linux's TCP
    /// wherever ECN was not negotiated, its default (`net.ipv4.tcp_ecn = 2`: ECN only when the
    /// peer asks): most storage, checkpoint and management traffic.
    LossBased,
}

impl Transport {
    /// A TCP-like window paces it (no DCQCN, no CNPs).
    pub fn is_tcp(self) -> bool {
        self != Transport::Rdma
    }
}

fn host_named(m: &Model, name: &str, path: String) -> Result<NodeId, Diagnostic> {
    match m.node_by_name(name) {
        Some(id) if m.node(id).is_host() => Ok(id),
        Some(_) => {
            Err(Diagnostic::new(path, format!("`{name}` is a switch, not a host"), "traffic runs between hosts (NICs)"))
        }
        None => {
            let names: Vec<String> = m.hosts().map(|h| m.node(h).name.clone()).collect();
            let near = rocelab_model::topology::closest(name, names.iter());
            Err(Diagnostic::new(
                path,
                format!("no host named `{name}`"),
                match near {
                    Some(n) => format!("did you mean `{n}`? `rocelab topo --format json` lists the hosts"),
                    None => "host names are listed by `rocelab topo --format dot`".to_string(),
                },
            ))
        }
    }
}

fn host_set(m: &Model, pats: &Option<Vec<String>>, path: &str) -> Result<Vec<NodeId>, Diagnostic> {
    let all: Vec<NodeId> = m.hosts().collect();
    match pats {
        None => Ok(all),
        Some(ps) => {
            let v: Vec<NodeId> =
                all.into_iter().filter(|h| ps.iter().any(|p| glob_match(p, &m.node(*h).name))).collect();
            if v.is_empty() {
                Err(Diagnostic::new(
                    format!("{path}.hosts"),
                    format!("the patterns {ps:?} match no host"),
                    "patterns use `*` and `?`, e.g. \"node1*-nic0\"",
                ))
            } else {
                Ok(v)
            }
        }
    }
}

/// Expands the traffic tables; `seed` drives permutations.
pub fn expand(m: &Model, traffic: &[TrafficConfig], seed: u64) -> Result<Vec<FlowSpec>, Vec<Diagnostic>> {
    let mut flows = Vec::new();
    let mut errs = Vec::new();
    for (i, t) in traffic.iter().enumerate() {
        let p = format!("traffic[{i}]");
        match expand_one(m, t, i, &p, seed) {
            Ok(mut f) => flows.append(&mut f),
            Err(d) => errs.push(d),
        }
    }
    if errs.is_empty() {
        Ok(flows)
    } else {
        Err(errs)
    }
}

/// Largest flow the engine takes (1 TB).
pub const MAX_FLOW_BYTES: u64 = 1_000_000_000_000;

fn expand_one(m: &Model, t: &TrafficConfig, i: usize, p: &str, seed: u64) -> Result<Vec<FlowSpec>, Diagnostic> {
    if t.size_bytes == 0 {
        return Err(Diagnostic::new(format!("{p}.size_bytes"), "a flow of 0 bytes", "give the message size in bytes"));
    }
    // The engine numbers a QP's packets with u32 PSNs; 1 TB is far beyond any collective's
    // message and keeps every QP well inside that range at any MTU.
    if t.size_bytes > MAX_FLOW_BYTES {
        return Err(Diagnostic::new(
            format!("{p}.size_bytes"),
            format!("a flow of {} bytes is more than the 1 TB the engine takes", t.size_bytes),
            "split it into several flows, or shorten the run with duration_us and a smaller size",
        ));
    }
    let start_us = t.start_us.unwrap_or(0.0);
    if !(start_us.is_finite() && (0.0..1e9).contains(&start_us)) {
        return Err(Diagnostic::new(
            format!("{p}.start_us"),
            format!("start time {start_us} µs is not valid"),
            "use a time >= 0 in µs",
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
    if qps == 0 || qps > 1024 {
        return Err(Diagnostic::new(format!("{p}.qps"), format!("{qps} queue pairs per flow"), "use 1 to 1024"));
    }
    let start = SimTime::from_secs_f64(start_us * 1e-6);
    let mk = |src, dst| FlowSpec {
        src,
        dst,
        size_bytes: t.size_bytes,
        start,
        class,
        qps,
        origin: i,
        tag: 0,
        sport: None,
        transport: Transport::Rdma,
    };
    let need = |v: &Option<String>, f: &str| {
        v.clone().ok_or_else(|| {
            Diagnostic::new(
                format!("{p}.{f}"),
                format!("pattern `{:?}` needs `{f}`", t.pattern),
                format!("add `{f} = \"HOST\"`"),
            )
        })
    };
    Ok(match t.pattern {
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
            vec![mk(s, d)]
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
            senders.into_iter().map(|s| mk(s, d)).collect()
        }
        TrafficPattern::Permutation => {
            let hosts = host_set(m, &t.hosts, p)?;
            if hosts.len() < 2 {
                return Err(Diagnostic::new(
                    format!("{p}.hosts"),
                    "a permutation needs at least 2 hosts",
                    "widen `hosts`",
                ));
            }
            // Sattolo's algorithm: a uniformly random cyclic permutation, so no host maps to itself.
            let mut perm: Vec<usize> = (0..hosts.len()).collect();
            let mut rng = Rng::new(seed, 0x7065_726d ^ i as u64);
            for k in (1..perm.len()).rev() {
                let j = rng.below(k as u64) as usize;
                perm.swap(k, j);
            }
            hosts.iter().enumerate().map(|(k, &s)| mk(s, hosts[perm[k]])).collect()
        }
        TrafficPattern::AllToAll => {
            let hosts = host_set(m, &t.hosts, p)?;
            let mut v = Vec::with_capacity(hosts.len() * hosts.len());
            for &s in &hosts {
                for &d in &hosts {
                    if s != d {
                        v.push(mk(s, d));
                    }
                }
            }
            v
        }
    })
}
