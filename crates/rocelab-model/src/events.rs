//! Events as they happen on a real fabric: the timescales of a switch reboot (cold or warm), of
//! a NIC reset for a firmware update and of a host that drains slowly, each default with its
//! public source. `[[fault]]` tables name them (`kind = "switch-reboot"` with `mode`,
//! `kind = "nic-reset"`, `kind = "host-stall"` with `drain_gbps`); `intent` resolves and
//! bounds them at load.
//!
//! A switch reboot, as operators see one:
//!
//! ```text
//! cold:  ports down ──────────── duration_us ────────────► host links up ── routes_after_us ──► fabric links carry traffic
//!        (peers see loss of signal: routes withdrawn hop by hop)             (routes advertised, spread hop by hop)
//! warm:  ASIC stops forwarding ── duration_us ──► forwarding again
//!        (links stay up, routes kept: peers keep sending into it; what arrives is lost)
//! ```

use serde::{Deserialize, Serialize};

/// How a switch reboots.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RebootMode {
    /// The whole switch restarts, its ASIC reset: every port goes down, the peers withdraw
    /// their routes through it, and the ports and routes come back once it has booted.
    #[default]
    Cold,
    /// The control plane restarts while the ASIC keeps its tables (SONiC `warm-reboot`, Cumulus
    /// `warm`): the links stay up and the neighbours keep their routes (BGP graceful restart),
    /// and the data plane stops only while the ASIC's software re-attaches.
    Warm,
}

impl RebootMode {
    pub fn name(self) -> &'static str {
        match self {
            RebootMode::Cold => "cold",
            RebootMode::Warm => "warm",
        }
    }

    /// The data-plane outage when `duration_us` is left out, µs.
    pub fn default_outage_us(self) -> f64 {
        match self {
            RebootMode::Cold => COLD_REBOOT_OUTAGE_US,
            RebootMode::Warm => WARM_REBOOT_OUTAGE_US,
        }
    }
}

/// A cold reboot's data-plane outage, µs: 150 s. Dell's configuration guide for the S4048-ON
/// (OS9, "Optimized booting") puts the traffic disruption of a normal reload at 150 seconds or
/// more; Huawei's description of warm reboot puts a traditional reboot at more than 120 s; and
/// SONiC's test harness (sonic-mgmt `tests/common/reboot.py`) waits up to 300 s for a cold
/// reboot to return. Set `duration_us` for a measured figure of your own switches.
pub const COLD_REBOOT_OUTAGE_US: f64 = 150e6;

/// A warm reboot's data-plane outage, µs: 1 s. SONiC's warm reboot aims at restarting without
/// touching the data plane (sonic-net/SONiC `doc/warm-reboot/SONiC_Warmboot.md`); the
/// Mellanox implementation's design states a data-plane downtime under 1 s
/// (`doc/warm-reboot/MLNX_FAST_FAST_BOOT.md`), which is taken here as the outage. (SONiC's
/// fast reboot, by contrast, targets under 25–30 s of data plane and 90 s of control plane:
/// `doc/fast-reboot/Fast-reboot_Flow_Improvements_HLD.md`.)
pub const WARM_REBOOT_OUTAGE_US: f64 = 1e6;

/// After a cold reboot's ports return, how long until the switch advertises its routes again,
/// µs, when `routes_after_us` is left out: 0, the routes spread hop by hop at `[routing]
/// convergence_us_per_hop` from the moment the ports are up. BGP session set-up and the first
/// UPDATE exchange add to this on a real switch; no public figure fits every fabric, so give
/// yours (it is the time `show ip bgp summary` takes to list the sessions Established).
pub const COLD_REBOOT_ROUTES_AFTER_US: f64 = 0.0;

/// How long a NIC reset (`nic-reset`, a firmware update's activation) keeps the host's links
/// down, µs, when `duration_us` is left out: 3 s, the time ConnectX firmware allows a port's
/// link to come back after a reset (NVIDIA's BlueField rshim driver waits that long for it:
/// Mellanox/rshim-user-space pull request 125). An `mlxfwreset` that also restarts the driver
/// and resets PCI (its reset level 3) takes longer on most hosts: give the link-down time your
/// hosts log. What the reset costs the traffic is longer still: a QP whose packets died with
/// the link resumes only at its retransmission timeout.
pub const NIC_RESET_LINK_DOWN_US: f64 = 3e6;
