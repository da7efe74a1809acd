//! `[nic] transport`: which transport a NIC profile's RDMA messages run, and `[nic.uet]`, the
//! knobs of the Ultra Ethernet transport (UEC Specification 1.0, June 2025) as rocelab models it.
//!
//! `"roce"` (the default) is RoCEv2's reliable connection: in-order delivery, go-back-N on a
//! gap, the profile's `congestion_control`. `"uet"` is a UEC-style reliable unordered delivery:
//! per-packet entropy values sprayed over the ECMP members and recycled REPS-style, packets
//! placed out of order at the receiver, switches trimming what they would drop to a header
//! that the receiver answers with a NACK, selective retransmission of exactly that packet,
//! and NSCC (a window from ECN and queueing delay) as its congestion control. Its traffic
//! class is meant to be lossy: trimming replaces PFC (the specification's transport targets
//! best-effort Ethernet; lint warns when the class is lossless).

use crate::{Diagnostic, SimTime};
use serde::{Deserialize, Serialize};

/// `[nic] transport`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// RoCEv2 RC: in order, go-back-N, the profile's congestion control.
    #[default]
    Roce,
    /// Ultra Ethernet transport: spraying, trimming, selective retransmission, NSCC.
    Uet,
}

/// `[nic.uet]` as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UetConfig {
    /// Switches cut a UET packet they would drop to its first `trim_bytes` and forward that
    /// at high priority (default true).
    #[serde(default)]
    pub trimming: Option<bool>,
    /// Bytes a trimmed packet keeps on the wire, headers included, bytes (default 64, as
    /// uet-htsim trims).
    #[serde(default)]
    pub trim_bytes: Option<u32>,
    /// Entropies the REPS buffer keeps for reuse (default 8, REPS's buffer size).
    #[serde(default)]
    pub reps_buffer: Option<u32>,
    /// Spray packets over per-packet entropies (default true); false keeps the QP's one hash
    /// (every packet on the ECMP path of its 5-tuple).
    #[serde(default)]
    pub spray: Option<bool>,
    /// NSCC's target queueing delay, µs (default: 0.75 × the QP's base RTT, uet-htsim's
    /// default with trimming).
    #[serde(default)]
    pub target_qdelay_us: Option<f64>,
    /// NSCC's multiplicative-decrease gain γ (default 0.8).
    #[serde(default)]
    pub gamma: Option<f64>,
    /// NSCC's window cap over the QP's bandwidth-delay product (default 1.5).
    #[serde(default)]
    pub max_window_bdp: Option<f64>,
    /// RCCC: past its first bandwidth-delay product a sender sends only what its receiver
    /// grants, the receiver granting no more than one BDP in flight over all its senders
    /// (default false).
    #[serde(default)]
    pub rccc: Option<bool>,
    /// The retransmission timer's first value, µs (default 100: uet-htsim's minimum RTO,
    /// `DEFAULT_UEC_RTO_MIN`).
    #[serde(default)]
    pub rto_us: Option<f64>,
    /// The most the timer backs off to, doubling after each timeout in a row, µs (default:
    /// `rto_us`, no backoff, as uet-htsim retries).
    #[serde(default)]
    pub rto_max_us: Option<f64>,
}

/// `[nic.uet]` resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Uet {
    pub trimming: bool,
    pub trim_bytes: u32,
    pub reps_buffer: u32,
    pub spray: bool,
    /// `None`: 0.75 × each QP's base RTT.
    pub target_qdelay: Option<SimTime>,
    pub gamma: f64,
    pub max_window_bdp: f64,
    pub rccc: bool,
    /// UET's own retransmission timer (not the RoCE profile's `ack_timeout`): its first value
    /// and the cap it doubles up to after each timeout in a row ([`Uet::rto_after`]).
    pub rto: SimTime,
    pub rto_max: SimTime,
}

/// uet-htsim's minimum retransmission timeout (`uec.h`, `DEFAULT_UEC_RTO_MIN`), µs.
pub const RTO_US: f64 = 100.0;
/// The cap of UET's backoff by default, µs: none, as uet-htsim retries at its minimum RTO
/// (`rtxTimerExpired`), so a resend follows a link's return within 100 µs however long it was
/// down. A backoff to 1 ms (`rto_max_us = 1000`) saves timer events over a long outage but
/// costs the return up to a millisecond: on `uet-permutation`'s 3 s NIC resets the resent
/// half then moves at 0.54 of line rate from the link's return instead of over 0.8.
pub const RTO_MAX_US: f64 = RTO_US;

impl Uet {
    /// The retransmission timeout after `timeouts` timeouts in a row: `rto` doubled each time
    /// (a sender backs off while its peer is unreachable, as RFC 6298 §5.5 has TCP do),
    /// never above `rto_max`.
    pub fn rto_after(&self, timeouts: u32) -> SimTime {
        SimTime(self.rto.0.saturating_mul(1u64 << timeouts.min(40)).min(self.rto_max.0.max(self.rto.0)))
    }

    /// The timeouts in a row a UET QP takes before it fails: as many as fit in `give_up` (the
    /// time a RoCE QP of the same profile waits in all, retransmit timeout × (retry count +
    /// 1)), so an outage a RoCE QP survives ends no UET QP, and a peer that never returns
    /// still ends it. `None`: retries without end (the profile has no transport timeout).
    pub fn timeouts_within(&self, give_up: Option<SimTime>) -> u32 {
        let Some(span) = give_up else { return u32::MAX };
        let (mut waited, mut n) = (0u64, 0u32);
        while n < u32::MAX {
            let next = self.rto_after(n).0.max(1);
            if waited.saturating_add(next) > span.0 {
                break;
            }
            waited += next;
            // Past the cap every timeout is the same: count the rest at once.
            if self.rto_after(n) == self.rto_after(n + 1) {
                let rest = (span.0 - waited) / next;
                return n.saturating_add(1).saturating_add(rest.min(u32::MAX as u64) as u32);
            }
            n += 1;
        }
        n
    }
}

impl Default for Uet {
    /// Trimming on to 64 B (uet-htsim's trimmed header), an 8-entry REPS buffer (Bonato et
    /// al., "REPS", arXiv 2407.21625), spraying on, NSCC's γ 0.8 and window cap 1.5 BDP
    /// (uet-htsim's `uec.cpp` defaults).
    fn default() -> Self {
        Uet {
            trimming: true,
            trim_bytes: 64,
            reps_buffer: 8,
            spray: true,
            target_qdelay: None,
            gamma: 0.8,
            max_window_bdp: 1.5,
            rccc: false,
            rto: SimTime::from_secs_f64(RTO_US * 1e-6),
            rto_max: SimTime::from_secs_f64(RTO_MAX_US * 1e-6),
        }
    }
}

/// Some NIC profile of the file runs `transport = "uet"`.
pub fn runs_uet(c: &crate::config::Config) -> bool {
    std::iter::once(&c.nic).chain(c.nic_profiles.values()).any(|n| n.transport == Some(Transport::Uet))
}

/// UET is an Ethernet transport: on an InfiniBand fabric the key is refused where it is set.
pub fn check_link_layer(c: &crate::config::Config, errs: &mut Vec<Diagnostic>) {
    if c.fabric.link_layer.is_roce() {
        return;
    }
    let profiles = c.nic_profiles.iter().map(|(name, n)| (format!("nic_profiles.{name}"), n));
    for (path, n) in std::iter::once(("nic".to_string(), &c.nic)).chain(profiles) {
        if n.transport == Some(Transport::Uet) {
            errs.push(Diagnostic::new(
                format!("{path}.transport"),
                "`transport = \"uet\"` runs over Ethernet, but this fabric's link layer is InfiniBand",
                "remove it (InfiniBand RC is the transport there), or set `[fabric] link_layer = \"roce\"`",
            ));
        }
    }
}

/// Lossy by default: on a fabric where a NIC profile runs UET and `[qos]` leaves the classes at
/// their defaults, the RDMA class is resolved without PFC (UET recovers from congestion by
/// trimming and selective retransmission, and its spraying needs no lossless class; UEC 1.0
/// transport). `None`: the classes stand as written (lint warns if UET then runs over PFC).
pub fn lossy_default_qos(c: &crate::config::Config) -> Option<crate::config::QosConfig> {
    if !runs_uet(c) || c.qos.classes != crate::config::default_classes() {
        return None;
    }
    let mut q = c.qos.clone();
    for class in &mut q.classes {
        if class.carries.contains(&crate::config::TrafficKind::Rdma) {
            class.lossless = false;
        }
    }
    Some(q)
}

/// The smallest trimmed packet: an Ethernet frame's 64-byte minimum.
pub const MIN_TRIM_BYTES: u32 = 64;

/// `[nic.uet]` resolved; `path` is the profile's key path.
pub fn uet(c: &UetConfig, path: &str, errs: &mut Vec<Diagnostic>) -> Uet {
    let d = Uet::default();
    let p = format!("{path}.uet");
    let mut bad = |key: &str, got: String, want: &str| {
        errs.push(Diagnostic::new(format!("{p}.{key}"), format!("{key} = {got} is out of range"), want.to_string()));
    };
    let trim_bytes = match c.trim_bytes {
        Some(b) if !(MIN_TRIM_BYTES..=256).contains(&b) => {
            bad("trim_bytes", b.to_string(), "64 to 256 bytes (a trimmed packet keeps its headers: 64 is usual)");
            d.trim_bytes
        }
        Some(b) => b,
        None => d.trim_bytes,
    };
    let reps_buffer = match c.reps_buffer {
        Some(n) if !(1..=64).contains(&n) => {
            bad("reps_buffer", n.to_string(), "1 to 64 entropies (REPS keeps 8)");
            d.reps_buffer
        }
        Some(n) => n,
        None => d.reps_buffer,
    };
    let target_qdelay = match c.target_qdelay_us {
        Some(us) if !(us.is_finite() && us > 0.0 && us <= 10_000.0) => {
            bad("target_qdelay_us", us.to_string(), "a time in µs above 0 (at most 10 ms)");
            None
        }
        Some(us) => Some(SimTime::from_secs_f64(us * 1e-6)),
        None => None,
    };
    let gamma = match c.gamma {
        Some(g) if !(g.is_finite() && g > 0.0 && g <= 1.0) => {
            bad("gamma", g.to_string(), "in (0, 1] (uet-htsim uses 0.8)");
            d.gamma
        }
        Some(g) => g,
        None => d.gamma,
    };
    let max_window_bdp = match c.max_window_bdp {
        Some(w) if !(w.is_finite() && (1.0..=16.0).contains(&w)) => {
            bad("max_window_bdp", w.to_string(), "1 to 16 bandwidth-delay products (uet-htsim uses 1.5)");
            d.max_window_bdp
        }
        Some(w) => w,
        None => d.max_window_bdp,
    };
    let time = |key: &str, v: Option<f64>, default: SimTime, bad: &mut dyn FnMut(&str, String, &str)| match v {
        Some(us) if !(us.is_finite() && (1.0..=10_000_000.0).contains(&us)) => {
            bad(key, format!("{us} µs"), "1 µs to 10 s (uet-htsim's minimum RTO is 100 µs)");
            default
        }
        Some(us) => SimTime::from_secs_f64(us * 1e-6),
        None => default,
    };
    let rto = time("rto_us", c.rto_us, d.rto, &mut bad);
    let mut rto_max = time("rto_max_us", c.rto_max_us, d.rto_max.max(rto), &mut bad);
    if rto_max < rto {
        bad("rto_max_us", format!("{} µs, below rto_us", rto_max.as_us_f64()), "at least rto_us");
        rto_max = rto;
    }
    Uet {
        trimming: c.trimming.unwrap_or(d.trimming),
        trim_bytes,
        reps_buffer,
        spray: c.spray.unwrap_or(d.spray),
        target_qdelay,
        gamma,
        max_window_bdp,
        rccc: c.rccc.unwrap_or(d.rccc),
        rto,
        rto_max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_given_values_resolve_and_bad_ones_are_named_by_key() {
        let mut errs = Vec::new();
        assert_eq!(uet(&UetConfig::default(), "nic", &mut errs), Uet::default());
        assert!(errs.is_empty());
        let u = uet(
            &UetConfig { target_qdelay_us: Some(4.5), trim_bytes: Some(80), ..Default::default() },
            "nic",
            &mut errs,
        );
        assert_eq!((u.target_qdelay, u.trim_bytes), (Some(SimTime(4_500_000)), 80));
        let c = UetConfig { trim_bytes: Some(32), gamma: Some(1.5), reps_buffer: Some(0), ..Default::default() };
        let u = uet(&c, "nic_profiles.a", &mut errs);
        assert_eq!((u.trim_bytes, u.gamma, u.reps_buffer), (64, 0.8, 8));
        let paths: Vec<&str> = errs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            paths,
            ["nic_profiles.a.uet.trim_bytes", "nic_profiles.a.uet.reps_buffer", "nic_profiles.a.uet.gamma"]
        );
    }

    #[test]
    fn the_retransmission_timer_doubles_to_its_cap_and_outlasts_what_a_roce_qp_survives() {
        // By default the timer stays at uet-htsim's 100 µs: a 3 s outage is 30,000 timeouts.
        let d = Uet::default();
        assert_eq!((d.rto_after(0), d.rto_after(9)), (d.rto, d.rto));
        let span = SimTime(4_096_000u64 << 20).0 * 8;
        assert_eq!(d.timeouts_within(Some(SimTime(span))), (span / 100_000_000) as u32);
        // With rto_max_us = 1000: 100, 200, 400, 800 µs, then the 1 ms cap.
        let u = Uet { rto_max: SimTime(1_000_000_000), ..Uet::default() };
        let us = |t: SimTime| t.as_us_f64();
        let seq: Vec<f64> = (0..6).map(|n| us(u.rto_after(n))).collect();
        assert_eq!(seq, [100.0, 200.0, 400.0, 800.0, 1000.0, 1000.0]);
        // NCCL's RoCE timer (4.096 µs · 2^20) with 7 retries waits 8 × 4.295 s = 34.36 s: the
        // first four timeouts take 1.5 ms, each later one 1 ms, so 4 + 34,358 fit.
        assert_eq!(u.timeouts_within(Some(SimTime(span))), 4 + ((span - 1_500_000_000) / 1_000_000_000) as u32);
        // A 3 s outage fits far inside it; no RoCE timer, no end.
        assert!(u.timeouts_within(Some(SimTime(span))) > 3_000);
        assert_eq!(u.timeouts_within(None), u32::MAX);
        // The keys, and a cap below the first value refused at its key.
        let mut errs = Vec::new();
        let c = UetConfig { rto_us: Some(50.0), rto_max_us: Some(20.0), ..Default::default() };
        let got = uet(&c, "nic", &mut errs);
        assert_eq!((got.rto, got.rto_max), (SimTime(50_000_000), SimTime(50_000_000)));
        assert_eq!(errs.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), ["nic.uet.rto_max_us"]);
    }

    #[test]
    fn transport_reads_from_toml() {
        #[derive(Deserialize)]
        struct T {
            transport: Transport,
        }
        let t: T = toml::from_str("transport = \"uet\"").unwrap();
        assert_eq!(t.transport, Transport::Uet);
        assert!(toml::from_str::<T>("transport = \"tcp\"").is_err());
    }
}

#[cfg(test)]
mod loader_tests {
    const BASE: &str = "[fabric]\nname = \"u\"\n[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
        host_link = { speed_gbps = 400, length_m = 3 }\nfabric_link = { speed_gbps = 400, length_m = 30 }\n";

    #[test]
    fn a_uet_fabric_on_default_classes_runs_its_rdma_class_lossy_and_roce_stays_lossless() {
        let uet = crate::load_str("u.toml", &format!("{BASE}[nic]\ntransport = \"uet\"\n")).unwrap();
        let rdma = uet.qos.rdma_class();
        assert!(!uet.qos.classes[rdma].lossless);
        assert_eq!(uet.qos.pfc_mask, 0, "no PFC on any priority");
        assert_eq!(uet.nics[0].transport, super::Transport::Uet);
        let roce = crate::load_str("r.toml", BASE).unwrap();
        assert!(roce.qos.classes[roce.qos.rdma_class()].lossless);
        assert_eq!(roce.qos.pfc_mask, 1 << 3);
    }

    #[test]
    fn uet_on_infiniband_is_refused_at_its_key() {
        let text = format!("{BASE}[nic]\ntransport = \"uet\"\n")
            .replace("name = \"u\"", "name = \"u\"\nlink_layer = \"infiniband\"");
        let e = crate::load_str("u.toml", &text).unwrap_err().to_string();
        assert!(e.contains("nic.transport") || e.contains("transport"), "{e}");
        assert!(e.contains("InfiniBand"), "{e}");
    }
}
