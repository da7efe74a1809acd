//! Load balancing over equal-cost paths: `[routing] load_balancing`, `flowlet_gap_us` and
//! `symmetric_hash`, and the receiving NIC's out-of-order placement window
//! (`[nic] ooo_window_packets`) that per-packet modes rely on.
//!
//! * `ecmp` (default): one member per flow, by the switch's seeded hash of the header fields.
//! * `flowlet`: a flow keeps its member while its packets follow each other closely; after an
//!   idle gap longer than `flowlet_gap_us` it may move to the least-loaded member (CONGA,
//!   Alizadeh et al., SIGCOMM 2014, §3.4: flowlet inactivity timeout 500 µs). A gap longer than
//!   the paths' delay difference cannot reorder packets.
//! * `adaptive`: per packet, the least-loaded minimal egress (queued bytes, a paused egress
//!   counted as full), ties spread per packet — as Spectrum-4 adaptive routing picks per
//!   packet among the ports toward the destination by their queue load and congestion state
//!   (NVIDIA Spectrum-X Networking Platform whitepaper, "RoCE adaptive routing").
//! * `spray`: per packet, a member drawn from the packet's own hash (oblivious, seeded,
//!   deterministic), as in random packet spraying (Dixit et al., INFOCOM 2013).
//!
//! Per-packet modes reorder packets; a ConnectX-5 or later NIC places them in host memory out
//! of order (NVIDIA MLNX_OFED/DOCA documentation, "Out-of-Order (OOO) Data Placement") so a
//! gap is not a loss. The engine keeps a bounded reorder state per QP: `ooo_window_packets`
//! PSNs ahead of the next expected one; a packet further ahead is treated as a gap (NAK,
//! go-back-N). NVIDIA does not publish the hardware's window; the default here, 1024 packets
//! (4 MiB at a 4096-byte MTU, 84 µs of path-delay skew at 400 Gb/s), is our choice.

use crate::config::RoutingConfig;
use crate::diag::Diagnostic;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};

/// How a switch spreads traffic over the equal-cost members toward a destination.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LoadBalancing {
    #[default]
    Ecmp,
    Flowlet,
    Adaptive,
    Spray,
}

impl LoadBalancing {
    /// The mode chooses a member per packet, so a flow's packets may arrive out of order.
    pub fn per_packet(self) -> bool {
        matches!(self, LoadBalancing::Adaptive | LoadBalancing::Spray)
    }

    pub fn name(self) -> &'static str {
        match self {
            LoadBalancing::Ecmp => "ecmp",
            LoadBalancing::Flowlet => "flowlet",
            LoadBalancing::Adaptive => "adaptive",
            LoadBalancing::Spray => "spray",
        }
    }

    /// `true` is the default: lets serde skip it when writing a config back.
    pub fn is_ecmp(&self) -> bool {
        *self == LoadBalancing::Ecmp
    }
}

/// CONGA's flowlet inactivity timeout (Alizadeh et al., SIGCOMM 2014, §3.4), µs.
pub const DEFAULT_FLOWLET_GAP_US: f64 = 500.0;

/// The out-of-order placement window a NIC gets under a per-packet mode when its profile
/// names none, packets (see the module doc: our choice, no vendor figure).
pub const DEFAULT_OOO_WINDOW_PACKETS: u32 = 1024;

/// The largest window accepted (the engine's per-QP bitmap is 8 KiB at this size).
pub const MAX_OOO_WINDOW_PACKETS: u32 = 65_536;

/// The out-of-order window a NIC of a profile with `ooo_window_packets = configured` uses
/// under `lb`: what it names, else the default under a per-packet mode and none (in-order
/// receive, a gap is a loss) otherwise.
pub fn ooo_window(configured: Option<u32>, lb: LoadBalancing) -> u32 {
    match configured {
        Some(w) => w.min(MAX_OOO_WINDOW_PACKETS),
        None if lb.per_packet() => DEFAULT_OOO_WINDOW_PACKETS,
        None => 0,
    }
}

/// The flowlet gap of `[routing]`, checked.
pub fn flowlet_gap(r: &RoutingConfig) -> Result<SimTime, Diagnostic> {
    let us = r.flowlet_gap_us.unwrap_or(DEFAULT_FLOWLET_GAP_US);
    if us.is_finite() && us > 0.0 && us < 1e9 {
        Ok(SimTime::from_secs_f64(us * 1e-6))
    } else {
        Err(Diagnostic::new(
            "routing.flowlet_gap_us",
            format!("flowlet_gap_us = {us} is not a positive time in µs"),
            format!(
                "e.g. {DEFAULT_FLOWLET_GAP_US} (CONGA's flowlet timeout); it should exceed the paths' delay difference"
            ),
        ))
    }
}

/// Checks `[nic] ooo_window_packets` of the profile at key path `path`.
pub fn check_ooo_window(configured: Option<u32>, path: &str) -> Option<Diagnostic> {
    match configured {
        Some(w) if w > MAX_OOO_WINDOW_PACKETS => Some(Diagnostic::new(
            format!("{path}.ooo_window_packets"),
            format!("ooo_window_packets = {w} is above the {MAX_OOO_WINDOW_PACKETS} packets modelled"),
            format!("e.g. {DEFAULT_OOO_WINDOW_PACKETS}; 0 turns out-of-order placement off"),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_defaults_on_only_under_per_packet_modes_and_an_explicit_value_wins() {
        assert_eq!(ooo_window(None, LoadBalancing::Ecmp), 0);
        assert_eq!(ooo_window(None, LoadBalancing::Flowlet), 0);
        assert_eq!(ooo_window(None, LoadBalancing::Adaptive), 1024);
        assert_eq!(ooo_window(None, LoadBalancing::Spray), 1024);
        assert_eq!(ooo_window(Some(0), LoadBalancing::Spray), 0);
        assert_eq!(ooo_window(Some(64), LoadBalancing::Ecmp), 64);
    }

    #[test]
    fn the_flowlet_gap_defaults_to_congas_500_us_and_rejects_nonsense() {
        let mut r = RoutingConfig::default();
        assert_eq!(flowlet_gap(&r).unwrap(), SimTime::from_us(500));
        r.flowlet_gap_us = Some(-1.0);
        assert!(flowlet_gap(&r).is_err());
        r.flowlet_gap_us = Some(f64::NAN);
        assert!(flowlet_gap(&r).is_err());
        r.flowlet_gap_us = Some(50.0);
        assert_eq!(flowlet_gap(&r).unwrap(), SimTime::from_us(50));
    }
}
