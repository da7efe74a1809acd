//! The fabric's shape: oversubscription, rail cabling, ECMP entropy.

use crate::{Ctx, Findings};
use rocelab_model::config::HashField;
use rocelab_model::topology::Tier;
use rocelab_model::{NodeId, Role};
use std::collections::BTreeMap;

pub fn check(cx: &Ctx, out: &mut Findings) {
    oversubscription(cx, out);
    rails(cx, out);
    crate::rules::planes::check(cx, out);
    // (InfiniBand routes by destination LID or adaptively: no 5-tuple hash.) A hash on the
    // destination QPN (Enhanced ECMP, through a switch UDF) carries per-QP entropy of its own.
    let fields = &cx.model.config.routing.ecmp_hash_fields;
    if !cx.model.is_ib() && !fields.contains(&HashField::SrcPort) && !fields.contains(&HashField::DestQpn) {
        out.emit(
            "TOP003",
            "routing.ecmp_hash_fields",
            "ECMP hashes without the UDP source port, the only per-QP entropy of RoCEv2 (destination port is always 4791)",
            "add \"src-port\" to routing.ecmp_hash_fields",
        );
    }
}

fn oversubscription(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    // Worst down:up ratio per switch tier.
    let mut worst: BTreeMap<Tier, (f64, NodeId, f64, f64)> = BTreeMap::new();
    for sw in m.switches() {
        let n = m.node(sw);
        let (mut down, mut up) = (0.0, 0.0);
        for p in n.ports() {
            let port = m.port(p);
            let peer_tier = m.node(m.port(port.peer).node).tier;
            if peer_tier < n.tier {
                down += port.speed.gbps();
            } else if peer_tier > n.tier {
                up += port.speed.gbps();
            }
        }
        if down > 0.0 && up > 0.0 {
            let r = down / up;
            let e = worst.entry(n.tier).or_insert((0.0, sw, 0.0, 0.0));
            if r > e.0 + 1e-9 {
                *e = (r, sw, down, up);
            }
        }
    }
    for (tier, (r, sw, down, up)) in worst {
        if r > 1.0 + 1e-6 {
            out.emit(
                "TOP001",
                oversubscription_path(cx, tier),
                format!(
                    "the {} tier is oversubscribed {:.2}:1 (`{}`: {:.0} Gb/s toward the hosts, {:.0} Gb/s up)",
                    tier.name(),
                    r,
                    m.node(sw).name,
                    down,
                    up
                ),
                "add uplinks until down:up is 1:1, or disable TOP001 with the reason if this tier is oversubscribed on purpose",
            );
        }
    }
}

fn oversubscription_path(cx: &Ctx, tier: Tier) -> String {
    let t = &cx.model.config.topology;
    let base = cx.topology_path();
    let key = if let Some(ls) = &t.leaf_spine {
        if ls.uplinks_per_leaf.is_some() {
            "uplinks_per_leaf"
        } else {
            "spines"
        }
    } else if let Some(r) = &t.rail_optimized {
        match tier {
            Tier::Leaf if r.spines_per_pod.is_some() => "spines_per_pod",
            Tier::Spine | Tier::Core if r.pod_oversubscription.is_some() => "pod_oversubscription",
            _ => "",
        }
    } else {
        ""
    };
    if key.is_empty() {
        base.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// `node7-nic3` -> 3.
fn nic_index(name: &str) -> Option<u32> {
    let digits = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if digits.len() == name.len() || !digits.to_ascii_lowercase().ends_with("nic") {
        return None;
    }
    name[digits.len()..].parse().ok()
}

fn rails(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    let explicit = m.config.topology.explicit.as_ref();
    let node_path = |name: &str| -> String {
        match explicit.and_then(|e| e.node.iter().position(|n| n.name == name)) {
            Some(i) => format!("topology.explicit.node[{i}].rail"),
            None => cx.topology_path().to_string(),
        }
    };
    // Leaves that serve more than one rail.
    for sw in m.switches() {
        let mut rails: BTreeMap<u32, NodeId> = BTreeMap::new();
        for p in m.node(sw).ports() {
            let h = m.port(m.port(p).peer).node;
            if let Some(r) = m.node(h).rail() {
                rails.entry(r).or_insert(h);
            }
        }
        if rails.len() > 1 {
            // Blame the NIC of the smallest rail group: the odd one out.
            let mut count: BTreeMap<u32, usize> = BTreeMap::new();
            for p in m.node(sw).ports() {
                if let Some(r) = m.node(m.port(m.port(p).peer).node).rail() {
                    *count.entry(r).or_default() += 1;
                }
            }
            let (&odd, _) = count.iter().min_by_key(|(r, c)| (**c, **r)).expect("two rails");
            let host = rails[&odd];
            let list: Vec<String> = count.iter().map(|(r, c)| format!("rail {r}: {c}")).collect();
            out.emit(
                "TOP002",
                node_path(&m.node(host).name),
                format!(
                    "leaf `{}` serves NICs of {} rails ({}); `{}` is on rail {odd}",
                    m.node(sw).name,
                    rails.len(),
                    list.join(", "),
                    m.node(host).name
                ),
                "cable NIC i of every GPU node to the rail-i leaf",
            );
        }
    }
    // NIC i on rail i: a host named `...nic<i>` (the builders' and most sites' convention) that
    // sits on another rail is a swapped cable or a swapped declaration.
    for n in &m.nodes {
        if let (Some(r), Some(i)) = (n.rail(), nic_index(&n.name)) {
            if i != r {
                out.emit(
                    "TOP002",
                    node_path(&n.name),
                    format!("`{}` is NIC {i} of its node but sits on rail {r}", n.name),
                    format!("cable NIC {i} to the rail-{i} leaf (and declare `rail = {i}`)"),
                );
            }
        }
    }
    // Two NICs of one GPU node on the same rail.
    let mut seen: BTreeMap<(u32, u32), NodeId> = BTreeMap::new();
    for (i, n) in m.nodes.iter().enumerate() {
        if let Role::Host { gpu_node: Some(g), rail: Some(r), .. } = n.role {
            if let Some(prev) = seen.insert((g, r), NodeId(i as u32)) {
                out.emit(
                    "TOP002",
                    node_path(&n.name),
                    format!("NICs `{}` and `{}` of one GPU node are both on rail {r}", m.node(prev).name, n.name),
                    "give NIC i of every node rail i",
                );
            }
        }
    }
}
