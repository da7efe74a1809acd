//! InfiniBand fabrics (`[fabric] link_layer = "infiniband"`): the VL and SL configuration
//! instead of the RoCE rules (no PFC, ECN, DSCP or CNP class on IB).

use crate::{Ctx, Findings};
use rocelab_model::infiniband::{Ib, HW_MAX_DATA_VLS, IB_DATA_OVERHEAD};

pub fn check(cx: &Ctx, out: &mut Findings) {
    let Some(ib) = cx.model.ib.as_ref() else { return };
    let written = cx.model.config.infiniband.as_ref();
    let sl_table_written = written.is_some_and(|c| c.sl_to_vl.is_some());
    // The SLs the classes use and the VLs they land on.
    let mut used: Vec<(usize, u8, u8)> = Vec::new();
    for (i, c) in cx.model.qos.classes.iter().enumerate() {
        used.push((i, c.priority, ib.vl_of_sl(c.priority)));
    }
    for &(i, sl, vl) in &used {
        if vl >= ib.data_vls {
            let path =
                if sl_table_written { format!("infiniband.sl_to_vl[{sl}]") } else { "infiniband.data_vls".into() };
            out.emit(
                "IBA001",
                path,
                format!(
                    "class `{}` uses SL {sl}, which maps to VL {vl}, but the ports operate only VL0–VL{} (data_vls = {}): \
                     no receive buffer, so no credits, and its packets never leave",
                    cx.model.qos.classes[i].name,
                    ib.data_vls - 1,
                    ib.data_vls
                ),
                "map the SL to an operated VL in `sl_to_vl`, or raise `data_vls`",
            );
        }
    }
    let in_table = |vl: u8| ib.vl_arb_high.iter().chain(&ib.vl_arb_low).any(|&(v, w)| v == vl && w > 0);
    let mut reported = Vec::new();
    for &(i, sl, vl) in &used {
        if vl < ib.data_vls && !in_table(vl) && !reported.contains(&vl) {
            reported.push(vl);
            let path = if written.is_some_and(|c| c.vl_arb_low.is_some()) {
                "infiniband.vl_arb_low"
            } else if written.is_some_and(|c| c.vl_arb_high.is_some()) {
                "infiniband.vl_arb_high"
            } else {
                "infiniband"
            };
            out.emit(
                "IBA002",
                path,
                format!(
                    "VL {vl} (class `{}`, SL {sl}) has no entry with a weight in either VL arbitration table: the arbiter never \
                     serves it",
                    cx.model.qos.classes[i].name
                ),
                format!("add `{{ vl = {vl}, weight = 64 }}` to `vl_arb_low` (or `vl_arb_high`)"),
            );
        }
    }
    if ib.data_vls > HW_MAX_DATA_VLS {
        out.emit(
            "IBA003",
            "infiniband.data_vls",
            format!(
                "data_vls = {}: more than the {HW_MAX_DATA_VLS} data VLs of rocelab's reference NVIDIA hardware (ConnectX, Quantum); \
                 the subnet manager will bring the ports up with fewer",
                ib.data_vls
            ),
            "use data_vls = 8 or fewer",
        );
    }
    credit_window(cx, ib, out);
    high_starves_low(ib, &used, written.is_some_and(|c| c.limit_of_high_priority.is_some()), out);
}

/// The bytes a VL of `port` must be able to have in flight to run its link at line rate:
/// the cable's round trip (its propagation delay both ways) at the link's rate, plus two
/// maximum packets (the one being received and the one the receiver is forwarding when its
/// credits go back).
fn credit_window_needed(port: &rocelab_model::Port, mtu: u32) -> u64 {
    let rtt_s = 2.0 * port.delay.as_secs_f64();
    (port.speed.gbps() * 1e9 / 8.0 * rtt_s).ceil() as u64 + 2 * (mtu + IB_DATA_OVERHEAD) as u64
}

fn credit_window(cx: &Ctx, ib: &Ib, out: &mut Findings) {
    let m = cx.model;
    let mtu = m.nics.iter().map(|n| n.mtu).max().unwrap_or(4096);
    let worst = m
        .links
        .iter()
        .map(|l| {
            let p = m.port(l.a);
            (credit_window_needed(p, mtu), l)
        })
        .max_by_key(|(need, _)| *need);
    if let Some((need, l)) = worst {
        if need > ib.vl_buffer_bytes {
            let p = m.port(l.a);
            out.emit(
                "IBA004",
                "infiniband.vl_buffer_bytes",
                format!(
                    "vl_buffer_bytes = {} is less than the credit loop of {} -- {} ({} Gb/s, {} m): {need} B; one VL cannot \
                     keep that link at line rate",
                    ib.vl_buffer_bytes,
                    m.port_name(l.a),
                    m.port_name(l.b),
                    p.speed.gbps(),
                    p.length_m
                ),
                format!("raise vl_buffer_bytes to {need} or more, or shorten the cable"),
            );
        }
    }
}

fn high_starves_low(ib: &Ib, used: &[(usize, u8, u8)], limit_written: bool, out: &mut Findings) {
    if ib.limit_of_high_priority != 255 {
        return;
    }
    let high = |vl: u8| ib.vl_arb_high.iter().any(|&(v, w)| v == vl && w > 0);
    let low = |vl: u8| ib.vl_arb_low.iter().any(|&(v, w)| v == vl && w > 0);
    let used_high: Vec<u8> = used.iter().map(|u| u.2).filter(|&v| high(v)).collect();
    // A VL in neither table is never served at all: IBA002's finding, not this one's.
    let used_low: Vec<u8> = used.iter().map(|u| u.2).filter(|&v| !high(v) && low(v)).collect();
    if let (Some(h), Some(l)) = (used_high.first(), used_low.first()) {
        out.emit(
            "IBA005",
            if limit_written { "infiniband.limit_of_high_priority" } else { "infiniband" },
            format!(
                "limit_of_high_priority = 255 (unlimited) with VL {h} in use in the high-priority table: while it has packets \
                 and credits, VL {l} (low priority) never sends"
            ),
            "bound the high-priority table (e.g. limit_of_high_priority = 16, 64 KiB), or keep only small control traffic in it",
        );
    }
}
