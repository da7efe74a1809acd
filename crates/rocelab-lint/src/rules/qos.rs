//! Switch-side QoS: which priorities are lossless, where RDMA and CNPs ride, the watchdog.

use super::{carries_non_rdma_data, class_path, kinds, pfc_misplaced};
use crate::{Ctx, Findings};
use rocelab_model::config::{SchedulerKind, TrafficKind, Trust};

pub fn check(cx: &Ctx, out: &mut Findings) {
    let q = &cx.model.qos;
    let explicit_pfc = cx.model.config.qos.pfc.priorities.is_some();
    let pfc_path = |prio: u8| -> String {
        if explicit_pfc {
            "qos.pfc.priorities".to_string()
        } else {
            match q.classes.iter().position(|c| c.priority == prio && c.lossless) {
                Some(i) => format!("{}.lossless", class_path(i)),
                None => "qos.pfc".to_string(),
            }
        }
    };

    if cx.lossless_priorities.len() > 2 {
        out.emit(
            "PFC001",
            pfc_path(cx.lossless_priorities[2]),
            format!(
                "PFC is enabled on {} priorities ({:?}); RoCE needs one, at most two",
                cx.lossless_priorities.len(),
                cx.lossless_priorities
            ),
            "keep PFC on the RoCE priority only, e.g. `priorities = [3]`",
        );
    }

    for &p in &cx.lossless_priorities {
        for (i, c) in q.classes.iter().enumerate().filter(|(_, c)| c.priority == p) {
            let is_default = i == q.default_class;
            if pfc_misplaced(q, i) {
                let why =
                    if is_default { "the default class (unmapped DSCPs land there)" } else { "a class without RDMA" };
                out.emit(
                    "PFC002",
                    pfc_path(p),
                    format!(
                        "PFC is enabled on priority {p}, which is class `{}`: {why}, carrying {}",
                        c.name,
                        kinds(c)
                    ),
                    format!("remove priority {p} from PFC (`lossless = false` on `{}`)", c.name),
                );
            }
        }
    }

    let ri = q.rdma_class();
    let rdma = &q.classes[ri];
    // (NICs that all run UET are lossy on purpose: they trim and resend selectively.)
    let nics = super::used_nics(cx);
    let all_uet = !nics.is_empty() && nics.iter().all(|n| n.transport == rocelab_model::uet::Transport::Uet);
    if !q.pfc_enabled(rdma.priority) && !all_uet {
        out.emit(
            "QOS001",
            if rdma.lossless || explicit_pfc {
                "qos.pfc.priorities".to_string()
            } else {
                format!("{}.lossless", class_path(ri))
            },
            format!(
                "the RoCE class `{}` (priority {}) has no PFC: a drop costs a go-back-N retransmission",
                rdma.name, rdma.priority
            ),
            format!("set `lossless = true` on `{}` and keep ECN on it", rdma.name),
        );
    } else if rdma.ecn.is_none() && rdma.ecn_per_speed.is_empty() {
        out.emit(
            "QOS002",
            class_path(ri),
            format!("the RoCE class `{}` is lossless but has no ECN marking: PFC is its only brake", rdma.name),
            "add `ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }` (or thresholds for your port speed)",
        );
    }

    let ci = q.cnp_class;
    let cnp = &q.classes[ci];
    let data = cnp.carries.iter().any(|k| !matches!(k, TrafficKind::Cnp));
    if ci == ri || ci == q.default_class || data {
        let what = if ci == ri {
            "the RoCE data class itself".to_string()
        } else if ci == q.default_class {
            "the default class".to_string()
        } else {
            format!("a class that carries {}", kinds(cnp))
        };
        out.emit(
            "CNP001",
            "qos.cnp_class",
            format!("CNPs ride class `{}`, {what}: they queue behind data", cnp.name),
            "declare a CNP class (DSCP 48 -> priority 6, strict, carries = [\"cnp\"]) and name it in `qos.cnp_class`",
        );
    }
    if cnp.scheduler != SchedulerKind::Strict {
        out.emit(
            "CNP002",
            format!("{}.scheduler", class_path(ci)),
            format!("the CNP class `{}` is scheduled by DWRR (weight {}), not strict priority", cnp.name, cnp.weight),
            format!("set `scheduler = \"strict\"` on `{}`", cnp.name),
        );
    }
    for (j, o) in q.classes.iter().enumerate() {
        if j != ci && o.queue == cnp.queue {
            let key = if cx.model.config.qos.classes.get(ci).is_some_and(|c| c.queue.is_some()) {
                "queue"
            } else {
                "priority"
            };
            out.emit(
                "CNP003",
                format!("{}.{key}", class_path(ci)),
                format!(
                    "the CNP class `{}` shares egress queue {} with class `{}` ({})",
                    cnp.name,
                    cnp.queue,
                    o.name,
                    kinds(o)
                ),
                "give the CNP class a queue of its own",
            );
        }
    }

    for (i, c) in q.classes.iter().enumerate().filter(|(_, c)| c.carries.contains(&TrafficKind::Rdma)) {
        if carries_non_rdma_data(c) {
            out.emit(
                "ISO001",
                format!("{}.carries", class_path(i)),
                format!("class `{}` carries RDMA together with other traffic ({})", c.name, kinds(c)),
                "give RDMA a class and queue of its own",
            );
        }
        for (j, o) in q.classes.iter().enumerate() {
            if j != i && o.queue == c.queue && carries_non_rdma_data(o) {
                out.emit(
                    "ISO001",
                    format!("{}.queue", class_path(j)),
                    format!(
                        "class `{}` ({}) shares egress queue {} with the RDMA class `{}`",
                        o.name,
                        kinds(o),
                        c.queue,
                        c.name
                    ),
                    format!("move `{}` to another queue", o.name),
                );
            }
        }
    }

    isolation_by_marking(cx, out);

    if !cx.lossless_priorities.is_empty() && !q.watchdog.enabled {
        out.emit(
            "WDG001",
            "qos.pfc_watchdog.enabled",
            format!("the PFC watchdog is off while priorities {:?} are lossless", cx.lossless_priorities),
            "enable it: `[qos.pfc_watchdog] enabled = true` (SONiC defaults: 200 ms detection and restoration)",
        );
    }
}

/// ISO002: general traffic reaches the RDMA class without any class declaring it. Hosts send
/// TCP, storage and management traffic unmarked (DSCP 0, untagged: PCP 0) unless someone
/// configures otherwise, and a switch puts every DSCP no class lists into its default class.
fn isolation_by_marking(cx: &Ctx, out: &mut Findings) {
    let q = &cx.model.qos;
    let ri = q.rdma_class();
    let rdma = &q.classes[ri];
    if !rdma.carries.contains(&TrafficKind::Rdma) {
        return;
    }
    let fix = format!(
        "give general traffic a class of its own on priority 0 (DSCP 0 and every DSCP no class lists land there) and keep `{}` to the RoCE DSCP (26)",
        rdma.name
    );
    match q.trust {
        Trust::Dscp => {
            if let Some(j) = rdma.dscp.iter().position(|&d| d == 0) {
                out.emit(
                    "ISO002",
                    format!("{}.dscp[{j}]", class_path(ri)),
                    format!(
                        "the RDMA class `{}` classifies DSCP 0, the marking of every host's TCP, storage and management traffic unless configured otherwise: it shares `{}`'s queue {} unannounced",
                        rdma.name, rdma.name, rdma.queue
                    ),
                    fix.clone(),
                );
            }
            if ri == q.default_class {
                let listed: Vec<bool> = (0..64u8).map(|d| q.classes.iter().any(|c| c.dscp.contains(&d))).collect();
                let unlisted: Vec<u8> = (0..64u8).filter(|d| !listed[*d as usize]).collect();
                if !unlisted.is_empty() {
                    let why = if rdma.priority == 0 {
                        "it is on priority 0, which makes it the default class".to_string()
                    } else {
                        "no class is on priority 0, so the first class is the default".to_string()
                    };
                    let shown: Vec<String> = unlisted.iter().take(6).map(|d| d.to_string()).collect();
                    out.emit(
                        "ISO002",
                        format!("{}.priority", class_path(ri)),
                        format!(
                            "the RDMA class `{}` is where the {} DSCP values no class lists land ({}{}): {why}",
                            rdma.name,
                            unlisted.len(),
                            shown.join(", "),
                            if unlisted.len() > shown.len() { ", ..." } else { "" }
                        ),
                        fix,
                    );
                }
            }
        }
        Trust::Pcp => {
            if rdma.priority == 0 {
                out.emit(
                    "ISO002",
                    format!("{}.priority", class_path(ri)),
                    format!(
                        "with PCP trust the RDMA class `{}` on priority 0 receives every untagged frame (PCP 0): the hosts' TCP and management traffic",
                        rdma.name
                    ),
                    "move RoCE to its own priority (3), tagged by the NIC, and leave priority 0 to general traffic",
                );
            }
        }
    }
}
