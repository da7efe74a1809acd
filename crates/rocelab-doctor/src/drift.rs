//! Drift: a host's live QoS state against the intended configuration.
//!
//! [`Intent`] is the doctor's own small view of "what the fabric file says a host should
//! look like", so the rules here are testable without a fabric file; `intent` fills it from
//! a `rocelab_model::Model`. Only what the intent states is compared: an unset field is
//! never a finding.

use crate::diagnose::{Finding, Severity};
use crate::snapshot::{Netdev, Snapshot};
use crate::util::sh_quote;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The host-side configuration one NIC profile asks for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IntendedHost {
    /// NIC profile name in the fabric file (`default` for `[nic]`).
    pub profile: String,
    /// `dscp` or `pcp`.
    pub trust: Option<String>,
    /// DSCP -> priority the host must classify with (at least the RoCE and CNP code points).
    pub dscp_to_priority: BTreeMap<u8, u8>,
    pub pfc_priorities: Option<BTreeSet<u8>>,
    pub ecn_np_priorities: Option<BTreeSet<u8>>,
    pub ecn_rp_priorities: Option<BTreeSet<u8>>,
    pub cnp_dscp: Option<u8>,
    pub cnp_priority: Option<u8>,
    /// RoCE path MTU (1024, 2048, 4096).
    pub roce_mtu: Option<u32>,
    pub firmware: Option<String>,
    /// mlx5 sysfs knobs with their expected values, keyed `roce_rp/rpg_ai_rate`,
    /// `roce_np/min_time_between_cnps`, ... (only those the fabric file sets).
    pub dcqcn: BTreeMap<String, i64>,
    /// Host link line rate in Gb/s.
    pub line_rate_gbps: Option<f64>,
}

/// The intended configuration of every host of a fabric.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Intent {
    /// Fabric file it came from (for messages).
    pub source: String,
    /// Profile of hosts not listed in `hosts`.
    pub default: IntendedHost,
    /// Host name (and GPU-node name) -> its profile.
    pub hosts: BTreeMap<String, IntendedHost>,
    /// RoCE NICs per GPU node (rails), for the nccl-tests expectation.
    pub nics_per_node: Option<u32>,
    /// FNV-1a hash of the fabric file, recorded in the report.
    pub fabric_hash: Option<u64>,
    /// Switch egress queue -> the priority of the lossless class it carries: a drop there is
    /// a broken promise, not congestion (empty when the fabric declares no lossless class).
    #[serde(default)]
    pub lossless_queues: BTreeMap<u8, u8>,
}

impl Intent {
    pub fn for_host(&self, host: &str) -> &IntendedHost {
        self.hosts.get(host).unwrap_or(&self.default)
    }

    /// Expected network bandwidth of one GPU node in Gb/s (all its NICs at line rate).
    pub fn node_net_gbps(&self, host: &str) -> Option<f64> {
        let h = self.for_host(host);
        Some(h.line_rate_gbps? * self.nics_per_node.unwrap_or(1) as f64)
    }
}

/// The RoCE path MTU a netdev MTU allows (Linux `iboe_get_mtu`: the netdev MTU less GRH,
/// UDP, BTH, XRC, AtomicETH and ICRC headers, rounded down to an IB MTU).
pub fn roce_mtu_for_netdev_mtu(mtu: u32) -> Option<u32> {
    let avail = mtu.checked_sub(40 + 8 + 12 + 4 + 28 + 4)?;
    [4096, 2048, 1024, 512, 256].into_iter().find(|m| *m <= avail)
}

fn set_str(s: &BTreeSet<u8>) -> String {
    if s.is_empty() {
        return "none".into();
    }
    s.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
}

/// `mlnx_qos --pfc` takes one 0/1 per priority, priority 0 first.
pub fn pfc_arg(enabled: &BTreeSet<u8>) -> String {
    (0u8..8).map(|p| if enabled.contains(&p) { "1" } else { "0" }).collect::<Vec<_>>().join(",")
}

/// A finding with its evidence and hint (shared by the drift and GPUDirect rules).
pub(crate) fn finding(
    code: &'static str,
    severity: Severity,
    node: &str,
    subject: &str,
    message: String,
    evidence: Vec<String>,
    hint: &str,
) -> Finding {
    Finding::new(code, severity, node, subject.to_string(), message, evidence, hint)
}

/// Compares the latest state of each RoCE netdev in `snap` with `intent`.
pub fn check_drift(snap: &Snapshot, intent: &Intent) -> Vec<Finding> {
    let want = intent.for_host(&snap.host);
    let mut out = Vec::new();
    // Only netdevs that carry RDMA: a management NIC is not expected to trust DSCP.
    let roce: BTreeSet<&str> = snap.rdma_ports.values().filter_map(|p| p.netdev.as_deref()).collect();
    for (name, nd) in &snap.netdevs {
        if !roce.is_empty() && !roce.contains(name.as_str()) {
            continue;
        }
        check_netdev(&snap.host, nd, want, &intent.source, &mut out);
    }
    out
}

fn check_netdev(host: &str, nd: &Netdev, want: &IntendedHost, source: &str, out: &mut Vec<Finding>) {
    let subj = nd.name.as_str();
    let from = format!("intended by {source} (profile `{}`)", want.profile);
    if let Some(t) = &want.trust {
        let (have, src) = match (nd.mlnx_qos.as_ref().and_then(|q| q.trust.clone()), &nd.sysfs.trust) {
            (Some(t), _) => (Some(t), "mlnx_qos"),
            (None, Some(t)) => (Some(t.clone()), "qos/trust"),
            _ => (None, ""),
        };
        if let Some(have) = have {
            if &have != t {
                out.push(finding("drift-trust", Severity::Error, host, subj, format!("trust mode is `{have}`, the fabric wants `{t}`"), vec![format!("{src}: {have}"), from.clone()], &format!("set it with `mlnx_qos -i {} --trust {t}`; with the wrong trust mode RoCE traffic lands in the wrong priority and loses PFC", sh_quote(subj))));
            }
        }
    }
    if let Some(q) = &nd.mlnx_qos {
        if !q.dscp_to_priority.is_empty() && !want.dscp_to_priority.is_empty() {
            let wrong: Vec<(u8, u8)> = want
                .dscp_to_priority
                .iter()
                .filter(|(d, p)| q.dscp_to_priority.get(d) != Some(p))
                .map(|(d, p)| (*d, *p))
                .collect();
            let bad: Vec<String> = wrong
                .iter()
                .map(|(d, p)| match q.dscp_to_priority.get(d) {
                    Some(have) => format!("DSCP {d} -> priority {have} (want {p})"),
                    None => format!("DSCP {d} unmapped (want {p})"),
                })
                .collect();
            if !bad.is_empty() {
                let mut ev: Vec<String> = bad.iter().take(8).cloned().collect();
                if bad.len() > 8 {
                    ev.push(format!("... and {} more", bad.len() - 8));
                }
                ev.push(from.clone());
                let cmds: Vec<String> = wrong
                    .iter()
                    .map(|(d, p)| format!("mlnx_qos -i {} --dscp2prio set,{d},{p}", sh_quote(subj)))
                    .collect();
                out.push(finding(
                    "drift-dscp-map",
                    Severity::Error,
                    host,
                    subj,
                    format!("{} DSCP code point(s) map to another priority than intended", bad.len()),
                    ev,
                    &format!("fix with `{}`; host and switch must agree on the map", cmds.join("; ")),
                ));
            }
        }
    }
    if let Some(want_pfc) = &want.pfc_priorities {
        let have = nd.mlnx_qos.as_ref().and_then(|q| q.pfc_enabled.clone()).map(|s| (s, "mlnx_qos PFC enabled row"));
        let have = have.or_else(|| {
            nd.ethtool
                .as_ref()
                .map(|e| {
                    (e.pause_priorities().into_iter().collect::<BTreeSet<u8>>(), "ethtool per-priority pause counters")
                })
                .filter(|(s, _)| !s.is_empty())
        });
        if let Some((have, src)) = have {
            if &have != want_pfc {
                out.push(finding("drift-pfc", Severity::Error, host, subj, format!("PFC is enabled on priorities {}, the fabric wants {}", set_str(&have), set_str(want_pfc)), vec![format!("{src}: {}", set_str(&have)), from.clone()], &format!("set with `mlnx_qos -i {} --pfc {}`; a lossless class without PFC drops under congestion, PFC on a lossy class spreads pauses", sh_quote(subj), pfc_arg(want_pfc))));
            }
        }
    }
    for (want_set, have_map, code, role, dir, why) in [
        (
            &want.ecn_np_priorities,
            &nd.sysfs.ecn_np_enabled,
            "drift-ecn-np",
            "notification point (CNP generation)",
            "roce_np",
            "without it CE marks never become CNPs and DCQCN cannot slow senders",
        ),
        (
            &want.ecn_rp_priorities,
            &nd.sysfs.ecn_rp_enabled,
            "drift-ecn-rp",
            "reaction point (rate limiting on CNPs)",
            "roce_rp",
            "without it the NIC ignores CNPs and congestion turns into PFC pauses",
        ),
    ] {
        let Some(want_set) = want_set else { continue };
        if have_map.is_empty() {
            continue;
        }
        let have: BTreeSet<u8> = have_map.iter().filter(|(_, e)| **e).map(|(p, _)| *p).collect();
        let missing: BTreeSet<u8> = want_set.difference(&have).copied().collect();
        let extra: BTreeSet<u8> = have.difference(want_set).copied().collect();
        if !missing.is_empty() || !extra.is_empty() {
            let sev = if missing.is_empty() { Severity::Warning } else { Severity::Error };
            let cmds: Vec<String> = missing
                .iter()
                .map(|p| (1, p))
                .chain(extra.iter().map(|p| (0, p)))
                .map(|(v, p)| {
                    format!("echo {v} > {}", sh_quote(&format!("/sys/class/net/{subj}/ecn/{dir}/enable/{p}")))
                })
                .collect();
            let hint = format!("set with `{}`; {why}", cmds.join("; "));
            out.push(finding(
                code,
                sev,
                host,
                subj,
                format!("ECN {role} enabled on priorities {}, the fabric wants {}", set_str(&have), set_str(want_set)),
                vec![format!("sysfs ecn enable files: {}", set_str(&have)), from.clone()],
                &hint,
            ));
        }
    }
    for (want_v, key, what) in
        [(want.cnp_dscp, "cnp_dscp", "CNP DSCP"), (want.cnp_priority, "cnp_802p_prio", "CNP priority")]
    {
        let (Some(w), Some(h)) = (want_v, nd.sysfs.np_params.get(key)) else { continue };
        if *h != w as i64 {
            out.push(finding(
                "drift-cnp",
                Severity::Error,
                host,
                subj,
                format!("{what} is {h}, the fabric wants {w}"),
                vec![format!("ecn/roce_np/{key}: {h}"), from.clone()],
                &format!(
                    "set with `echo {w} > {}`; CNPs must ride the strict-priority CNP class the switches expect",
                    sh_quote(&format!("/sys/class/net/{subj}/ecn/roce_np/{key}"))
                ),
            ));
        }
    }
    if let (Some(w), Some(mtu)) = (want.roce_mtu, nd.sysfs.mtu) {
        let active = roce_mtu_for_netdev_mtu(mtu);
        if active.unwrap_or(0) < w {
            out.push(finding("drift-mtu", Severity::Error, host, subj, format!("netdev MTU {mtu} allows a RoCE MTU of {}, the fabric wants {w}", active.map(|a| a.to_string()).unwrap_or_else(|| "none".into())), vec![format!("sysfs mtu: {mtu}"), from.clone()], "raise the netdev MTU (RoCE MTU 4096 needs at least 4192; 9000 is usual) on the host and the switch ports"));
        }
    }
    if let (Some(w), Some(d)) = (&want.firmware, &nd.driver) {
        if !d.firmware().is_empty() && d.firmware() != w {
            out.push(finding(
                "drift-firmware",
                Severity::Warning,
                host,
                subj,
                format!("firmware {} differs from the intended {w}", d.firmware()),
                vec![format!("ethtool -i firmware-version: {}", d.firmware_version), from.clone()],
                "update the NIC firmware (mlxfwmanager / mstflint) or the profile in the fabric file",
            ));
        }
    }
    let mut knobs = Vec::new();
    let mut writes = Vec::new();
    for (k, w) in &want.dcqcn {
        let (ns, name) = k.split_once('/').unwrap_or(("roce_rp", k.as_str()));
        let have = if ns == "roce_np" { nd.sysfs.np_params.get(name) } else { nd.sysfs.rp_params.get(name) };
        if let Some(h) = have {
            if h != w {
                knobs.push(format!("ecn/{ns}/{name} = {h} (want {w})"));
                writes.push((format!("{ns}/{name}"), *w));
            }
        }
    }
    if !knobs.is_empty() {
        let mut ev = knobs.clone();
        ev.push(from);
        let cmds: Vec<String> = writes
            .iter()
            .map(|(path, w)| format!("echo {w} > {}", sh_quote(&format!("/sys/class/net/{subj}/ecn/{path}"))))
            .collect();
        out.push(finding(
            "drift-dcqcn",
            Severity::Warning,
            host,
            subj,
            format!("{} DCQCN knob(s) differ from the fabric file", knobs.len()),
            ev,
            &format!("write the intended values (`{}`), or update the fabric file", cmds.join("; ")),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iboe_mtu() {
        assert_eq!(roce_mtu_for_netdev_mtu(9000), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(4192), Some(4096));
        assert_eq!(roce_mtu_for_netdev_mtu(4191), Some(2048));
        assert_eq!(roce_mtu_for_netdev_mtu(1500), Some(1024));
        assert_eq!(roce_mtu_for_netdev_mtu(90), None);
    }
}
