//! PFC headroom per port and priority, and the switch buffer it comes out of.

use crate::{bytes, gbps, Ctx, Findings};
use rocelab_model::presets;

pub fn check(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    let q = &m.qos;
    if cx.lossless_priorities.is_empty() {
        return;
    }
    if let Some(configured) = q.pfc.headroom_bytes {
        let mut short = 0usize;
        let mut total = 0usize;
        let mut worst: Option<(rocelab_model::PortId, presets::Headroom)> = None;
        for sw in m.switches() {
            for p in m.node(sw).ports() {
                let Some(h) = cx.required_headroom[p.idx()] else { continue };
                total += 1;
                if h.xoff_bytes > configured {
                    short += 1;
                    if worst.is_none_or(|(_, w)| h.xoff_bytes > w.xoff_bytes) {
                        worst = Some((p, h));
                    }
                }
            }
        }
        if let Some((p, h)) = worst {
            let port = m.port(p);
            let speed = port.speed.gbps();
            let quanta = q.pfc.peer_response_quanta.unwrap_or_else(|| presets::peer_response_quanta(speed));
            let cable = 2.0 * port.length_m / presets::SPEED_OF_LIGHT_IN_CABLE_M_PER_S * speed * 1e9 / 8.0;
            out.emit(
                "HDR001",
                "qos.pfc.headroom_bytes",
                format!(
                    "headroom {} per port and lossless priority is short on {short} of {total} switch ports; worst {} ({}, {} m cable, MTU {}) needs XOFF headroom {} (cable round trip {:.0} B, peer response {quanta} quanta = {} B), {} with XON",
                    bytes(configured),
                    m.port_name(p),
                    gbps(speed),
                    port.length_m,
                    port.mtu,
                    bytes(h.xoff_bytes),
                    cable,
                    quanta as u64 * 64,
                    bytes(h.size_bytes)
                ),
                format!("set headroom_bytes to at least {} (xoff + xon), or leave it out to size it per port", h.size_bytes),
            );
        }
    }
    if let Some((sw, b)) = cx.tightest_switch() {
        let used = b.committed_bytes();
        let path = if q.pfc.headroom_bytes.is_some() {
            "qos.pfc.headroom_bytes".to_string()
        } else {
            let mp = cx.switch_model_path(sw);
            if mp.starts_with("switch_models.") {
                format!("{mp}.buffer_bytes")
            } else {
                mp
            }
        };
        let what = format!(
            "on `{}`, headroom {} ({} ports x {} lossless priorities) plus reserves {} take {} of the {} buffer ({:.0} %)",
            m.node(sw).name,
            bytes(b.headroom_bytes),
            m.node(sw).num_ports,
            cx.lossless_priorities.len(),
            bytes(b.reserve_bytes),
            bytes(used),
            bytes(b.buffer_bytes),
            used as f64 * 100.0 / b.buffer_bytes as f64
        );
        if used > b.buffer_bytes {
            out.emit(
                "HDR002",
                path,
                what,
                "fewer lossless priorities, shorter cables, smaller reserves, or a switch with a larger buffer",
            );
        } else if used.saturating_mul(2) > b.buffer_bytes {
            out.emit(
                "HDR003",
                path,
                format!("{what}: less than half is left for the shared pool"),
                "fewer lossless priorities, shorter cables, or a larger buffer",
            );
        }
    }
}
