//! The host's QoS / ECN / DCQCN state and link facts as mlx5 exposes them in sysfs, under
//! `/sys/class/net/<netdev>/`:
//!
//! ```text
//! qos/trust                          dscp | pcp
//! ecn/roce_np/enable/<prio>          1 = this priority answers CE marks with CNPs (NP)
//! ecn/roce_rp/enable/<prio>          1 = this priority slows down on CNPs (RP)
//! ecn/roce_np/{min_time_between_cnps,cnp_dscp,cnp_802p_prio}
//! ecn/roce_rp/{rpg_ai_rate,rpg_hai_rate,rpg_time_reset,rpg_byte_reset,rpg_threshold,
//!              rpg_min_rate,rpg_gd,rate_reduce_monitor_period,initial_alpha_value,
//!              dce_tcp_g,dce_tcp_rtt,clamp_tgt_rate,...}
//! mtu  speed  operstate  carrier_changes  carrier_down_count  statistics/<name>
//! ```
//! The same relative layout is used inside a dump (`netdev/<if>/sysfs/`), so one reader
//! serves the live host, the exporter and the doctor.

use super::{excerpt, parse_count, ParseError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostSysfs {
    pub trust: Option<String>,
    pub ecn_np_enabled: BTreeMap<u8, bool>,
    pub ecn_rp_enabled: BTreeMap<u8, bool>,
    /// Notification-point knobs (`ecn/roce_np/<name>`).
    pub np_params: BTreeMap<String, i64>,
    /// Reaction-point (DCQCN) knobs (`ecn/roce_rp/<name>`).
    pub rp_params: BTreeMap<String, i64>,
    pub mtu: Option<u32>,
    /// Mb/s; the kernel prints -1 when the link is down.
    pub speed_mbps: Option<i64>,
    pub operstate: Option<String>,
    pub carrier_changes: Option<u64>,
    pub carrier_down_count: Option<u64>,
    /// `statistics/<name>` (rx_crc_errors, rx_dropped, rx_bytes, ...).
    pub statistics: BTreeMap<String, u64>,
}

/// One sysfs value file holding a (possibly negative) integer.
pub fn parse_int_file(name: &str, text: &str) -> Result<i64, ParseError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(ParseError::new(name, 0, "empty value"));
    }
    if t.lines().count() > 1 {
        return Err(ParseError::new(name, 2, "a sysfs value file holds one line"));
    }
    t.parse::<i64>().map_err(|_| ParseError::new(name, 1, format!("not an integer: `{}`", excerpt(t))))
}

/// `qos/trust`: `dscp` or `pcp` (some driver versions print `Priority trust state: dscp`).
pub fn parse_trust_file(text: &str) -> Result<String, ParseError> {
    let t = text.trim();
    let v = t.rsplit(':').next().unwrap_or("").trim();
    match v {
        "dscp" | "pcp" => Ok(v.to_string()),
        _ => Err(ParseError::new("qos/trust", 1, format!("expected `dscp` or `pcp`, found `{}`", excerpt(t)))),
    }
}

fn enable_file(name: &str, text: &str) -> Result<bool, ParseError> {
    match parse_int_file(name, text)? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(ParseError::new(name, 1, format!("enable takes 0 or 1, found {v}"))),
    }
}

fn read_opt(path: &Path) -> Option<String> {
    crate::util::read_small(path).ok()
}

fn sorted_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
    v.sort();
    v
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Reads the host state below a netdev directory (`/sys/class/net/eth0` or a dump's copy).
/// Missing files are `None` (not every driver has every knob); malformed ones are errors.
pub fn read_netdev_dir(dir: &Path) -> Result<HostSysfs, ParseError> {
    let mut h = HostSysfs::default();
    let p = dir.join("qos/trust");
    if let Some(t) = read_opt(&p) {
        h.trust = Some(parse_trust_file(&t).map_err(|e| e.in_file(&p))?);
    }
    for (sub, map) in [("ecn/roce_np", &mut h.ecn_np_enabled), ("ecn/roce_rp", &mut h.ecn_rp_enabled)] {
        for f in sorted_entries(&dir.join(sub).join("enable")) {
            let name = file_name(&f);
            let Ok(prio) = name.parse::<u8>() else { continue };
            if prio > 7 {
                continue;
            }
            if let Some(t) = read_opt(&f) {
                map.insert(prio, enable_file(&name, &t).map_err(|e| e.in_file(&f))?);
            }
        }
    }
    for (sub, map) in [("ecn/roce_np", &mut h.np_params), ("ecn/roce_rp", &mut h.rp_params)] {
        for f in sorted_entries(&dir.join(sub)) {
            if !f.is_file() {
                continue;
            }
            let name = file_name(&f);
            if let Some(t) = read_opt(&f) {
                map.insert(name.clone(), parse_int_file(&name, &t).map_err(|e| e.in_file(&f))?);
            }
        }
    }
    let p = dir.join("mtu");
    if let Some(t) = read_opt(&p) {
        let v = parse_int_file("mtu", &t).map_err(|e| e.in_file(&p))?;
        h.mtu = Some(
            u32::try_from(v).map_err(|_| ParseError::new("mtu", 1, format!("MTU out of range: {v}")).in_file(&p))?,
        );
    }
    let p = dir.join("speed");
    if let Some(t) = read_opt(&p) {
        // Reading `speed` of a down link fails with EINVAL on real sysfs; a dump may hold "".
        if !t.trim().is_empty() {
            h.speed_mbps = Some(parse_int_file("speed", &t).map_err(|e| e.in_file(&p))?);
        }
    }
    if let Some(t) = read_opt(&dir.join("operstate")) {
        let t = t.trim();
        if !t.is_empty() {
            h.operstate = Some(excerpt(t));
        }
    }
    for (name, slot) in [("carrier_changes", &mut h.carrier_changes), ("carrier_down_count", &mut h.carrier_down_count)]
    {
        let p = dir.join(name);
        if let Some(t) = read_opt(&p) {
            *slot = Some(parse_count(&t).ok_or_else(|| {
                ParseError::new(name, 1, format!("not a counter: `{}`", excerpt(t.trim()))).in_file(&p)
            })?);
        }
    }
    for f in sorted_entries(&dir.join("statistics")) {
        if !f.is_file() {
            continue;
        }
        let name = file_name(&f);
        if let Some(t) = read_opt(&f) {
            let v = parse_count(&t).ok_or_else(|| {
                ParseError::new(&name, 1, format!("not a counter: `{}`", excerpt(t.trim()))).in_file(&f)
            })?;
            h.statistics.insert(name, v);
        }
    }
    Ok(h)
}

/// Writes `h` in the layout [`read_netdev_dir`] reads (used by `collect` to fill a dump).
pub fn write_netdev_dir(dir: &Path, h: &HostSysfs) -> std::io::Result<()> {
    let put = |rel: String, v: String| -> std::io::Result<()> {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, format!("{v}\n"))
    };
    if let Some(t) = &h.trust {
        put("qos/trust".into(), t.clone())?;
    }
    for (p, e) in &h.ecn_np_enabled {
        put(format!("ecn/roce_np/enable/{p}"), (*e as u8).to_string())?;
    }
    for (p, e) in &h.ecn_rp_enabled {
        put(format!("ecn/roce_rp/enable/{p}"), (*e as u8).to_string())?;
    }
    for (k, v) in &h.np_params {
        put(format!("ecn/roce_np/{k}"), v.to_string())?;
    }
    for (k, v) in &h.rp_params {
        put(format!("ecn/roce_rp/{k}"), v.to_string())?;
    }
    if let Some(v) = h.mtu {
        put("mtu".into(), v.to_string())?;
    }
    if let Some(v) = h.speed_mbps {
        put("speed".into(), v.to_string())?;
    }
    if let Some(v) = &h.operstate {
        put("operstate".into(), v.clone())?;
    }
    if let Some(v) = h.carrier_changes {
        put("carrier_changes".into(), v.to_string())?;
    }
    if let Some(v) = h.carrier_down_count {
        put("carrier_down_count".into(), v.to_string())?;
    }
    for (k, v) in &h.statistics {
        put(format!("statistics/{k}"), v.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_files() {
        assert_eq!(parse_int_file("speed", "-1\n").unwrap(), -1);
        assert_eq!(parse_int_file("x", "abc").unwrap_err().line, 1);
        assert_eq!(parse_int_file("x", "\n").unwrap_err().line, 0);
        assert_eq!(parse_trust_file("dscp\n").unwrap(), "dscp");
        assert_eq!(parse_trust_file("Priority trust state: pcp\n").unwrap(), "pcp");
        assert!(parse_trust_file("l3\n").is_err());
    }
}
