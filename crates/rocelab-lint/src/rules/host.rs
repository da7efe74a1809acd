//! Host (NIC) against switch: trust mode, DSCP map, PFC priorities, MTU, ECN NP/RP, marks.

use super::{misplaced_pfc_mask, priorities, used_nics};
use crate::{Ctx, Findings, ROCE_HEADER_BYTES};
use rocelab_model::config::Trust;

fn trust(t: Trust) -> &'static str {
    match t {
        Trust::Dscp => "dscp",
        Trust::Pcp => "pcp",
    }
}

pub fn check(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    let q = &m.qos;
    let ri = q.rdma_class();
    let rdma = &q.classes[ri];
    let cnp = &q.classes[q.cnp_class];
    let switch_marks = rdma.ecn.is_some() || !rdma.ecn_per_speed.is_empty();
    // The port with the smallest MTU bounds the RoCE packet size.
    let smallest = m.ports.iter().enumerate().min_by_key(|(_, p)| p.mtu);
    for nic in used_nics(cx) {
        let p = &nic.path;
        let hq = &nic.qos;
        if hq.trust != q.trust {
            out.emit(
                "HOST001",
                format!("{p}.qos.trust"),
                format!(
                    "NIC profile `{}` trusts {} but the switches trust {}",
                    nic.name,
                    trust(hq.trust),
                    trust(q.trust)
                ),
                format!("set `trust = \"{}\"` on both sides", trust(q.trust)),
            );
        }
        let mut mismatches = Vec::new();
        for c in &q.classes {
            for &d in &c.dscp {
                let host = hq.dscp_to_priority[d as usize];
                if host != c.priority {
                    mismatches.push((d, host, c));
                }
            }
        }
        if let Some(&(d, host, c)) = mismatches.first() {
            let more = if mismatches.len() > 1 {
                format!(" (and {} more DSCP values)", mismatches.len() - 1)
            } else {
                String::new()
            };
            let key = format!("{p}.qos.dscp_to_priority.{d}");
            let path = if cx.map.contains(&key) { key } else { format!("{p}.qos.dscp_to_priority") };
            out.emit(
                "HOST002",
                path,
                format!(
                    "NIC profile `{}` maps DSCP {d} to priority {host}; the switch puts it in class `{}` on priority {}{more}",
                    nic.name, c.name, c.priority
                ),
                "make the NIC's dscp_to_priority match the switch classes, or leave it out to inherit them",
            );
        }
        if hq.pfc_mask != q.pfc_mask {
            // The fix names the side that is wrong: a switch priority PFC002 flags (the default
            // class, a class without RDMA) must leave the switches, not join the NICs.
            // A lossless switch priority no class uses is not one the NICs need either (PFC001).
            let wrong_on_switch = misplaced_pfc_mask(q, q.pfc_mask);
            let used = q.classes.iter().fold(0u8, |m, c| m | (1 << c.priority));
            let unused_on_switch = q.pfc_mask & !used & !wrong_on_switch;
            let intended = q.pfc_mask & !wrong_on_switch & !unused_on_switch;
            let nic_add = intended & !hq.pfc_mask;
            let nic_remove = hq.pfc_mask & !intended;
            let switch_remove = wrong_on_switch & !hq.pfc_mask;
            let switch_unused = unused_on_switch & !hq.pfc_mask;
            let mut fix = Vec::new();
            if switch_remove != 0 {
                fix.push(format!(
                    "the switches are wrong on {}: take it out of their PFC (PFC002)",
                    priorities(switch_remove)
                ));
            }
            if switch_unused != 0 {
                fix.push(format!(
                    "no class uses {}: drop it from the switches' PFC too (PFC001)",
                    priorities(switch_unused)
                ));
            }
            if nic_add != 0 {
                fix.push(format!("add {} to the NIC's `pfc_priorities`", priorities(nic_add)));
            }
            if nic_remove != 0 {
                fix.push(format!("remove {} from the NIC's `pfc_priorities`", priorities(nic_remove)));
            }
            let fix = format!("{}; then both sides use {}", fix.join("; "), priorities(intended));
            out.emit(
                "HOST003",
                format!("{p}.qos.pfc_priorities"),
                format!(
                    "NIC profile `{}` has PFC on priorities {}, the switches on {}",
                    nic.name,
                    priorities(hq.pfc_mask),
                    priorities(q.pfc_mask)
                ),
                fix,
            );
        }
        if let Some((pi, port)) = smallest {
            let frame = nic.mtu + ROCE_HEADER_BYTES;
            if frame > port.mtu {
                let origin = &m.links[port.link.idx()].origin;
                out.emit(
                    "HOST004",
                    format!("{p}.mtu"),
                    format!(
                        "NIC profile `{}` sends RoCE packets of {} B ({} B payload + {ROCE_HEADER_BYTES} B headers) but port {} has MTU {} B (`{origin}`)",
                        nic.name,
                        frame,
                        nic.mtu,
                        m.port_name(rocelab_model::PortId(pi as u32)),
                        port.mtu
                    ),
                    "raise the port MTU (9216 is usual) or lower the NIC RoCE MTU",
                );
            }
        }
        if switch_marks {
            for (mask, key, what) in [
                (hq.ecn_np_mask, "ecn_np_priorities", "notification point (CNP generation)"),
                (hq.ecn_rp_mask, "ecn_rp_priorities", "reaction point (rate limiting)"),
            ] {
                if mask & (1 << rdma.priority) == 0 {
                    out.emit(
                        "HOST005",
                        format!("{p}.qos.{key}"),
                        format!(
                            "NIC profile `{}` has the ECN {what} off on the RoCE priority {} (enabled on {})",
                            nic.name,
                            rdma.priority,
                            priorities(mask)
                        ),
                        format!("add priority {} to `{key}`", rdma.priority),
                    );
                }
            }
        }
        let roce_class = &q.classes[q.dscp_to_class[hq.roce_dscp as usize] as usize];
        if q.dscp_to_class[hq.roce_dscp as usize] as usize != ri {
            out.emit(
                "HOST006",
                format!("{p}.qos.roce_dscp"),
                format!(
                    "NIC profile `{}` marks RoCE data with DSCP {}, which the switch puts in class `{}`, not the RoCE class `{}`",
                    nic.name, hq.roce_dscp, roce_class.name, rdma.name
                ),
                format!("use a DSCP of `{}`: {:?}", rdma.name, rdma.dscp),
            );
        }
        if q.dscp_to_class[hq.cnp_dscp as usize] as usize != q.cnp_class {
            let c = &q.classes[q.dscp_to_class[hq.cnp_dscp as usize] as usize];
            out.emit(
                "HOST006",
                format!("{p}.qos.cnp_dscp"),
                format!(
                    "NIC profile `{}` marks CNPs with DSCP {}, which the switch puts in class `{}`, not the CNP class `{}`",
                    nic.name, hq.cnp_dscp, c.name, cnp.name
                ),
                format!("use a DSCP of `{}`: {:?}", cnp.name, cnp.dscp),
            );
        }
        if hq.cnp_priority != cnp.priority {
            out.emit(
                "HOST006",
                format!("{p}.qos.cnp_priority"),
                format!(
                    "NIC profile `{}` sends CNPs on priority {}; the switch's CNP class `{}` is priority {}",
                    nic.name, hq.cnp_priority, cnp.name, cnp.priority
                ),
                format!("set `cnp_priority = {}`", cnp.priority),
            );
        }
    }
}
