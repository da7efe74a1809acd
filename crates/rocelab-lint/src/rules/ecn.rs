//! ECN/WRED thresholds against the packet size, the port speeds, the buffer and the PFC point.

use super::class_path;
use crate::{bytes, gbps, Ctx, Findings, ROCE_HEADER_BYTES};
use rocelab_model::config::EcnConfig;
use rocelab_model::NodeId;

/// The round trip a RoCE sender's reaction takes when the fabric's cables do not make it longer:
/// Huawei's CloudEngine AI-fabric guidance sizes ECN from an expected RoCEv2 RTT of 20 µs (it
/// covers the NICs' CNP generation and rate update, not only the cables).
pub(crate) const REFERENCE_RTT_US: f64 = 20.0;

/// The round trip ECN thresholds are judged against: the reference RTT, or the fabric's own
/// propagation round trip over its longest up/down route when that is longer (long-haul links).
pub(crate) fn judged_rtt_us(cx: &Ctx) -> f64 {
    let m = cx.model;
    // The longest cable of each tier pair, crossed twice one way (up, then down).
    let mut longest = [0.0f64; 4];
    for l in &m.links {
        let (a, b) = (m.port(l.a), m.port(l.b));
        let lower = m.node(a.node).tier.min(m.node(b.node).tier);
        let slot = &mut longest[lower as usize];
        *slot = slot.max(a.delay.as_us_f64());
    }
    let one_way: f64 = longest.iter().map(|d| 2.0 * d).sum();
    REFERENCE_RTT_US.max(2.0 * one_way)
}

/// Bytes a port of `gbps` sends in one round trip of `rtt_us`.
pub(crate) fn bdp_bytes(gbps: f64, rtt_us: f64) -> u64 {
    (gbps * 1e9 * rtt_us * 1e-6 / 8.0).round() as u64
}

/// The largest queue a dynamic threshold lets one congested queue reach: α·S/(1+α).
pub(crate) fn dt_limit(alpha: f64, shared: u64) -> u64 {
    if alpha.is_infinite() {
        shared
    } else {
        (alpha * shared as f64 / (1.0 + alpha)) as u64
    }
}

pub fn check(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    let q = &m.qos;
    let packet = m.nics.iter().map(|n| n.mtu).max().unwrap_or(4096) + ROCE_HEADER_BYTES;
    // Distinct speeds of switch egress ports.
    let mut speeds: Vec<f64> = Vec::new();
    for sw in m.switches() {
        for p in m.node(sw).ports() {
            let s = m.port(p).speed.gbps();
            if !speeds.iter().any(|x| (x - s).abs() < 1e-6) {
                speeds.push(s);
            }
        }
    }
    speeds.sort_by(|a, b| a.total_cmp(b));
    let rtt_us = judged_rtt_us(cx);
    let switches: Vec<NodeId> = m.switches().collect();
    let tightest = |alpha_of: &dyn Fn(NodeId) -> f64| -> Option<(NodeId, u64)> {
        switches
            .iter()
            .filter_map(|&s| cx.buffers[s.idx()].map(|b| (s, b)))
            // An over-committed buffer is HDR002's finding; a threshold of 0 B says nothing more.
            .filter(|(_, b)| b.committed_bytes() < b.buffer_bytes)
            .map(|(s, b)| (s, dt_limit(alpha_of(s), b.shared_bytes())))
            .min_by_key(|(_, l)| *l)
    };
    for (i, cc) in m.config.qos.classes.iter().enumerate() {
        let Some(class) = q.classes.get(i) else { continue };
        let cp = class_path(i);
        let mut sets: Vec<(String, EcnConfig)> = Vec::new();
        if let Some(e) = cc.ecn {
            sets.push((format!("{cp}.ecn"), e));
        }
        for (k, e) in &cc.ecn_per_speed {
            sets.push((format!("{cp}.ecn_per_speed.{k}"), *e));
        }
        let lossless = q.pfc_enabled(class.priority);
        for (ep, e) in &sets {
            if e.kmin_bytes == e.kmax_bytes {
                out.emit(
                    "ECN001",
                    format!("{ep}.kmin_bytes"),
                    format!(
                        "class `{}`: Kmin = Kmax = {}, so marking jumps from 0 to 100 % at one queue depth",
                        class.name,
                        bytes(e.kmin_bytes)
                    ),
                    format!("spread the ramp, e.g. kmax_bytes = {}", e.kmin_bytes.saturating_mul(10)),
                );
            }
            if e.pmax == 0.0 {
                out.emit(
                    "ECN002",
                    format!("{ep}.pmax"),
                    format!(
                        "class `{}`: Pmax = 0, so nothing is marked between Kmin ({}) and Kmax ({})",
                        class.name,
                        bytes(e.kmin_bytes),
                        bytes(e.kmax_bytes)
                    ),
                    "use a marking probability in (0, 1], e.g. pmax = 0.1",
                );
            }
            if e.kmin_bytes < 3 * packet as u64 {
                out.emit(
                    "ECN004",
                    format!("{ep}.kmin_bytes"),
                    format!(
                        "class `{}`: Kmin {} is below 3 RoCE packets of {packet} B ({} B)",
                        class.name,
                        bytes(e.kmin_bytes),
                        3 * packet
                    ),
                    "raise Kmin to at least a few packets (tens to hundreds of KB at 100G and above)",
                );
            }
            let egress_alpha = |s: NodeId| {
                let p = &m.switch_model_of(s).expect("switch").params;
                if lossless {
                    p.egress_lossless_alpha
                } else {
                    p.egress_lossy_alpha
                }
            };
            if let Some((sw, limit)) = tightest(&egress_alpha) {
                if e.kmax_bytes > limit {
                    let b = cx.buffers[sw.idx()].expect("switch buffer");
                    out.emit(
                        "ECN003",
                        format!("{ep}.kmax_bytes"),
                        format!(
                            "class `{}`: Kmax {} is above the {} a queue can reach on `{}` (alpha {} x shared pool {} / (1 + alpha))",
                            class.name,
                            bytes(e.kmax_bytes),
                            bytes(limit),
                            m.node(sw).name,
                            egress_alpha(sw),
                            bytes(b.shared_bytes())
                        ),
                        format!("lower kmax_bytes below {limit}, or raise the egress alpha of the pool"),
                    );
                }
            }
            if lossless {
                let (xoff, what) = match q.pfc.xoff_bytes {
                    Some(x) => (Some(x), "the static XOFF (`qos.pfc.xoff_bytes`)".to_string()),
                    None => {
                        let ingress_alpha =
                            |s: NodeId| m.switch_model_of(s).expect("switch").params.ingress_lossless_alpha;
                        match tightest(&ingress_alpha) {
                            Some((sw, l)) => (
                                Some(l),
                                format!(
                                    "the dynamic XOFF point on `{}` (ingress lossless alpha {})",
                                    m.node(sw).name,
                                    ingress_alpha(sw)
                                ),
                            ),
                            None => (None, String::new()),
                        }
                    }
                };
                if let Some(x) = xoff {
                    let (k, which) = if e.kmin_bytes > x { (e.kmin_bytes, "Kmin") } else { (e.kmax_bytes, "Kmax") };
                    if k > x {
                        out.emit(
                            "ECN006",
                            format!("{ep}.{}", if which == "Kmin" { "kmin_bytes" } else { "kmax_bytes" }),
                            format!(
                                "class `{}`: {which} {} is above {what}, {}: PFC pauses before ECN has done its work",
                                class.name,
                                bytes(k),
                                bytes(x)
                            ),
                            format!("keep Kmax below {x} B, or raise the XOFF point"),
                        );
                    }
                }
            }
        }
        // The ramp against each port speed's bandwidth-delay product (ECN007), reported once per
        // class at the speed where it is shortest in round trips.
        let mut worst: Option<(f64, EcnConfig, u64)> = None;
        for &s in &speeds {
            let Some(e) = class.ecn_for_speed(s) else { continue };
            let bdp = bdp_bytes(s, rtt_us);
            let ramp = e.kmax_bytes - e.kmin_bytes;
            if ramp < bdp
                && worst.is_none_or(|(_, we, wb)| {
                    ramp as f64 / (bdp as f64) < (we.kmax_bytes - we.kmin_bytes) as f64 / wb as f64
                })
            {
                worst = Some((s, e, bdp));
            }
        }
        if let Some((s, e, bdp)) = worst {
            let ramp = e.kmax_bytes - e.kmin_bytes;
            // The key the thresholds on this speed come from.
            let key = cc
                .ecn_per_speed
                .keys()
                .find(|k| k.parse::<f64>().is_ok_and(|v| (v - s).abs() < 1e-6))
                .map(|k| format!("{cp}.ecn_per_speed.{k}.kmax_bytes"))
                .unwrap_or_else(|| format!("{cp}.ecn.kmax_bytes"));
            let us = |b: u64| b as f64 * 8.0 / (s * 1e3);
            let kmax = 3 * bdp;
            out.emit(
                "ECN007",
                key,
                format!(
                    "class `{}` on {} ports: the marking ramp from Kmin {} to Kmax {} spans {}, {:.1} µs at {}, less than one bandwidth-delay product ({} x {} µs RTT = {}): the queue passes Kmax and every packet is marked before the first CNP has slowed a sender",
                    class.name,
                    gbps(s),
                    bytes(e.kmin_bytes),
                    bytes(e.kmax_bytes),
                    bytes(ramp),
                    us(ramp),
                    gbps(s),
                    gbps(s),
                    rocelab_model::units::trim_float(rtt_us),
                    bytes(bdp),
                ),
                format!(
                    "size the thresholds for {}: Kmax - Kmin at least {bdp} B; vendor guidance puts Kmax at 2-3 BDP, e.g. `ecn_per_speed.\"{}\" = {{ kmin_bytes = {}, kmax_bytes = {kmax}, pmax = {} }}`",
                    gbps(s),
                    s.round() as u64,
                    e.kmin_bytes.max(kmax / 20).min(kmax / 10),
                    e.pmax
                ),
            );
        }
        // Speed scaling: the same absolute thresholds on ports at least 2x apart.
        if !sets.is_empty() {
            'outer: for (a, &lo) in speeds.iter().enumerate() {
                for &hi in &speeds[a + 1..] {
                    if hi < 2.0 * lo {
                        continue;
                    }
                    if let (Some(x), Some(y)) = (class.ecn_for_speed(lo), class.ecn_for_speed(hi)) {
                        if x.kmin_bytes == y.kmin_bytes && x.kmax_bytes == y.kmax_bytes {
                            out.emit(
                                "ECN005",
                                sets[0].0.clone(),
                                format!(
                                    "class `{}` marks at Kmin {} / Kmax {} on both {} and {} ports: {:.2} µs vs {:.2} µs of queueing",
                                    class.name,
                                    bytes(x.kmin_bytes),
                                    bytes(x.kmax_bytes),
                                    gbps(lo),
                                    gbps(hi),
                                    x.kmin_bytes as f64 * 8.0 / (lo * 1e3),
                                    x.kmin_bytes as f64 * 8.0 / (hi * 1e3)
                                ),
                                format!(
                                    "add `ecn_per_speed.\"{}\"` with thresholds scaled by {:.0}x",
                                    hi.round() as u64,
                                    hi / lo
                                ),
                            );
                            break 'outer;
                        }
                    }
                }
            }
        }
    }
}
