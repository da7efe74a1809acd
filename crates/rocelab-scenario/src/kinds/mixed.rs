//! `mixed`: TCP-like flows beside RDMA, in their own class or forced into RDMA's
//! (parameters: `rocelab_model::scenario::mixed`).

use super::Kind;
use crate::check::*;
use crate::evaluate::*;
use crate::setup::*;
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::mixed::*;
use rocelab_model::{Diagnostic, NodeId, SimTime};
use rocelab_sim::traffic::Transport;
use rocelab_sim::workload::Message;
use rocelab_sim::Snapshot;
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (m, sc) = (cx.m, &cx.scale);
        let hosts = cx.scale.hosts.clone();
        let n = hosts.len();
        let dur = cx.duration(self.duration_us, DURATION_US)?;
        let dst = cx.dst(&self.dst)?;
        let k = cx.fan_in(self.fan_in, ((n - 1) / 2).clamp(1, FAN_IN as usize), 2)?;
        let most = n - 1 - k;
        let t = match self.tcp_senders {
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
        let size =
            cx.size("size_bytes", self.size_bytes, (SIZE_BDPS * sc.bdp_bytes).clamp(SIZE_MIN_BYTES, SIZE_MAX_BYTES))?;
        let shared = self.shared_class.unwrap_or(false);
        let q = &m.qos;
        let class = if shared {
            q.rdma_class()
        } else {
            match &self.tcp_class {
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
                                !carries(*i, TrafficKind::Cnp) && q.classes[*i].queue != q.classes[q.rdma_class()].queue
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
        let at = SimTime(dur.0 / AT_DIVISOR);
        let mut s = Setup::new(Some(dur), dur);
        for &h in rdma {
            s.msgs.push(msg(h, dst, size, at));
        }
        for &h in tcps {
            s.msgs.push(Message { class: Some(class), ..msg(h, dst, sc.bytes_in(dur, 1.0), SimTime::ZERO) });
        }
        let tcp = if self.tcp_ecn.unwrap_or(true) { Transport::Dctcp } else { Transport::LossBased };
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

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let (cx, m, s, snap) = (e.cx, e.m, e.s, e.o.snap);
        let k = &s.marks;
        let now = snap.now;

        let k = k.senders.len();
        let fct = |snap: &Snapshot| -> Option<f64> {
            let v: Option<Vec<f64>> =
                snap.flows.iter().take(k).map(|f| f.finish.map(|e| e.saturating_sub(f.start).as_us_f64())).collect();
            v.and_then(|v| mean(&v))
        };
        let with = fct(snap);
        // The reference: the RDMA messages alone, same seed.
        let rdma: Vec<rocelab_sim::workload::Message> =
            s.msgs.iter().zip(&s.transport).filter(|(_, t)| !t.is_tcp()).map(|(m, _)| m.clone()).collect();
        let w = crate::Beside { main: None, n_bg: rdma.len(), bg: rdma, transport: vec![] };
        let opts = rocelab_sim::SimOptions { seed: cx.seed, duration: s.duration, ..Default::default() };
        let alone = rocelab_sim::Sim::with_workload(m, Box::new(w), Vec::new(), opts).ok().map(|mut sim| {
            sim.run(&mut |_| {});
            sim.snapshot()
        });
        let base = alone.as_ref().and_then(fct);
        e.put("rdma_fct_us", with);
        e.put("rdma_fct_alone_us", base);
        let tcp: Vec<&rocelab_sim::snapshot::FlowRecord> = snap.flows.iter().skip(k).collect();
        let dst = s.marks.dst.unwrap_or(NodeId(0));
        let line = m.host_speed(dst).gbps() * 1e9;
        let tcp_bytes: u64 = tcp.iter().map(|f| f.delivered_bytes).sum();
        e.put("tcp_goodput_fraction", Some(tcp_bytes as f64 * 8.0 / (line * now.as_secs_f64().max(1e-12))));
        e.put("tcp_retransmitted_packets", Some(tcp.iter().map(|f| f.retransmitted_packets).sum::<u64>() as f64));
        let class_drops = |name: &str| -> Option<f64> {
            let c = m.qos.class_by_name(name)?;
            let q = m.qos.classes[c].queue as usize;
            Some(snap.ports.iter().map(|p| p.drops[q].iter().sum::<u64>()).sum::<u64>() as f64)
        };
        let tcp_class = s.params.get("tcp_class").and_then(|v| v.as_str()).unwrap_or("");
        e.put("tcp_class_drops", class_drops(tcp_class));
        // Pause frames sent for TCP's priority: PFC braking TCP (it is in a lossless class).
        let prio = s.params.get("tcp_priority").and_then(|v| v.as_u64()).unwrap_or(0).min(7) as usize;
        e.put("tcp_priority_pause_frames", Some(snap.ports.iter().map(|p| p.pfc_tx[prio]).sum::<u64>() as f64));
        e.put("rdma_class_drops", class_drops(&m.qos.classes[m.qos.rdma_class()].name));
        with.zip(base).filter(|(_, b)| *b > 0.0).map(|(w, b)| w / b)
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "mixed.rdma-lossless", kind: ScenarioKind::Mixed, figure: Figure::Metric("rdma_class_drops"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: "TCP beside RDMA may lose packets in its lossy class; the RDMA class none" },
    CheckDef { name: "mixed.pfc-on-tcp", kind: ScenarioKind::Mixed, figure: Figure::Metric("tcp_priority_pause_frames"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "PFC frames", why: PFC_ON_TCP },
    CheckDef { name: "mixed.rdma-slowdown", kind: ScenarioKind::Mixed, figure: Figure::Headline, cmp: Cmp::AtMost, limit: None, unit: "RDMA completion time beside TCP / alone", why: "RDMA completion time beside TCP over alone: what sharing links costs RDMA" },
];
