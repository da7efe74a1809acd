//! The checks, grouped by what they read. Each `check` emits findings for several codes; the
//! registry holds their severity and title.

use crate::{Ctx, Findings};
use rocelab_model::config::TrafficKind;
use rocelab_model::{NicProfile, Role, TrafficClass};

mod buffer;
mod ecn;
mod fleet;
mod host;
pub mod ib;
pub(crate) mod lb;
mod planes;
mod qos;
mod topo;
mod uet;

pub fn run_all(cx: &Ctx, out: &mut Findings) {
    if cx.model.is_ib() {
        // InfiniBand: no PFC, ECN, DSCP, CNP class or headroom; the VL/SL rules instead, and
        // what is not about the link layer (topology, firmware).
        ib::check(cx, out);
        fleet::check(cx, out);
        topo::check(cx, out);
        return;
    }
    qos::check(cx, out);
    host::check(cx, out);
    ecn::check(cx, out);
    buffer::check(cx, out);
    fleet::check(cx, out);
    topo::check(cx, out);
    lb::check(cx, out);
    uet::check(cx, out);
}

/// Key path of class `i`.
pub(crate) fn class_path(i: usize) -> String {
    format!("qos.class[{i}]")
}

/// Traffic that must not share a queue with RDMA.
pub(crate) fn carries_non_rdma_data(c: &TrafficClass) -> bool {
    c.carries
        .iter()
        .any(|k| matches!(k, TrafficKind::Tcp | TrafficKind::Storage | TrafficKind::Management | TrafficKind::Other))
}

/// Whether PFC on this class is a mistake (PFC002): the default class, where unmapped DSCPs
/// land, or a class carrying other traffic and no RDMA.
pub(crate) fn pfc_misplaced(q: &rocelab_model::Qos, class_index: usize) -> bool {
    let c = &q.classes[class_index];
    class_index == q.default_class || (carries_non_rdma_data(c) && !c.carries.contains(&TrafficKind::Rdma))
}

/// The lossless priorities of `mask` that PFC002 flags, less the RDMA class's own priority
/// (which must stay lossless whatever else shares it).
pub(crate) fn misplaced_pfc_mask(q: &rocelab_model::Qos, mask: u8) -> u8 {
    let rdma_priority = q.classes[q.rdma_class()].priority;
    (0..8u8)
        .filter(|p| mask & (1 << p) != 0 && *p != rdma_priority)
        .filter(|p| {
            let on: Vec<usize> = (0..q.classes.len()).filter(|&i| q.classes[i].priority == *p).collect();
            !on.is_empty() && on.iter().any(|&i| pfc_misplaced(q, i))
        })
        .fold(0, |m, p| m | (1 << p))
}

pub(crate) fn kinds(c: &TrafficClass) -> String {
    if c.carries.is_empty() {
        return "nothing declared".to_string();
    }
    let names: Vec<&str> = c
        .carries
        .iter()
        .map(|k| match k {
            TrafficKind::Rdma => "rdma",
            TrafficKind::Cnp => "cnp",
            TrafficKind::Tcp => "tcp",
            TrafficKind::Storage => "storage",
            TrafficKind::Management => "management",
            TrafficKind::Other => "other",
        })
        .collect();
    names.join(", ")
}

/// NIC profiles that at least one host uses, in profile order.
pub(crate) fn used_nics<'a>(cx: &Ctx<'a>) -> Vec<&'a NicProfile> {
    let m = cx.model;
    let mut used = vec![false; m.nics.len()];
    for n in &m.nodes {
        if let Role::Host { nic, .. } = n.role {
            used[nic] = true;
        }
    }
    m.nics.iter().zip(used).filter(|(_, u)| *u).map(|(n, _)| n).collect()
}

pub(crate) fn priorities(mask: u8) -> String {
    let ps: Vec<String> = (0..8).filter(|p| mask & (1 << p) != 0).map(|p| p.to_string()).collect();
    if ps.is_empty() {
        "none".to_string()
    } else {
        format!("[{}]", ps.join(", "))
    }
}
