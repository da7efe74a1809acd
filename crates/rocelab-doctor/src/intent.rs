//! Fills the doctor's [`Intent`] from a validated fabric [`Model`].
//!
//! What is compared, per host (by the NIC profile the fabric assigns it):
//! trust mode, the DSCP→priority entries of every non-default traffic class plus the RoCE and
//! CNP code points (the rest of the 64-entry table is the NIC's business), PFC priorities, the
//! ECN NP/RP priorities, CNP DSCP and priority, the RoCE MTU, firmware, the line rate, and the
//! DCQCN knobs the fabric file sets *explicitly* (resolved defaults are the simulator's
//! variant defaults, in the simulator's units, and would flag every host).
//!
//! Host names: a rail-optimized fabric names NIC endpoints `node3-nic0`; a GPU server's
//! host name is `node3`, so both names are registered.

use crate::drift::{IntendedHost, Intent};
use rocelab_model::config::{DcqcnConfig, Trust};
use rocelab_model::{Model, NicProfile};
use std::collections::{BTreeMap, BTreeSet};

fn mask_set(mask: u8) -> BTreeSet<u8> {
    (0u8..8).filter(|p| mask & (1 << p) != 0).collect()
}

/// mlx5 sysfs knob values for the DCQCN settings a fabric file states.
pub fn dcqcn_knobs(d: &DcqcnConfig) -> BTreeMap<String, i64> {
    let mut k = BTreeMap::new();
    let mut put = |name: &str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            k.insert(name.to_string(), v.round() as i64);
        }
    };
    put("roce_rp/rpg_ai_rate", d.rate_ai_mbps);
    put("roce_rp/rpg_hai_rate", d.rate_hai_mbps);
    put("roce_rp/rpg_min_rate", d.min_rate_mbps);
    put("roce_rp/rpg_time_reset", d.increase_timer_us);
    put("roce_rp/rpg_byte_reset", d.byte_counter_bytes.map(|b| b as f64));
    put("roce_rp/rpg_threshold", d.fast_recovery_steps.map(|s| s as f64));
    put("roce_rp/rate_reduce_monitor_period", d.rate_reduce_period_us);
    put("roce_rp/dce_tcp_rtt", d.alpha_timer_us);
    // mlx5 holds alpha in 10 bits: 1023 = 1.0.
    put("roce_rp/initial_alpha_value", d.initial_alpha.map(|a| (a * 1024.0).min(1023.0)));
    // dce_tcp_g is the share of α kept per period, in 1/1024: g = 5/1024 is 1019.
    put("roce_rp/dce_tcp_g", d.g.map(|g| 1024.0 - g * 1024.0));
    put("roce_rp/clamp_tgt_rate", d.clamp_target_rate.map(|c| c as u8 as f64));
    put("roce_rp/clamp_tgt_rate_after_time_inc", d.clamp_target_rate_after_time_inc.map(|c| c as u8 as f64));
    put("roce_rp/rpg_min_dec_fac", d.min_dec_fac_percent);
    put("roce_rp/rate_to_set_on_first_cnp", d.rate_on_first_cnp_mbps);
    put("roce_np/min_time_between_cnps", d.cnp_interval_us);
    k
}

fn host_intent(model: &Model, nic: &NicProfile, line_rate_gbps: Option<f64>) -> IntendedHost {
    let q = &nic.qos;
    let mut dscps: BTreeSet<u8> = [q.roce_dscp, q.cnp_dscp].into_iter().collect();
    for (i, c) in model.qos.classes.iter().enumerate() {
        if i != model.qos.default_class {
            dscps.extend(c.dscp.iter().copied());
        }
    }
    let dscp_to_priority = dscps.into_iter().filter(|d| *d < 64).map(|d| (d, q.dscp_to_priority[d as usize])).collect();
    let explicit = if nic.path == "nic" {
        Some(&model.config.nic)
    } else {
        nic.path.strip_prefix("nic_profiles.").and_then(|n| model.config.nic_profiles.get(n))
    };
    IntendedHost {
        profile: nic.name.clone(),
        trust: Some(match q.trust {
            Trust::Dscp => "dscp".into(),
            Trust::Pcp => "pcp".into(),
        }),
        dscp_to_priority,
        pfc_priorities: Some(mask_set(q.pfc_mask)),
        ecn_np_priorities: Some(mask_set(q.ecn_np_mask)),
        ecn_rp_priorities: Some(mask_set(q.ecn_rp_mask)),
        cnp_dscp: Some(q.cnp_dscp),
        cnp_priority: Some(q.cnp_priority),
        roce_mtu: Some(nic.mtu),
        // The model says "unspecified" when the fabric file names no firmware: nothing to compare.
        firmware: (!nic.firmware.is_empty() && nic.firmware != "unspecified").then(|| nic.firmware.clone()),
        dcqcn: explicit.map(|c| dcqcn_knobs(&c.dcqcn)).unwrap_or_default(),
        line_rate_gbps,
    }
}

/// `node3-nic0` -> `node3`.
fn gpu_node_name(host: &str) -> Option<&str> {
    let (base, nic) = host.rsplit_once("-nic")?;
    (!base.is_empty() && !nic.is_empty() && nic.chars().all(|c| c.is_ascii_digit())).then_some(base)
}

pub fn from_model(model: &Model, source: &str) -> Intent {
    let max_speed = model
        .hosts()
        .map(|h| model.host_speed(h).gbps())
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    let mut hosts = BTreeMap::new();
    let mut per_gpu_node: BTreeMap<String, (u32, IntendedHost)> = BTreeMap::new();
    for h in model.hosts() {
        let name = model.node(h).name.clone();
        let ih = host_intent(model, model.nic_of(h), Some(model.host_speed(h).gbps()));
        if let Some(g) = gpu_node_name(&name) {
            let e = per_gpu_node.entry(g.to_string()).or_insert((0, ih.clone()));
            e.0 += 1;
        }
        hosts.insert(name, ih);
    }
    let mut nics_per_node = 1;
    for (g, (count, ih)) in per_gpu_node {
        nics_per_node = nics_per_node.max(count);
        hosts.entry(g).or_insert(ih);
    }
    if !model.rails.is_empty() {
        nics_per_node = nics_per_node.max(model.rails.len() as u32);
    }
    let default = model.nics.first().map(|n| host_intent(model, n, max_speed)).unwrap_or_default();
    Intent {
        source: source.to_string(),
        default,
        hosts,
        nics_per_node: Some(nics_per_node),
        fabric_hash: Some(model.fabric_hash),
        lossless_queues: model.qos.classes.iter().filter(|c| c.lossless).map(|c| (c.queue, c.priority)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_node_names() {
        assert_eq!(gpu_node_name("node3-nic0"), Some("node3"));
        assert_eq!(gpu_node_name("host3"), None);
        assert_eq!(gpu_node_name("a-nicx"), None);
    }

    #[test]
    fn intent_from_a_leaf_spine_fabric() {
        let text = "[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\nhost_link = { speed_gbps = 400, length_m = 3 }\nfabric_link = { speed_gbps = 400, length_m = 30 }\n\n[nic]\nmtu = 4096\nfirmware = \"28.39.1002\"\n[nic.dcqcn]\nrate_ai_mbps = 5\ncnp_interval_us = 4\ng = 0.0048828125\ninitial_alpha = 0.9990234375\nclamp_target_rate_after_time_inc = true\nmin_dec_fac_percent = 50\n";
        let model = rocelab_model::load_str("t.toml", text).expect("valid fabric");
        let i = from_model(&model, "t.toml");
        let h = i.for_host("host0");
        assert_eq!(h.trust.as_deref(), Some("dscp"));
        assert_eq!(h.dscp_to_priority.get(&26), Some(&3));
        assert_eq!(h.dscp_to_priority.get(&48), Some(&6));
        assert_eq!(h.pfc_priorities, Some([3u8].into_iter().collect()));
        assert_eq!(h.roce_mtu, Some(4096));
        assert_eq!(h.firmware.as_deref(), Some("28.39.1002"));
        assert_eq!(h.dcqcn.get("roce_rp/rpg_ai_rate"), Some(&5));
        assert_eq!(h.dcqcn.get("roce_np/min_time_between_cnps"), Some(&4));
        // ConnectX's own encodings: g = 5/1024 is dce_tcp_g 1019, α = 1023/1024 is 1023.
        assert_eq!(h.dcqcn.get("roce_rp/dce_tcp_g"), Some(&1019));
        assert_eq!(h.dcqcn.get("roce_rp/initial_alpha_value"), Some(&1023));
        assert_eq!(h.dcqcn.get("roce_rp/clamp_tgt_rate_after_time_inc"), Some(&1));
        assert_eq!(h.dcqcn.get("roce_rp/rpg_min_dec_fac"), Some(&50));
        assert_eq!(h.line_rate_gbps, Some(400.0));
        assert_eq!(i.node_net_gbps("host0"), Some(400.0));
        // The default QoS: RoCE on priority 3, queue 3, lossless.
        assert_eq!(i.lossless_queues, [(3u8, 3u8)].into_iter().collect());
    }

    #[test]
    fn rail_optimized_gpu_nodes_get_all_their_nics() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-128gpu.toml");
        let model = rocelab_model::load_file(&p).expect("example fabric loads");
        let i = from_model(&model, "rail-128gpu.toml");
        let rails = model.rails.len() as u32;
        assert!(rails > 1);
        assert_eq!(i.nics_per_node, Some(rails));
        // The GPU server `node0` is known as well as its NIC endpoints `node0-nic<r>`.
        assert!(i.hosts.contains_key("node0") && i.hosts.contains_key("node0-nic0"));
        let per_nic = i.for_host("node0-nic0").line_rate_gbps.unwrap();
        assert_eq!(i.node_net_gbps("node0"), Some(per_nic * rails as f64));
    }
}
