//! Traffic: the `[[traffic]]` tables of a fabric file expanded into flows.
//!
//! Patterns: one explicit flow, N:1 incast, a random permutation (a seeded derangement: every
//! host sends to exactly one other and receives from exactly one), and all-to-all. Host sets
//! accept glob patterns. Collectives and stress scenarios build on the same `FlowSpec`.

use crate::rng::Rng;
use rocelab_model::config::{TrafficConfig, TrafficPattern};
use rocelab_model::{Diagnostic, Model, NodeId, SimTime};

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
    /// Linux's TCP as it runs by default: a CUBIC window (RFC 9438), not ECN-capable, with
    /// SACK-style recovery (the receiver keeps what arrives past a hole; the sender resends
    /// only the holes), delayed ACKs (every second segment, or after 40 ms) and Linux's
    /// retransmission timeout (RTT-based, at least 200 ms, doubling).
    Cubic,
}

impl Transport {
    /// A TCP-like window paces it (no DCQCN, no CNPs).
    pub fn is_tcp(self) -> bool {
        self != Transport::Rdma
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

/// Largest flow the engine takes (1 TB): the loader's bound on every message.
pub const MAX_FLOW_BYTES: u64 = rocelab_model::intent::MAX_MESSAGE_BYTES;

/// Table `i`'s flows: the loader's resolution of it (hosts, class, start, bounds), expanded.
fn expand_one(m: &Model, t: &TrafficConfig, i: usize, p: &str, seed: u64) -> Result<Vec<FlowSpec>, Diagnostic> {
    let r = rocelab_model::intent::traffic_table(m, t, p)?;
    let mk = |src, dst| FlowSpec {
        src,
        dst,
        size_bytes: r.size_bytes,
        start: r.start,
        class: r.class,
        qps: r.qps,
        origin: i,
        tag: 0,
        sport: None,
        transport: Transport::Rdma,
    };
    Ok(match r.pattern {
        // The resolution sets `src` and `dst` for a flow and `dst` for an incast.
        TrafficPattern::Flow => r.src.zip(r.dst).map(|(s, d)| mk(s, d)).into_iter().collect(),
        TrafficPattern::Incast => r.dst.map_or_else(Vec::new, |d| r.hosts.iter().map(|&s| mk(s, d)).collect()),
        TrafficPattern::Permutation => {
            let hosts = &r.hosts;
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
            let hosts = &r.hosts;
            let mut v = Vec::with_capacity(hosts.len() * hosts.len());
            for &s in hosts {
                for &d in hosts {
                    if s != d {
                        v.push(mk(s, d));
                    }
                }
            }
            v
        }
    })
}
