//! The NIC fleet: one DCQCN configuration, one firmware, congestion control on.

use super::used_nics;
use crate::{Ctx, Findings};
use rocelab_model::config::{CongestionControl, DcqcnVariant};
use rocelab_model::{Dcqcn, NicProfile};

/// The knobs of `[nic.dcqcn]` that differ between two profiles, named and valued as the fabric
/// file writes them (`variant "mlx5" vs "paper"`, `alpha_timer_us 1 vs 55`).
fn dcqcn_diff(a: &Dcqcn, b: &Dcqcn) -> Vec<String> {
    fn variant(v: DcqcnVariant) -> &'static str {
        match v {
            DcqcnVariant::Mlx5 => "\"mlx5\"",
            DcqcnVariant::Paper => "\"paper\"",
        }
    }
    let us = |t: rocelab_model::SimTime| format!("{}", t.as_us_f64());
    let mbps = |r: rocelab_model::BitsPerSec| format!("{}", r.0 as f64 / 1e6);
    let knobs: [(&str, String, String); 17] = [
        ("variant", variant(a.variant).into(), variant(b.variant).into()),
        ("g", a.g.to_string(), b.g.to_string()),
        ("alpha_timer_us", us(a.alpha_timer), us(b.alpha_timer)),
        ("increase_timer_us", us(a.increase_timer), us(b.increase_timer)),
        ("byte_counter_bytes", a.byte_counter_bytes.to_string(), b.byte_counter_bytes.to_string()),
        ("fast_recovery_steps", a.fast_recovery_steps.to_string(), b.fast_recovery_steps.to_string()),
        ("rate_ai_mbps", mbps(a.rate_ai), mbps(b.rate_ai)),
        ("rate_hai_mbps", mbps(a.rate_hai), mbps(b.rate_hai)),
        ("min_rate_mbps", mbps(a.min_rate), mbps(b.min_rate)),
        ("rate_reduce_period_us", us(a.rate_reduce_period), us(b.rate_reduce_period)),
        ("initial_alpha", a.initial_alpha.to_string(), b.initial_alpha.to_string()),
        ("clamp_target_rate", a.clamp_target_rate.to_string(), b.clamp_target_rate.to_string()),
        (
            "clamp_target_rate_after_time_inc",
            a.clamp_target_rate_after_time_inc.to_string(),
            b.clamp_target_rate_after_time_inc.to_string(),
        ),
        (
            "min_dec_fac_percent",
            ((1.0 - a.max_cut_fraction) * 100.0).to_string(),
            ((1.0 - b.max_cut_fraction) * 100.0).to_string(),
        ),
        ("rate_on_first_cnp_mbps", mbps(a.rate_on_first_cnp), mbps(b.rate_on_first_cnp)),
        ("cnp_interval_us", us(a.cnp_interval), us(b.cnp_interval)),
        ("cnp_delay_us", us(a.cnp_delay), us(b.cnp_delay)),
    ];
    knobs.into_iter().filter(|(_, x, y)| x != y).map(|(k, x, y)| format!("{k} {x} vs {y}")).collect()
}

/// The NIC settings outside `[nic.dcqcn]` and `[nic.qos]` (NIC001 and the HOST rules judge
/// those) that differ between two profiles: (key as the file writes it, this value, that value).
fn settings_diff(a: &NicProfile, b: &NicProfile, roce: bool) -> Vec<(&'static str, String, String)> {
    let cc = |c: CongestionControl| match c {
        CongestionControl::Dcqcn => "\"dcqcn\"",
        CongestionControl::None => "\"none\"",
        CongestionControl::Hpcc => "\"hpcc\"",
        CongestionControl::Timely => "\"timely\"",
        CongestionControl::Dctcp => "\"dctcp\"",
    };
    let speed = |n: &NicProfile| n.speed.map_or("the link's".to_string(), |s| format!("{}", s.gbps()));
    let timeout = |n: &NicProfile| n.retransmit_timeout.map_or("none".to_string(), |t| format!("{} µs", t.as_us_f64()));
    let mut knobs: Vec<(&'static str, String, String)> = vec![
        ("mtu", a.mtu.to_string(), b.mtu.to_string()),
        ("speed_gbps", speed(a), speed(b)),
        ("ack_timeout", timeout(a), timeout(b)),
        ("retry_cnt", a.retry_cnt.to_string(), b.retry_cnt.to_string()),
        ("window_bytes", a.window_bytes.to_string(), b.window_bytes.to_string()),
        ("window_scales_with_rate", a.window_scales_with_rate.to_string(), b.window_scales_with_rate.to_string()),
        ("rx_buffer_bytes", a.rx_buffer_bytes.to_string(), b.rx_buffer_bytes.to_string()),
        ("rx_xoff_bytes", a.rx_xoff_bytes.to_string(), b.rx_xoff_bytes.to_string()),
    ];
    if roce {
        knobs.insert(0, ("congestion_control", cc(a.congestion_control).into(), cc(b.congestion_control).into()));
    }
    knobs.into_iter().filter(|(_, x, y)| x != y).collect()
}

pub fn check(cx: &Ctx, out: &mut Findings) {
    let nics = used_nics(cx);
    // (DCQCN and PFC are RoCE's: on InfiniBand only the firmware rule applies.)
    let roce = !cx.model.is_ib();
    if let Some(first) = nics.first() {
        for n in nics[1..].iter().filter(|_| roce) {
            let diff = dcqcn_diff(&first.dcqcn, &n.dcqcn);
            if !diff.is_empty() {
                out.emit(
                    "NIC001",
                    format!("{}.dcqcn", n.path),
                    format!(
                        "DCQCN of NIC profile `{}` differs from `{}`: {}",
                        n.name,
                        first.name,
                        diff.iter().take(4).cloned().collect::<Vec<_>>().join("; ")
                    ),
                    "use one DCQCN configuration across the fleet",
                );
            }
        }
        for n in &nics[1..] {
            let diff = settings_diff(first, n, roce);
            if let Some((key, _, _)) = diff.first() {
                let listed: Vec<String> = diff.iter().map(|(k, x, y)| format!("{k} {x} vs {y}")).collect();
                out.emit(
                    "NIC004",
                    format!("{}.{key}", n.path),
                    format!(
                        "NIC profile `{}` is set up unlike `{}`: {}",
                        n.name,
                        first.name,
                        listed.join("; ")
                    ),
                    "provision every NIC of the fleet alike (one mlxconfig/firmware-settings baseline), or explain the exception in a `lint.disable` entry",
                );
            }
        }
        let known: Vec<_> = nics.iter().filter(|n| n.firmware != "unspecified").collect();
        if let Some(f) = known.first() {
            for n in &known[1..] {
                if n.firmware != f.firmware {
                    out.emit(
                        "NIC002",
                        format!("{}.firmware", n.path),
                        format!(
                            "NIC profile `{}` runs firmware {} while `{}` runs {}",
                            n.name, n.firmware, f.name, f.firmware
                        ),
                        "upgrade the fleet to one firmware version",
                    );
                }
            }
        }
    }
    // A `nic_assign` pattern that matches no host assigns nothing: the hosts it meant (a rack
    // on old firmware) take the default profile, and the fabric file's heterogeneity is lost.
    let m = cx.model;
    for (i, a) in m.config.nic_assign.iter().enumerate() {
        for (j, pat) in a.hosts.iter().enumerate() {
            if !m.hosts().any(|h| rocelab_model::glob_match(pat, &m.node(h).name)) {
                out.emit(
                    "NIC005",
                    format!("nic_assign[{i}].hosts[{j}]"),
                    format!("the pattern `{pat}` matches no host, so it gives profile `{}` to none", a.profile),
                    "fix the pattern (`*` and `?` over host names; `rocelab topo --format json` lists them), or remove it",
                );
            }
        }
    }
    if roce && !cx.lossless_priorities.is_empty() {
        for n in &nics {
            if n.congestion_control == CongestionControl::None {
                out.emit(
                    "NIC003",
                    format!("{}.congestion_control", n.path),
                    format!(
                        "NIC profile `{}` has no congestion control while priorities {:?} are lossless",
                        n.name, cx.lossless_priorities
                    ),
                    "set `congestion_control = \"dcqcn\"`",
                );
            }
        }
    }
}
