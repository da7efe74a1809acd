//! Dual-homed NICs and planes: where a spine still hashes between the ToRs of a pair (TOP004).

use crate::{Ctx, Findings};
use rocelab_model::{NodeId, PortId};
use std::collections::BTreeSet;

pub fn check(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    // InfiniBand forwards by LID over the subnet manager's tables, not by a per-flow hash.
    if m.is_ib() {
        return;
    }
    let peer = |p: PortId| m.port(m.port(p).peer).node;
    let r = &m.routing;
    // One NIC per destination group is enough: its members attach to the same switches.
    let mut seen_groups = BTreeSet::new();
    for h in m.hosts() {
        let g = r.host_group[h.idx()];
        if !seen_groups.insert(g) {
            continue;
        }
        let att: &[NodeId] = &r.groups[g as usize];
        if att.len() < 2 {
            continue;
        }
        // The switches one hop above the NIC's ToRs: where the last choice between them is made.
        for &a in att {
            for s in m.node(a).ports().map(peer).filter(|s| !m.node(*s).is_host() && !att.contains(s)) {
                let via: BTreeSet<NodeId> =
                    r.egress(s, h).iter().map(|p| peer(*p)).filter(|t| att.contains(t)).collect();
                if via.len() < 2 {
                    continue;
                }
                let tors: Vec<&str> = via.iter().map(|t| m.node(*t).name.as_str()).collect();
                let path = match &m.config.topology.rail_optimized {
                    Some(c) if c.dual_tor.is_some() => "topology.rail_optimized.dual_tor",
                    _ => cx.topology_path(),
                };
                out.emit(
                    "TOP004",
                    path,
                    format!(
                        "`{}` hashes each flow for `{}` to one of its {} ToRs ({}): two flows for one NIC can share one ToR's downlink while another port idles",
                        m.node(s).name,
                        m.node(h).name,
                        via.len(),
                        tors.join(", ")
                    ),
                    "put each NIC port on its own plane: `planes = 2` with `dual_tor = true` (HPN's dual-plane)",
                );
                return;
            }
        }
    }
}
