//! One host (or switch) at one instant: what `collect` gathers and `doctor` compares.
//!
//! Everything here is already parsed and typed; where a source was missing (no `ethtool` on
//! the host, a dump made by hand without `mlnx_qos`), the field is `None` and the rules that
//! need it stay silent rather than guess.

use crate::parse::ethtool::{DriverInfo, EthtoolStats};
use crate::parse::mlnx_qos::MlnxQos;
use crate::parse::nccl::NcclRun;
use crate::parse::rdma::Counters;
use crate::parse::sysfs::HostSysfs;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// Host name as the fabric file knows it (the `node` label).
    pub host: String,
    pub taken_at_unix_ms: u64,
    /// Where it was read from (a dump directory), for messages.
    pub origin: String,
    pub netdevs: BTreeMap<String, Netdev>,
    /// RDMA ports keyed `mlx5_0/1`.
    pub rdma_ports: BTreeMap<String, RdmaPort>,
    pub switches: BTreeMap<String, SwitchData>,
    pub nccl: Vec<NcclRun>,
    /// GPU ↔ NIC PCIe paths (`nvidia-smi topo -m`), when the host has GPUs.
    pub gpu_topo: Option<crate::parse::gpu::Topo>,
    /// Loaded kernel modules, when collected (`nvidia_peermem`, ...).
    pub modules: Option<std::collections::BTreeSet<String>>,
    /// NCCL INFO lines from logs in the dump and from the nccl-tests outputs in it.
    pub nccl_log: crate::parse::nccl_log::NcclLog,
    /// What could not be read, in words (tool missing, timed out, ...).
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Netdev {
    pub name: String,
    pub ethtool: Option<EthtoolStats>,
    pub driver: Option<DriverInfo>,
    pub mlnx_qos: Option<MlnxQos>,
    pub sysfs: HostSysfs,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RdmaPort {
    pub device: String,
    pub port: u32,
    /// The Ethernet netdev carrying this port's RoCE traffic.
    pub netdev: Option<String>,
    pub counters: Counters,
}

impl RdmaPort {
    pub fn key(&self) -> String {
        format!("{}/{}", self.device, self.port)
    }
    pub fn get(&self, name: &str) -> Option<u64> {
        self.counters.get(name).copied()
    }
}

/// Switch outputs saved in a dump by hand or by automation (`switch/<name>/...`), whatever
/// the vendor: only the normalized model ([`crate::sources`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SwitchData {
    /// Counters of every registered source in the shared metric schema: PFC frames and
    /// paused time, queue drops, ECN marks, storm detections, watermarks, labelled `node`,
    /// `port`, `priority`/`queue`, ...
    pub counters: Vec<crate::metrics::Sample>,
}

impl Netdev {
    /// The effective PFC-enabled priorities: from `mlnx_qos`, else from the per-priority
    /// pause counters the driver exposes (mlx5 shows them only for enabled priorities).
    pub fn pfc_priorities(&self) -> Option<Vec<u8>> {
        if let Some(q) = self.mlnx_qos.as_ref().and_then(|q| q.pfc_enabled.as_ref()) {
            return Some(q.iter().copied().collect());
        }
        self.ethtool.as_ref().map(|e| e.pause_priorities()).filter(|v| !v.is_empty())
    }

    /// Link speed in Gb/s when sysfs reports a positive one.
    pub fn speed_gbps(&self) -> Option<f64> {
        self.sysfs.speed_mbps.filter(|s| *s > 0).map(|s| s as f64 / 1000.0)
    }
}

impl Snapshot {
    /// The netdev of an RDMA port, if the snapshot has it.
    pub fn netdev_of(&self, port: &RdmaPort) -> Option<&Netdev> {
        port.netdev.as_ref().and_then(|n| self.netdevs.get(n))
    }
}
