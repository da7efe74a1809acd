//! The tables of the congestion-control algorithms other than DCQCN, one per algorithm under
//! the NIC profile (`[nic.hpcc]`, `[nic.timely]`, `[nic.dctcp]`), and their resolution.
//!
//! `congestion_control` on the profile picks the algorithm; only its table is read. Defaults
//! and names follow the public models users compare with: HPCC's ns-3 model
//! (alibaba-edu/High-Precision-Congestion-Control, `rdma-hw.cc` attributes and the shipped
//! `mix/config.txt`) for HPCC, TIMELY and the rate-based DCTCP, and the papers (Li et al.,
//! "HPCC: High Precision Congestion Control", SIGCOMM 2019; Mittal et al., "TIMELY: RTT-based
//! Congestion Control for the Datacenter", SIGCOMM 2015).

use crate::{Diagnostic, SimTime};
use serde::{Deserialize, Serialize};

/// Which bytes a run counts around each payload (`[simulation] header_overhead`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum HeaderOverhead {
    /// What a ConnectX NIC puts on an Ethernet wire: preamble and inter-frame gap, Ethernet
    /// header and FCS, IPv4, UDP, BTH, ICRC (82 B per data packet).
    #[default]
    Roce,
    /// What HPCC's ns-3 model counts: a 14 B link header, IPv4, UDP and its 6 B sequence header
    /// (48 B per data packet; 60 B ACKs), plus its INT header where the algorithm carries one.
    Ns3,
}

/// `[nic.hpcc]`: HPCC's knobs, named as HPCC's ns-3 `config.txt` names them.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HpccConfig {
    /// η, the target utilization (`U_TARGET`), 0 < η ≤ 1.
    #[serde(default)]
    pub target_util: Option<f64>,
    /// Additive-increase steps before a multiplicative one is forced (`MI_THRESH`).
    #[serde(default)]
    pub mi_thresh: Option<u32>,
    /// React to every ACK from the last reference, not only once per RTT (`FAST_REACT`).
    #[serde(default)]
    pub fast_react: Option<bool>,
    /// One rate per hop, the smallest applies (`MULTI_RATE`); else one rate from the
    /// most-utilized hop.
    #[serde(default)]
    pub multi_rate: Option<bool>,
    /// A fast reaction skips hops whose queue is empty (`SAMPLE_FEEDBACK`).
    #[serde(default)]
    pub sample_feedback: Option<bool>,
    /// INT's field unit multiplier (`INT_MULTI`): queue lengths are carried in units of
    /// 80·INT_MULTI bytes and byte counts in 128·INT_MULTI bytes.
    #[serde(default)]
    pub int_multi: Option<u32>,
    /// W_AI as a rate (`RATE_AI`).
    #[serde(default)]
    pub rate_ai_mbps: Option<f64>,
    #[serde(default)]
    pub min_rate_mbps: Option<f64>,
    /// T, the base round trip the utilization is measured over. Default: each QP's own path
    /// (twice the propagation plus one MTU frame's serialization per hop).
    #[serde(default)]
    pub base_rtt_us: Option<f64>,
}

/// HPCC with every knob resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Hpcc {
    pub target_util: f64,
    pub mi_thresh: u32,
    pub fast_react: bool,
    pub multi_rate: bool,
    pub sample_feedback: bool,
    pub int_multi: u32,
    pub rate_ai_bps: f64,
    pub min_rate_bps: f64,
    /// `None`: each QP's path.
    pub base_rtt: Option<SimTime>,
}

impl Default for Hpcc {
    /// HPCC's ns-3 model: η 0.95, MI_THRESH 5, FAST_REACT and MULTI_RATE on, SAMPLE_FEEDBACK
    /// off, INT_MULTI 1 (`rdma-hw.cc`); RATE_AI 50 Mb/s and MIN_RATE 100 Mb/s as in its
    /// `mix/config.txt`.
    fn default() -> Self {
        Hpcc {
            target_util: 0.95,
            mi_thresh: 5,
            fast_react: true,
            multi_rate: true,
            sample_feedback: false,
            int_multi: 1,
            rate_ai_bps: 50e6,
            min_rate_bps: 100e6,
            base_rtt: None,
        }
    }
}

/// `[nic.timely]`: TIMELY's knobs (the paper's names; defaults of HPCC's ns-3 model).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TimelyConfig {
    /// Below T_low the rate grows whatever the gradient.
    #[serde(default)]
    pub t_low_us: Option<f64>,
    /// Above T_high the rate is cut by β·(1 − T_high/RTT).
    #[serde(default)]
    pub t_high_us: Option<f64>,
    /// The minimum RTT the gradient is normalized by.
    #[serde(default)]
    pub min_rtt_us: Option<f64>,
    /// EWMA weight of the newest RTT difference (α).
    #[serde(default)]
    pub alpha: Option<f64>,
    /// Multiplicative decrease factor (β).
    #[serde(default)]
    pub beta: Option<f64>,
    /// Additive step δ.
    #[serde(default)]
    pub rate_ai_mbps: Option<f64>,
    /// The step after `hai_thresh` increases in a row (hyperactive increase).
    #[serde(default)]
    pub rate_hai_mbps: Option<f64>,
    #[serde(default)]
    pub hai_thresh: Option<u32>,
    #[serde(default)]
    pub min_rate_mbps: Option<f64>,
}

/// TIMELY with every knob resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Timely {
    pub t_low: SimTime,
    pub t_high: SimTime,
    pub min_rtt: SimTime,
    pub alpha: f64,
    pub beta: f64,
    pub rate_ai_bps: f64,
    pub rate_hai_bps: f64,
    pub hai_thresh: u32,
    pub min_rate_bps: f64,
}

impl Default for Timely {
    /// HPCC's ns-3 model (`rdma-hw.cc`): T_low 50 µs, T_high 500 µs, minRTT 20 µs, α 0.875,
    /// β 0.8, HAI after 5 increases; steps of 50 and 100 Mb/s and a 100 Mb/s floor as its
    /// `mix/config.txt` sets RATE_AI, RATE_HAI and MIN_RATE.
    fn default() -> Self {
        Timely {
            t_low: SimTime::from_us(50),
            t_high: SimTime::from_us(500),
            min_rtt: SimTime::from_us(20),
            alpha: 0.875,
            beta: 0.8,
            rate_ai_bps: 50e6,
            rate_hai_bps: 100e6,
            hai_thresh: 5,
            min_rate_bps: 100e6,
        }
    }
}

/// `[nic.dctcp]`: DCTCP on RDMA QPs as HPCC's ns-3 model runs it (CC_MODE 8): rate-based,
/// CE echoed on ACKs.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DctcpConfig {
    /// α's gain g (`EWMA_GAIN`).
    #[serde(default)]
    pub g: Option<f64>,
    /// Additive increase once per round trip without marks (`DCTCP_RATE_AI`).
    #[serde(default)]
    pub rate_ai_mbps: Option<f64>,
    #[serde(default)]
    pub min_rate_mbps: Option<f64>,
}

/// Rate-based DCTCP with every knob resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct DctcpRate {
    pub g: f64,
    pub rate_ai_bps: f64,
    pub min_rate_bps: f64,
}

impl Default for DctcpRate {
    /// g 1/16 (RFC 8257), DCTCP_RATE_AI 1000 Mb/s (`rdma-hw.cc`), MIN_RATE 100 Mb/s.
    fn default() -> Self {
        DctcpRate { g: 1.0 / 16.0, rate_ai_bps: 1e9, min_rate_bps: 100e6 }
    }
}

/// Checks one knob: `ok` or a diagnostic at `path.key`.
fn check<T: Copy + std::fmt::Display>(
    v: Option<T>,
    default: T,
    ok: impl Fn(T) -> bool,
    path: &str,
    key: &str,
    want: &str,
    errs: &mut Vec<Diagnostic>,
) -> T {
    match v {
        Some(x) if !ok(x) => {
            errs.push(Diagnostic::new(
                format!("{path}.{key}"),
                format!("{key} must be {want}, got {x}"),
                format!("omit it for the default, {default}"),
            ));
            default
        }
        Some(x) => x,
        None => default,
    }
}

fn rate(v: Option<f64>, default_bps: f64, path: &str, key: &str, errs: &mut Vec<Diagnostic>) -> f64 {
    check(
        v,
        default_bps / 1e6,
        |x| x.is_finite() && x > 0.0 && x <= 10e6,
        path,
        key,
        "a rate in Mb/s above 0 (at most 10 Tb/s)",
        errs,
    ) * 1e6
}

fn time(v: Option<f64>, default: SimTime, path: &str, key: &str, errs: &mut Vec<Diagnostic>) -> SimTime {
    let us = check(
        v,
        default.0 as f64 / 1e6,
        |x| x.is_finite() && x > 0.0 && x <= 1e6,
        path,
        key,
        "a time in µs above 0 (at most 1 s)",
        errs,
    );
    SimTime::from_secs_f64(us * 1e-6)
}

fn unit(v: Option<f64>, default: f64, path: &str, key: &str, errs: &mut Vec<Diagnostic>) -> f64 {
    check(v, default, |x| x.is_finite() && x > 0.0 && x <= 1.0, path, key, "in (0, 1]", errs)
}

/// `[nic.hpcc]` resolved; `path` is the profile's key path.
pub fn hpcc(c: &HpccConfig, path: &str, errs: &mut Vec<Diagnostic>) -> Hpcc {
    let d = Hpcc::default();
    let p = format!("{path}.hpcc");
    Hpcc {
        target_util: unit(c.target_util, d.target_util, &p, "target_util", errs),
        mi_thresh: check(c.mi_thresh, d.mi_thresh, |x| x <= 1000, &p, "mi_thresh", "at most 1000", errs),
        fast_react: c.fast_react.unwrap_or(d.fast_react),
        multi_rate: c.multi_rate.unwrap_or(d.multi_rate),
        sample_feedback: c.sample_feedback.unwrap_or(d.sample_feedback),
        int_multi: check(c.int_multi, d.int_multi, |x| (1..=1 << 16).contains(&x), &p, "int_multi", "1 to 65536", errs),
        rate_ai_bps: rate(c.rate_ai_mbps, d.rate_ai_bps, &p, "rate_ai_mbps", errs),
        min_rate_bps: rate(c.min_rate_mbps, d.min_rate_bps, &p, "min_rate_mbps", errs),
        base_rtt: c.base_rtt_us.map(|us| time(Some(us), SimTime::from_us(10), &p, "base_rtt_us", errs)),
    }
}

/// `[nic.timely]` resolved.
pub fn timely(c: &TimelyConfig, path: &str, errs: &mut Vec<Diagnostic>) -> Timely {
    let d = Timely::default();
    let p = format!("{path}.timely");
    let t = Timely {
        t_low: time(c.t_low_us, d.t_low, &p, "t_low_us", errs),
        t_high: time(c.t_high_us, d.t_high, &p, "t_high_us", errs),
        min_rtt: time(c.min_rtt_us, d.min_rtt, &p, "min_rtt_us", errs),
        alpha: unit(c.alpha, d.alpha, &p, "alpha", errs),
        beta: unit(c.beta, d.beta, &p, "beta", errs),
        rate_ai_bps: rate(c.rate_ai_mbps, d.rate_ai_bps, &p, "rate_ai_mbps", errs),
        rate_hai_bps: rate(c.rate_hai_mbps, d.rate_hai_bps, &p, "rate_hai_mbps", errs),
        hai_thresh: check(c.hai_thresh, d.hai_thresh, |x| x <= 1000, &p, "hai_thresh", "at most 1000", errs),
        min_rate_bps: rate(c.min_rate_mbps, d.min_rate_bps, &p, "min_rate_mbps", errs),
    };
    if t.t_low >= t.t_high {
        errs.push(Diagnostic::new(
            format!("{p}.t_low_us"),
            format!("T_low ({} µs) must be below T_high ({} µs)", t.t_low.0 as f64 / 1e6, t.t_high.0 as f64 / 1e6),
            "the paper's T_low 50 µs, T_high 500 µs",
        ));
    }
    t
}

/// `[nic.dctcp]` resolved.
pub fn dctcp(c: &DctcpConfig, path: &str, errs: &mut Vec<Diagnostic>) -> DctcpRate {
    let d = DctcpRate::default();
    let p = format!("{path}.dctcp");
    DctcpRate {
        g: unit(c.g, d.g, &p, "g", errs),
        rate_ai_bps: rate(c.rate_ai_mbps, d.rate_ai_bps, &p, "rate_ai_mbps", errs),
        min_rate_bps: rate(c.min_rate_mbps, d.min_rate_bps, &p, "min_rate_mbps", errs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_knobs_are_refused_by_key() {
        let mut errs = Vec::new();
        let h =
            hpcc(&HpccConfig { target_util: Some(1.5), int_multi: Some(0), ..Default::default() }, "nic", &mut errs);
        assert_eq!(h.target_util, 0.95);
        let paths: Vec<&str> = errs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["nic.hpcc.target_util", "nic.hpcc.int_multi"]);
        let mut errs = Vec::new();
        timely(&TimelyConfig { t_low_us: Some(600.0), ..Default::default() }, "nic", &mut errs);
        assert_eq!(errs.len(), 1, "T_low above the default T_high of 500 µs");
        assert!(errs[0].message.contains("below T_high"), "{}", errs[0].message);
    }

    #[test]
    fn given_values_are_converted_to_engine_units() {
        let mut errs = Vec::new();
        let t = timely(
            &TimelyConfig { t_low_us: Some(10.0), rate_ai_mbps: Some(20.0), ..Default::default() },
            "nic",
            &mut errs,
        );
        assert!(errs.is_empty());
        assert_eq!((t.t_low, t.rate_ai_bps), (SimTime::from_us(10), 20e6));
        let h = hpcc(&HpccConfig { base_rtt_us: Some(8.5), ..Default::default() }, "nic", &mut errs);
        assert_eq!(h.base_rtt, Some(SimTime(8_500_000)));
    }
}
