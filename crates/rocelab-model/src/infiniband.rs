//! The InfiniBand link layer, resolved from `[fabric] link_layer = "infiniband"` and
//! `[infiniband]`: data VLs, per-VL receive buffers (the credits a receiver advertises), the
//! SL → VL table, VL arbitration and the routing mode. `docs/infiniband.md` explains what the
//! engine does with each; `docs/fabric-file.md` lists the keys and the sources of the defaults.

use crate::config::{Config, IbCcConfig, IbRoutingKind, InfinibandConfig, LinkLayer, VlArbEntry};
use crate::Diagnostic;
use crate::SimTime;

/// IB data packet overhead, the headers every packet carries besides its payload (IBTA Vol. 1
/// ch. 7 and 9): Local Route Header 8, Base Transport Header 12, Invariant CRC 4, Variant CRC 2.
/// No GRH (inside one subnet), no Ethernet preamble or gap.
pub const LRH: u32 = 8;
pub const BTH: u32 = 12;
pub const ICRC: u32 = 4;
pub const VCRC: u32 = 2;
/// Bytes around an IB data payload: 26.
pub const IB_DATA_OVERHEAD: u32 = LRH + BTH + ICRC + VCRC;
/// An ACK: the headers plus the ACK Extended Transport Header (AETH, 4).
pub const IB_ACK_WIRE: u32 = IB_DATA_OVERHEAD + 4;
/// A congestion notification (BECN carrier, IBTA Vol. 1 A10.2.2.2): the headers plus 16
/// reserved bytes, as RoCE's CNP.
pub const IB_CNP_WIRE: u32 = IB_DATA_OVERHEAD + 16;

/// Default data VLs: 8 (VL0–VL7), rocelab's reference for the VL capability of NVIDIA ConnectX
/// adapters and Quantum switches (check a port's with `ibv_devinfo -v`, `max_vl_num`, or
/// `ibportstate`: VLCap).
pub const DEFAULT_DATA_VLS: u8 = 8;
/// The most data VLs NVIDIA's hardware operates (the spec allows 15).
pub const HW_MAX_DATA_VLS: u8 = 8;
/// Default receive buffer per data VL and input port: 64 KiB, 1,024 credits of 64 bytes; it
/// covers the credit loop of a 400 Gb/s link up to about 100 m (see docs/infiniband.md).
pub const DEFAULT_VL_BUFFER_BYTES: u64 = 65_536;

/// The resolved InfiniBand settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Ib {
    pub data_vls: u8,
    pub vl_buffer_bytes: u64,
    pub sl_to_vl: [u8; 16],
    /// (VL, weight in 64-byte units).
    pub vl_arb_high: Vec<(u8, u16)>,
    pub vl_arb_low: Vec<(u8, u16)>,
    /// Limit of high priority in 4096-byte units; 255: unlimited.
    pub limit_of_high_priority: u16,
    pub routing: IbRoutingKind,
    /// Congestion control; `None`: off.
    pub cc: Option<IbCc>,
}

/// IB congestion control as the engine runs it (`docs/infiniband.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct IbCc {
    pub marking_threshold_bytes: u64,
    pub ccti_increase: u16,
    pub ccti_limit: u16,
    pub ccti_timer: SimTime,
    /// The inter-packet delay of CCT entry i is i × this.
    pub cct_step: SimTime,
}

impl IbCc {
    /// A QP's send gap at CCT index `ccti`: its packet's serialization `ser` plus the entry's
    /// inter-packet delay.
    pub fn gap(&self, ser: SimTime, ccti: u16) -> SimTime {
        ser + SimTime(self.cct_step.0 * ccti as u64)
    }
}

/// Defaults of `[infiniband.cc]`.
pub const DEFAULT_CC: IbCcDefaults = IbCcDefaults {
    marking_threshold_bytes: 32_768,
    ccti_increase: 1,
    ccti_limit: 127,
    ccti_timer_us: 10.0,
    cct_step_ns: 10.0,
};

pub struct IbCcDefaults {
    pub marking_threshold_bytes: u64,
    pub ccti_increase: u16,
    pub ccti_limit: u16,
    pub ccti_timer_us: f64,
    pub cct_step_ns: f64,
}

fn resolve_cc(c: &IbCcConfig, errs: &mut Vec<Diagnostic>) -> Option<IbCc> {
    if c.enabled == Some(false) {
        return None;
    }
    let d = &DEFAULT_CC;
    let n = errs.len();
    let thr = c.marking_threshold_bytes.unwrap_or(d.marking_threshold_bytes);
    if thr == 0 || thr > 1 << 30 {
        errs.push(Diagnostic::new(
            "infiniband.cc.marking_threshold_bytes",
            format!("marking_threshold_bytes = {thr} must be between 1 and 2³⁰"),
            "e.g. 32768 (half of a 64 KiB VL buffer)",
        ));
    }
    let increase = c.ccti_increase.unwrap_or(d.ccti_increase);
    let limit = c.ccti_limit.unwrap_or(d.ccti_limit);
    if increase == 0 || limit == 0 || limit > 16_383 {
        errs.push(Diagnostic::new(
            if increase == 0 { "infiniband.cc.ccti_increase" } else { "infiniband.cc.ccti_limit" },
            format!(
                "ccti_increase = {increase} and ccti_limit = {limit}: both must be at least 1, the limit at most 16383"
            ),
            "e.g. ccti_increase = 1, ccti_limit = 127",
        ));
    }
    let time = |key: &str, v: f64, scale: f64, errs: &mut Vec<Diagnostic>| {
        // At least one picosecond, the engine's tick: a smaller value would be 0.
        let t = if v.is_finite() && v > 0.0 && v <= 1e9 { SimTime::from_secs_f64(v * scale) } else { SimTime::ZERO };
        if t > SimTime::ZERO {
            t
        } else {
            errs.push(Diagnostic::new(
                format!("infiniband.cc.{key}"),
                format!("{key} = {v} must be a positive time of at least 1 ps"),
                "e.g. ccti_timer_us = 10, cct_step_ns = 10",
            ));
            SimTime::ZERO
        }
    };
    let ccti_timer = time("ccti_timer_us", c.ccti_timer_us.unwrap_or(d.ccti_timer_us), 1e-6, errs);
    let cct_step = time("cct_step_ns", c.cct_step_ns.unwrap_or(d.cct_step_ns), 1e-9, errs);
    (errs.len() == n).then_some(IbCc {
        marking_threshold_bytes: thr,
        ccti_increase: increase,
        ccti_limit: limit,
        ccti_timer,
        cct_step,
    })
}

impl Ib {
    /// Bytes the high-priority table may send while a low-priority VL waits; `None`:
    /// unlimited (255).
    pub fn high_limit_bytes(&self) -> Option<u64> {
        (self.limit_of_high_priority != 255).then_some(self.limit_of_high_priority as u64 * 4096)
    }

    /// The VL of a service level.
    pub fn vl_of_sl(&self, sl: u8) -> u8 {
        self.sl_to_vl[(sl & 15) as usize]
    }
}

/// Resolves the IB settings: `None` on a RoCE fabric (where `[infiniband]` is an error).
pub fn resolve(c: &Config, errs: &mut Vec<Diagnostic>) -> Option<Ib> {
    let ib = c.infiniband.clone().unwrap_or_default();
    if c.fabric.link_layer == LinkLayer::Roce {
        if c.infiniband.is_some() {
            errs.push(Diagnostic::new(
                "infiniband",
                "`[infiniband]` is set but the fabric's link layer is RoCE",
                "add `link_layer = \"infiniband\"` to `[fabric]`, or remove `[infiniband]`",
            ));
        }
        return None;
    }
    resolve_ib(&ib, errs)
}

fn resolve_ib(c: &InfinibandConfig, errs: &mut Vec<Diagnostic>) -> Option<Ib> {
    let n = errs.len();
    let data_vls = c.data_vls.unwrap_or(DEFAULT_DATA_VLS);
    if ![1, 2, 4, 8, 15].contains(&data_vls) {
        errs.push(Diagnostic::new(
            "infiniband.data_vls",
            format!("data_vls = {data_vls}: a port operates 1, 2, 4, 8 or 15 data VLs (IBTA OperationalVLs)"),
            "use 8 (VL0–VL7, what NVIDIA hardware supports), or fewer",
        ));
    }
    let vl_buffer_bytes = c.vl_buffer_bytes.unwrap_or(DEFAULT_VL_BUFFER_BYTES);
    // At least one 4096-byte MTU packet and its headers; at most 16 MiB (the spec's 12-bit
    // credit counters cover far less; larger would only hide a typo).
    if !(4_096 + 128..=16 << 20).contains(&vl_buffer_bytes) {
        errs.push(Diagnostic::new(
            "infiniband.vl_buffer_bytes",
            format!("vl_buffer_bytes = {vl_buffer_bytes} must hold one 4096-byte packet and be at most 16 MiB"),
            "e.g. 65536 (1,024 credits of 64 bytes)",
        ));
    }
    let mut sl_to_vl = [0u8; 16];
    match &c.sl_to_vl {
        None => {
            for (sl, vl) in sl_to_vl.iter_mut().enumerate() {
                *vl = sl as u8 % data_vls.max(1);
            }
        }
        Some(t) if t.len() != 16 => errs.push(Diagnostic::new(
            "infiniband.sl_to_vl",
            format!("sl_to_vl has {} entries; it needs one per service level, 16", t.len()),
            "e.g. sl_to_vl = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]",
        )),
        Some(t) => {
            for (i, &vl) in t.iter().enumerate() {
                if vl > 14 {
                    errs.push(Diagnostic::new(
                        format!("infiniband.sl_to_vl[{i}]"),
                        format!("SL {i} → VL {vl}: data VLs are 0..=14 (VL15 is for subnet management)"),
                        "map every SL to a data VL",
                    ));
                }
                sl_to_vl[i] = vl;
            }
        }
    }
    let table = |key: &str, t: &Option<Vec<VlArbEntry>>, default: Vec<(u8, u16)>, errs: &mut Vec<Diagnostic>| {
        let Some(t) = t else { return default };
        if t.len() > 64 {
            errs.push(Diagnostic::new(
                format!("infiniband.{key}"),
                format!("{key} has {} entries; an arbitration table holds at most 64", t.len()),
                "shorten the table",
            ));
        }
        let mut out = Vec::with_capacity(t.len());
        for (i, e) in t.iter().enumerate() {
            if e.vl > 14 {
                errs.push(Diagnostic::new(
                    format!("infiniband.{key}[{i}].vl"),
                    format!("vl = {}: data VLs are 0..=14", e.vl),
                    "name a data VL",
                ));
            }
            if e.weight > 255 {
                errs.push(Diagnostic::new(
                    format!("infiniband.{key}[{i}].weight"),
                    format!("weight = {}: a weight is 0..=255 (units of 64 bytes)", e.weight),
                    "e.g. 64 (4096 bytes per turn)",
                ));
            }
            out.push((e.vl, e.weight));
        }
        out
    };
    // OpenSM's defaults (opensm.conf: qos_vlarb_high 0:4, qos_vlarb_low 1..14:4,
    // qos_high_limit 0), cut to the operated VLs.
    let vl_arb_high = table("vl_arb_high", &c.vl_arb_high, vec![(0, 4)], errs);
    let vl_arb_low = table("vl_arb_low", &c.vl_arb_low, (1..data_vls.max(1)).map(|v| (v, 4)).collect(), errs);
    let limit_of_high_priority = c.limit_of_high_priority.unwrap_or(0);
    if limit_of_high_priority > 255 {
        errs.push(Diagnostic::new(
            "infiniband.limit_of_high_priority",
            format!(
                "limit_of_high_priority = {limit_of_high_priority}: it is 0..=255 (units of 4096 bytes; 255 unlimited)"
            ),
            "e.g. 0 (one high-priority packet, then a low-priority one may go) or 255",
        ));
    }
    let routing = c.routing.unwrap_or_default();
    let cc = c.cc.as_ref().and_then(|cc| resolve_cc(cc, errs));
    (errs.len() == n).then_some(Ib {
        data_vls,
        vl_buffer_bytes,
        sl_to_vl,
        vl_arb_high,
        vl_arb_low,
        limit_of_high_priority,
        routing,
        cc,
    })
}
