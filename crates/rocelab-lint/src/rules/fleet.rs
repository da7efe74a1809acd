//! The NIC fleet: one DCQCN configuration, one firmware, congestion control on.

use super::used_nics;
use crate::{Ctx, Findings};
use rocelab_model::config::CongestionControl;
use rocelab_model::Dcqcn;

/// Names of the DCQCN knobs that differ between two profiles, with both values.
fn dcqcn_diff(a: &Dcqcn, b: &Dcqcn) -> Vec<String> {
    let mut d = Vec::new();
    macro_rules! cmp {
        ($fmt:literal: $($f:ident),*) => {$(
            if a.$f != b.$f {
                d.push(format!(concat!("{} ", $fmt, " vs ", $fmt), stringify!($f), a.$f, b.$f));
            }
        )*};
    }
    cmp!("{:?}": variant, g, byte_counter_bytes, fast_recovery_steps, initial_alpha, clamp_target_rate);
    cmp!("{}": alpha_timer, increase_timer, rate_reduce_period, cnp_interval, cnp_delay, rate_ai, rate_hai, min_rate);
    d
}

pub fn check(cx: &Ctx, out: &mut Findings) {
    let nics = used_nics(cx);
    if let Some(first) = nics.first() {
        for n in &nics[1..] {
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
    if !cx.lossless_priorities.is_empty() {
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
