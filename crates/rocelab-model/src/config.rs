//! The fabric file as written by a person: `Config` may be wrong.
//!
//! Every struct here mirrors a TOML table one to one and rejects unknown keys, so a typo such as
//! `kmin_byte` is an error with a location instead of a silently ignored value. Nothing here is
//! trusted: `crate::validate` turns a `Config` into a `Model` that cannot hold illegal states.
//! Field names follow the field's own vocabulary (Kmin/Kmax/Pmax, XOFF/XON, DSCP, rail) and
//! carry their unit as a suffix. `docs/fabric-file.md` documents every key.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub fabric: FabricMeta,
    pub topology: TopologyConfig,
    /// Switch models by name; the topology refers to them. Presets are available without
    /// declaring anything (see `presets::SWITCH_PRESETS`).
    #[serde(default)]
    pub switch_models: BTreeMap<String, SwitchModelConfig>,
    #[serde(default)]
    pub qos: QosConfig,
    /// The default NIC profile, used by every host not matched by `nic_assign`.
    #[serde(default)]
    pub nic: NicConfig,
    /// Further NIC profiles (e.g. a batch of hosts on older firmware).
    #[serde(default)]
    pub nic_profiles: BTreeMap<String, NicConfig>,
    #[serde(default)]
    pub nic_assign: Vec<NicAssign>,
    #[serde(default)]
    pub gpu_node: GpuNodeConfig,
    /// `[nccl]`: how collectives charge NCCL's host-side latency (`crate::nccl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<crate::nccl::NcclConfig>,
    #[serde(default)]
    pub routing: RoutingConfig,
    /// The InfiniBand link layer's settings (`[fabric] link_layer = "infiniband"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infiniband: Option<InfinibandConfig>,
    #[serde(default)]
    pub lint: LintConfig,
    /// Simulation settings and traffic, read by `rocelab simulate`.
    #[serde(default)]
    pub simulation: SimulationConfig,
    #[serde(default)]
    pub traffic: Vec<TrafficConfig>,
    /// Timed faults (link down/up, a receiver that stops draining), read by the engine.
    #[serde(default)]
    pub fault: Vec<FaultConfig>,
    /// The workloads the file names (a collective sweep or a training step), run by
    /// `rocelab simulate FILE` instead of `[[traffic]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload: Vec<WorkloadConfig>,
    /// Tenants run together on the fabric (`[[job]]`, `crate::jobs`), by `simulate --jobs`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job: Vec<crate::jobs::JobConfig>,
    /// Named stress scenarios (`[[scenario]]`), run by `rocelab simulate --scenario NAME`;
    /// `rocelab-scenario` resolves and checks them. Plain `simulate` ignores them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenario: Vec<ScenarioConfig>,
    /// A `rocelab plan` input carried in the fabric file; `rocelab-plan` validates it.
    #[serde(default)]
    pub plan: Option<toml::Table>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FabricMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The link layer of every link: RoCEv2 over Ethernet (PFC, ECN, DCQCN) or InfiniBand
    /// (credit-based flow control per virtual lane, `[infiniband]`).
    #[serde(default, skip_serializing_if = "LinkLayer::is_roce")]
    pub link_layer: LinkLayer,
}

/// `[fabric] link_layer`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LinkLayer {
    #[default]
    Roce,
    Infiniband,
}

impl LinkLayer {
    pub fn is_roce(&self) -> bool {
        *self == LinkLayer::Roce
    }
    /// The name the file writes.
    pub fn name(self) -> &'static str {
        match self {
            LinkLayer::Roce => "roce",
            LinkLayer::Infiniband => "infiniband",
        }
    }
}

/// `[infiniband]`: the InfiniBand link layer's settings (read only when `[fabric] link_layer =
/// "infiniband"`). Every key has a default; `docs/fabric-file.md` cites where each comes from.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InfinibandConfig {
    /// Data VLs every port operates (IBTA OperationalVLs): 1, 2, 4, 8 or 15.
    #[serde(default)]
    pub data_vls: Option<u8>,
    /// Receive buffer of each data VL at every input port (switch and HCA), in bytes: what the
    /// receiver advertises as credits (64-byte blocks).
    #[serde(default)]
    pub vl_buffer_bytes: Option<u64>,
    /// SL → VL: 16 entries, one per service level.
    #[serde(default)]
    pub sl_to_vl: Option<Vec<u8>>,
    /// VL arbitration, high-priority table: (VL, weight in 64-byte units).
    #[serde(default)]
    pub vl_arb_high: Option<Vec<VlArbEntry>>,
    /// VL arbitration, low-priority table.
    #[serde(default)]
    pub vl_arb_low: Option<Vec<VlArbEntry>>,
    /// Limit of high priority, in 4096-byte units (0..=255; 255: unlimited).
    #[serde(default)]
    pub limit_of_high_priority: Option<u16>,
    /// Routing: "static" (by destination LID, ftree-like) or "adaptive" (per packet, the
    /// least-loaded minimal next hop).
    #[serde(default)]
    pub routing: Option<IbRoutingKind>,
    /// IB congestion control (`[infiniband.cc]`): FECN marking, BECN, the CCT.
    #[serde(default)]
    pub cc: Option<IbCcConfig>,
}

/// `[infiniband.cc]`: IB congestion control (IBTA Vol. 1 Annex A10), as rocelab models it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IbCcConfig {
    /// Default true once the table is written.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// A switch sets FECN on data packets leaving a VL queue that holds more than this.
    #[serde(default)]
    pub marking_threshold_bytes: Option<u64>,
    /// CCT index added per BECN.
    #[serde(default)]
    pub ccti_increase: Option<u16>,
    /// Largest CCT index (the table's last entry).
    #[serde(default)]
    pub ccti_limit: Option<u16>,
    /// The index falls by one each time this timer expires (µs).
    #[serde(default)]
    pub ccti_timer_us: Option<f64>,
    /// Inter-packet delay per CCT index step (ns): entry i of the table delays i × this.
    #[serde(default)]
    pub cct_step_ns: Option<f64>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VlArbEntry {
    pub vl: u8,
    pub weight: u16,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum IbRoutingKind {
    #[default]
    Static,
    Adaptive,
}

// ---------------------------------------------------------------------------------------------
// Topology

/// Exactly one of the four kinds must be present.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    pub leaf_spine: Option<LeafSpineConfig>,
    pub fat_tree: Option<FatTreeConfig>,
    pub rail_optimized: Option<RailOptimizedConfig>,
    pub explicit: Option<ExplicitConfig>,
}

/// Speed, length and MTU of a class of links.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub speed_gbps: f64,
    /// Cable length; propagation is 5 ns/m. Ignored when `delay_ns` is given.
    #[serde(default)]
    pub length_m: Option<f64>,
    /// One-way propagation delay, overriding `length_m`.
    #[serde(default)]
    pub delay_ns: Option<f64>,
    /// Port MTU in bytes (the L2 frame payload limit the switch enforces).
    #[serde(default)]
    pub mtu: Option<u32>,
}

impl LinkSpec {
    pub fn new(speed_gbps: f64, length_m: f64) -> Self {
        LinkSpec { speed_gbps, length_m: Some(length_m), delay_ns: None, mtu: None }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LeafSpineConfig {
    pub leaves: u32,
    pub spines: u32,
    pub hosts_per_leaf: u32,
    /// Links from each leaf to the spine tier, spread evenly over the spines
    /// (default: one per spine). Must be a multiple of `spines`.
    #[serde(default)]
    pub uplinks_per_leaf: Option<u32>,
    pub host_link: LinkSpec,
    pub fabric_link: LinkSpec,
    #[serde(default)]
    pub leaf_model: Option<String>,
    #[serde(default)]
    pub spine_model: Option<String>,
}

/// A 3-tier k-ary fat tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation
/// switches, (k/2)² core switches, k³/4 hosts.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FatTreeConfig {
    pub k: u32,
    /// Default for every tier.
    pub link: LinkSpec,
    #[serde(default)]
    pub host_link: Option<LinkSpec>,
    #[serde(default)]
    pub core_link: Option<LinkSpec>,
    #[serde(default)]
    pub switch_model: Option<String>,
}

/// A rail-optimized GPU cluster: NIC `r` of every GPU node connects to the rail-`r` leaf of its
/// scalable unit (SU); leaves of a pod connect to every spine of the pod; pods join through a
/// core tier with an oversubscription ratio (Meta's Llama 3 clusters: 1:7 between pods).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RailOptimizedConfig {
    pub gpu_nodes: u32,
    /// NICs (and rails) per node; one NIC per GPU is the common build.
    pub rails: u32,
    /// GPU nodes per scalable unit, i.e. downlinks of each rail leaf.
    pub nodes_per_su: u32,
    /// SUs per pod (default: all SUs in one pod, no core tier).
    #[serde(default)]
    pub sus_per_pod: Option<u32>,
    /// Spines per pod (default: `nodes_per_su`, which makes the leaf tier 1:1).
    #[serde(default)]
    pub spines_per_pod: Option<u32>,
    /// Parallel links between each leaf and each spine of its pod.
    #[serde(default)]
    pub links_per_leaf_spine: Option<u32>,
    /// Downlink:uplink ratio at the spine tier when there are several pods (7.0 for 1:7).
    #[serde(default)]
    pub pod_oversubscription: Option<f64>,
    /// Core switches (default: as many as each spine has uplinks, one link to each).
    #[serde(default)]
    pub core_switches: Option<u32>,
    pub host_link: LinkSpec,
    pub leaf_link: LinkSpec,
    #[serde(default)]
    pub spine_link: Option<LinkSpec>,
    #[serde(default)]
    pub leaf_model: Option<String>,
    #[serde(default)]
    pub spine_model: Option<String>,
    #[serde(default)]
    pub core_model: Option<String>,
    /// Ports of each NIC (default 2 with `dual_tor`, else `planes`, else 1); `host_link` is
    /// one port's link. See `crate::planes` for how the ports are cabled.
    #[serde(default)]
    pub ports_per_nic: Option<u32>,
    /// Each NIC's two ports go to a pair of ToRs with no stacking link between them (Alibaba
    /// HPN's non-stacked dual-ToR). Default false.
    #[serde(default)]
    pub dual_tor: Option<bool>,
    /// Separate networks the NIC ports are split over, each with its own spines (and cores):
    /// NIC port `k` is on plane `k mod planes` (HPN's dual-plane). Default 1.
    #[serde(default)]
    pub planes: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExplicitConfig {
    #[serde(default)]
    pub node: Vec<ExplicitNode>,
    #[serde(default)]
    pub link: Vec<ExplicitLink>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKindConfig {
    Host,
    Switch,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExplicitNode {
    pub name: String,
    pub kind: NodeKindConfig,
    /// Switch model name (switches only).
    #[serde(default)]
    pub model: Option<String>,
    /// Hosts only: the GPU server this NIC belongs to, and its rail.
    #[serde(default)]
    pub gpu_node: Option<String>,
    #[serde(default)]
    pub rail: Option<u32>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExplicitLink {
    pub a: String,
    pub b: String,
    /// Required unless `link` names a preset that sets it.
    #[serde(default)]
    pub speed_gbps: f64,
    #[serde(default)]
    pub length_m: Option<f64>,
    #[serde(default)]
    pub delay_ns: Option<f64>,
    #[serde(default)]
    pub mtu: Option<u32>,
    /// A host-to-host cable preset: `thunderbolt4` or `thunderbolt5` (`crate::thunderbolt`).
    #[serde(default)]
    pub link: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Switch models

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwitchModelConfig {
    /// Start from a preset (`spectrum-2`, `tomahawk3`, `ns3-reference`, ...) and override.
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    #[serde(default)]
    pub cell_bytes: Option<u32>,
    #[serde(default)]
    pub ports: Option<u32>,
    /// Dynamic-threshold α of the ingress lossless pool (priority groups).
    #[serde(default)]
    pub ingress_lossless_alpha: Option<f64>,
    #[serde(default)]
    pub ingress_lossy_alpha: Option<f64>,
    #[serde(default)]
    pub egress_lossless_alpha: Option<f64>,
    #[serde(default)]
    pub egress_lossy_alpha: Option<f64>,
    /// Private bytes per (port, queue) before the shared pool is used.
    #[serde(default)]
    pub reserve_bytes: Option<u64>,
    /// Hysteresis between XOFF and XON in the dynamic-threshold model.
    #[serde(default)]
    pub resume_offset_bytes: Option<u64>,
    #[serde(default)]
    pub pipeline_latency_bytes: Option<u64>,
    #[serde(default)]
    pub mac_phy_delay_bytes: Option<u64>,
    #[serde(default)]
    pub gearbox_delay_bytes: Option<u64>,
}

// ---------------------------------------------------------------------------------------------
// QoS (switch side)

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    #[default]
    Dscp,
    Pcp,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    Strict,
    #[default]
    Dwrr,
}

/// What a traffic class carries; lint uses it to check isolation.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum TrafficKind {
    Rdma,
    Cnp,
    Tcp,
    Storage,
    Management,
    Other,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QosConfig {
    #[serde(default)]
    pub trust: Trust,
    #[serde(default = "default_classes", rename = "class")]
    pub classes: Vec<TrafficClassConfig>,
    /// Name of the class that carries CNPs.
    #[serde(default = "default_cnp_class")]
    pub cnp_class: String,
    #[serde(default)]
    pub pfc: PfcConfig,
    #[serde(default)]
    pub pfc_watchdog: PfcWatchdogConfig,
}

impl Default for QosConfig {
    fn default() -> Self {
        QosConfig {
            trust: Trust::Dscp,
            classes: default_classes(),
            cnp_class: default_cnp_class(),
            pfc: PfcConfig::default(),
            pfc_watchdog: PfcWatchdogConfig::default(),
        }
    }
}

fn default_cnp_class() -> String {
    "cnp".into()
}

/// NVIDIA-style defaults: RoCE DSCP 26 -> priority 3 lossless with ECN; CNP DSCP 48 ->
/// priority 6 strict; everything else best effort on priority 0.
pub fn default_classes() -> Vec<TrafficClassConfig> {
    vec![
        TrafficClassConfig {
            name: "roce".into(),
            dscp: vec![26],
            priority: 3,
            queue: None,
            lossless: true,
            scheduler: SchedulerKind::Dwrr,
            weight: 50,
            carries: vec![TrafficKind::Rdma],
            ecn: Some(EcnConfig { kmin_bytes: 150_000, kmax_bytes: 1_500_000, pmax: 0.1 }),
            ecn_per_speed: BTreeMap::new(),
        },
        TrafficClassConfig {
            name: "cnp".into(),
            dscp: vec![48],
            priority: 6,
            queue: None,
            lossless: false,
            scheduler: SchedulerKind::Strict,
            weight: 0,
            carries: vec![TrafficKind::Cnp],
            ecn: None,
            ecn_per_speed: BTreeMap::new(),
        },
        TrafficClassConfig {
            name: "default".into(),
            dscp: (0..64).filter(|d| *d != 26 && *d != 48).collect(),
            priority: 0,
            queue: None,
            lossless: false,
            scheduler: SchedulerKind::Dwrr,
            weight: 50,
            carries: vec![TrafficKind::Tcp, TrafficKind::Storage, TrafficKind::Management],
            ecn: None,
            ecn_per_speed: BTreeMap::new(),
        },
    ]
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrafficClassConfig {
    pub name: String,
    /// DSCP code points (0-63) classified into this class.
    #[serde(default)]
    pub dscp: Vec<u8>,
    /// 802.1p priority (0-7): the PFC priority and the priority group at ingress.
    pub priority: u8,
    /// Egress queue (0-7); default: same as `priority`.
    #[serde(default)]
    pub queue: Option<u8>,
    /// PFC on this priority (no drops; pause instead).
    #[serde(default)]
    pub lossless: bool,
    #[serde(default)]
    pub scheduler: SchedulerKind,
    /// DWRR weight (percent of the DWRR share); ignored for strict classes.
    #[serde(default = "default_weight")]
    pub weight: u32,
    #[serde(default)]
    pub carries: Vec<TrafficKind>,
    /// WRED/ECN marking on the egress queue.
    #[serde(default)]
    pub ecn: Option<EcnConfig>,
    /// Per port speed overrides, keyed by speed in Gb/s: `ecn_per_speed."400" = {...}`.
    #[serde(default)]
    pub ecn_per_speed: BTreeMap<String, EcnConfig>,
}

fn default_weight() -> u32 {
    1
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EcnConfig {
    pub kmin_bytes: u64,
    pub kmax_bytes: u64,
    /// Marking probability at Kmax, in (0, 1].
    pub pmax: f64,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfcConfig {
    /// PFC-enabled priorities (default: the priorities of lossless classes).
    #[serde(default)]
    pub priorities: Option<Vec<u8>>,
    /// Headroom per (port, lossless priority). Default: computed from speed, cable length and
    /// MTU with the SONiC Mellanox model. Set it to model a misconfiguration.
    #[serde(default)]
    pub headroom_bytes: Option<u64>,
    /// Static XOFF threshold; default: dynamic (alpha of the ingress lossless pool).
    #[serde(default)]
    pub xoff_bytes: Option<u64>,
    #[serde(default)]
    pub xon_bytes: Option<u64>,
    /// Peer response time in pause quanta (default: per speed, 802.3 Annex 31B).
    #[serde(default)]
    pub peer_response_quanta: Option<u32>,
    /// Quanta carried by an XOFF frame (default 65535).
    #[serde(default)]
    pub pause_quanta: Option<u16>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum WatchdogAction {
    #[default]
    Drop,
    Forward,
    Alert,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfcWatchdogConfig {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "ms200")]
    pub detection_ms: f64,
    #[serde(default = "ms200")]
    pub restoration_ms: f64,
    #[serde(default = "ms200")]
    pub poll_ms: f64,
    #[serde(default)]
    pub action: WatchdogAction,
}

impl Default for PfcWatchdogConfig {
    fn default() -> Self {
        PfcWatchdogConfig {
            enabled: true,
            detection_ms: 200.0,
            restoration_ms: 200.0,
            poll_ms: 200.0,
            action: WatchdogAction::Drop,
        }
    }
}

fn yes() -> bool {
    true
}
fn ms200() -> f64 {
    200.0
}

// ---------------------------------------------------------------------------------------------
// NIC (host side)

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CongestionControl {
    #[default]
    Dcqcn,
    None,
    /// HPCC (INT-based), its knobs in `[nic.hpcc]`.
    Hpcc,
    /// TIMELY (RTT-gradient), its knobs in `[nic.timely]`.
    Timely,
    /// Rate-based DCTCP on RDMA QPs (HPCC's ns-3 CC_MODE 8), its knobs in `[nic.dctcp]`.
    Dctcp,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DcqcnVariant {
    Paper,
    #[default]
    Mlx5,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NicConfig {
    /// Default: the speed of the host's link.
    #[serde(default)]
    pub speed_gbps: Option<f64>,
    /// RoCE path MTU (payload per packet): 1024, 2048 or 4096.
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub firmware: Option<String>,
    #[serde(default)]
    pub congestion_control: Option<CongestionControl>,
    #[serde(default)]
    pub dcqcn: DcqcnConfig,
    #[serde(default)]
    pub qos: HostQosConfig,
    /// The other congestion-control algorithms' tables (`crate::cc`).
    #[serde(default)]
    pub hpcc: crate::cc::HpccConfig,
    #[serde(default)]
    pub timely: crate::cc::TimelyConfig,
    #[serde(default)]
    pub dctcp: crate::cc::DctcpConfig,
    /// Receive buffer; the NIC sends PFC pauses when it fills past `rx_xoff_bytes`.
    #[serde(default)]
    pub rx_buffer_bytes: Option<u64>,
    #[serde(default)]
    pub rx_xoff_bytes: Option<u64>,
    /// The RC QP's local ACK timeout exponent (IB spec): 4.096 µs · 2^ack_timeout, 1..=31;
    /// 0 means no timeout (recovery by NAK only, as in HPCC's ns-3 model).
    #[serde(default)]
    pub ack_timeout: Option<u8>,
    /// Retries after a timeout before the QP goes to the error state (IB `retry_cnt`, 0..=7).
    #[serde(default)]
    pub retry_cnt: Option<u8>,
    /// Per-QP in-flight window in bytes (default 0: none). HPCC's ns-3 model can bound each QP
    /// by a window (`HAS_WIN`, one bandwidth-delay product); ConnectX's DCQCN cannot.
    #[serde(default)]
    pub window_bytes: Option<u64>,
    /// Scale the window by the QP's current rate over its line rate (HPCC's `VAR_WIN`).
    #[serde(default)]
    pub window_scales_with_rate: Option<bool>,
    /// The timeout as a time, for comparing with simulators that set one directly; replaces
    /// `ack_timeout`.
    #[serde(default)]
    pub retransmit_timeout_us: Option<f64>,
    /// Out-of-order placement: PSNs ahead of the next expected one the receiver places
    /// directly (0: none, a gap is a loss). Default: 1024 under a per-packet load balancing
    /// mode, else 0 (`crate::lb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ooo_window_packets: Option<u32>,
    /// The window of the host's TCP without ECN: `"reno"` (default) or `"cubic"` (Linux's).
    #[serde(default)]
    pub tcp_congestion_control: Option<crate::tcp::TcpCongestionControl>,
    /// The transport of its RDMA messages: `"roce"` (default) or `"uet"` (`crate::uet`).
    #[serde(default)]
    pub transport: Option<crate::uet::Transport>,
    /// `[nic.uet]`: the Ultra Ethernet transport's knobs.
    #[serde(default)]
    pub uet: crate::uet::UetConfig,
}

/// DCQCN knobs; any left out take the defaults of the chosen `variant`
/// (see docs/mechanisms.md, the DCQCN variants table).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DcqcnConfig {
    #[serde(default)]
    pub variant: Option<DcqcnVariant>,
    /// α gain g.
    #[serde(default)]
    pub g: Option<f64>,
    /// K: α decays every K µs without a CNP.
    #[serde(default)]
    pub alpha_timer_us: Option<f64>,
    /// T: rate-increase timer period.
    #[serde(default)]
    pub increase_timer_us: Option<f64>,
    /// B: rate-increase byte counter (0 disables it).
    #[serde(default)]
    pub byte_counter_bytes: Option<u64>,
    /// F: fast-recovery stages.
    #[serde(default)]
    pub fast_recovery_steps: Option<u32>,
    #[serde(default)]
    pub rate_ai_mbps: Option<f64>,
    #[serde(default)]
    pub rate_hai_mbps: Option<f64>,
    #[serde(default)]
    pub min_rate_mbps: Option<f64>,
    /// mlx5: the rate cut is evaluated on this period.
    #[serde(default)]
    pub rate_reduce_period_us: Option<f64>,
    #[serde(default)]
    pub initial_alpha: Option<f64>,
    /// Rt ← Rc on every cut (ConnectX `clamp_tgt_rate`).
    #[serde(default)]
    pub clamp_target_rate: Option<bool>,
    /// Rt ← Rc on a cut if the increase timer raised the rate since the last cut
    /// (ConnectX `clamp_tgt_rate_after_time_inc`).
    #[serde(default)]
    pub clamp_target_rate_after_time_inc: Option<bool>,
    /// The most one cut may remove, in percent of the rate (ConnectX `rpg_min_dec_fac`).
    #[serde(default)]
    pub min_dec_fac_percent: Option<f64>,
    /// Rate set on a QP's first CNP, Mb/s; 0 keeps the current rate
    /// (ConnectX `rate_to_set_on_first_cnp`).
    #[serde(default)]
    pub rate_on_first_cnp_mbps: Option<f64>,
    /// NP: at most one CNP per QP per interval.
    #[serde(default)]
    pub cnp_interval_us: Option<f64>,
    /// NP: time the NIC takes to generate a CNP after the marked packet arrives.
    #[serde(default)]
    pub cnp_delay_us: Option<f64>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostQosConfig {
    /// Default: same as the switch.
    #[serde(default)]
    pub trust: Option<Trust>,
    /// DSCP -> priority, keys are DSCP values as strings (`"26" = 3`).
    /// Default: derived from the switch classes.
    #[serde(default)]
    pub dscp_to_priority: Option<BTreeMap<String, u8>>,
    #[serde(default)]
    pub pfc_priorities: Option<Vec<u8>>,
    /// Priorities with the ECN notification point (CNP generation) enabled.
    #[serde(default)]
    pub ecn_np_priorities: Option<Vec<u8>>,
    /// Priorities with the ECN reaction point (rate limiting on CNP) enabled.
    #[serde(default)]
    pub ecn_rp_priorities: Option<Vec<u8>>,
    /// DSCP the NIC stamps on RoCE data.
    #[serde(default)]
    pub roce_dscp: Option<u8>,
    #[serde(default)]
    pub cnp_dscp: Option<u8>,
    #[serde(default)]
    pub cnp_priority: Option<u8>,
}

/// Assigns a NIC profile to hosts whose name matches one of the glob patterns (`*`, `?`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NicAssign {
    pub hosts: Vec<String>,
    pub profile: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GpuNodeConfig {
    /// GPUs per node (default: rails of a rail-optimized fabric, else 8).
    #[serde(default)]
    pub gpus: Option<u32>,
    /// `nvlink4`, `nvlink5`, `pcie4`, `pcie5` or a custom label.
    #[serde(default)]
    pub intra_node: Option<String>,
    /// Per-direction intra-node bandwidth per GPU in GB/s (NVLink 4: 450).
    #[serde(default)]
    pub intra_node_gbytes_per_s: Option<f64>,
    #[serde(default)]
    pub gpu: Option<String>,
    /// The GPU↔NIC leg (`[gpu_node.pcie]`, `crate::pcie`).
    #[serde(default)]
    pub pcie: Option<crate::pcie::PcieConfig>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RoutingConfig {
    /// Header fields hashed for ECMP.
    #[serde(default = "default_hash_fields")]
    pub ecmp_hash_fields: Vec<HashField>,
    /// Base seed of the ECMP hash.
    #[serde(default)]
    pub ecmp_seed: u64,
    /// Give every switch its own hash seed (true) or the same one (false, shows polarization).
    #[serde(default = "yes")]
    pub per_switch_seed: bool,
    /// How long a link failure (or repair) takes to reach each further switch hop, µs.
    /// Default 0: every switch learns at once.
    #[serde(default)]
    pub convergence_us_per_hop: Option<f64>,
    /// A→B and B→A hash alike (the two IPs and the two QPNs hashed as unordered pairs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symmetric_hash: bool,
    /// `ecmp` (default), `flowlet`, `adaptive` or `spray` (`crate::lb`).
    #[serde(default, skip_serializing_if = "crate::lb::LoadBalancing::is_ecmp")]
    pub load_balancing: crate::lb::LoadBalancing,
    /// Idle gap after which a flowlet may move, µs (default 500, CONGA's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowlet_gap_us: Option<f64>,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            ecmp_hash_fields: default_hash_fields(),
            ecmp_seed: 0,
            per_switch_seed: true,
            convergence_us_per_hop: None,
            symmetric_hash: false,
            load_balancing: crate::lb::LoadBalancing::Ecmp,
            flowlet_gap_us: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum HashField {
    SrcIp,
    DstIp,
    Protocol,
    SrcPort,
    DstPort,
    /// The BTH destination QP number, read by a switch UDF (Meta's "Enhanced ECMP").
    DestQpn,
    /// The sender's QP number. Not in the BTH of a data packet (it is the destination QPN of
    /// the packets coming back); offered to compare hash inputs.
    SrcQpn,
}

fn default_hash_fields() -> Vec<HashField> {
    vec![HashField::SrcIp, HashField::DstIp, HashField::Protocol, HashField::SrcPort, HashField::DstPort]
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LintConfig {
    #[serde(default)]
    pub disable: Vec<LintDisable>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LintDisable {
    pub code: String,
    pub reason: String,
}

// ---------------------------------------------------------------------------------------------
// Simulation and traffic

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimulationConfig {
    #[serde(default)]
    pub seed: Option<u64>,
    /// Stop at this simulated time even if flows are unfinished.
    #[serde(default)]
    pub duration_us: Option<f64>,
    /// Sampling period of buffer/utilization time series.
    #[serde(default)]
    pub sample_interval_us: Option<f64>,
    /// Bytes counted around each payload: `roce` (the default, the real wire) or `ns3`
    /// (what HPCC's ns-3 model counts, for imported ns-3 scenarios).
    #[serde(default)]
    pub header_overhead: Option<crate::cc::HeaderOverhead>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TrafficPattern {
    /// One flow `src` -> `dst`.
    Flow,
    /// `senders` hosts (or `srcs`) each send `size_bytes` to `dst`.
    Incast,
    /// Every selected host sends to one other, a random derangement (seeded).
    Permutation,
    /// Every selected host sends to every other.
    AllToAll,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrafficConfig {
    pub pattern: TrafficPattern,
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default)]
    pub dst: Option<String>,
    /// Explicit sender list (incast), or the set of hosts (permutation, all-to-all);
    /// glob patterns allowed. Default: all hosts.
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    /// Incast fan-in when `hosts` is not given: the first N hosts other than `dst`.
    #[serde(default)]
    pub senders: Option<u32>,
    pub size_bytes: u64,
    #[serde(default)]
    pub start_us: Option<f64>,
    /// Traffic class name (default: the first class that carries RDMA).
    #[serde(default)]
    pub class: Option<String>,
    /// Queue pairs per (src, dst) pair; each QP has its own UDP source port.
    #[serde(default)]
    pub qps: Option<u32>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    LinkDown,
    LinkUp,
    /// A host stops draining its receive buffer (a PFC storm source).
    HostStall,
    HostResume,
    /// A switch reboots, cold (every port down, its buffers flushed, back after `duration_us`,
    /// routes after `routes_after_us`) or warm (`mode = "warm"`: links and routes stay, the
    /// data plane stops for `duration_us`).
    SwitchReboot,
    /// A link goes down and up `count` times, once per `period_us` (down for half of it).
    LinkFlap,
    /// The ECMP hash changes mid-run: switch `a` (or every switch, `a = "*"`) takes `seed`.
    EcmpReseed,
    /// The fields every switch hashes change mid-run (`fields`), e.g. the source port is
    /// dropped from the hash; `a = "*"`.
    EcmpHashFields,
    /// A routing change with the link left up: both ends of the switch-to-switch link `a`–`b`
    /// stop routing over it (a BGP session shut down for maintenance, a route-map that drops
    /// its routes). What is queued on it still drains; nothing is lost.
    RouteWithdraw,
    /// The withdrawn link carries routes again.
    RouteRestore,
    /// A host's NIC resets (a firmware update): its links go down for `duration_us`, its QPs
    /// recover through their retransmission timeouts, and it comes back with NIC profile
    /// `profile` if given.
    NicReset,
    /// An ECMP group update on one switch: switch `a` stops using its link to switch `b` as a
    /// member of its equal-cost groups (a next-hop group member removed by its control plane
    /// or a controller), the link left up and `b`'s own groups unchanged.
    EcmpMemberRemove,
    /// The member comes back into switch `a`'s groups.
    EcmpMemberAdd,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FaultConfig {
    pub kind: FaultKind,
    pub at_us: f64,
    /// For link faults: the two ends (`a`, `b`); for host faults: `a` is the host; for switch
    /// faults: `a` is the switch.
    pub a: String,
    #[serde(default)]
    pub b: Option<String>,
    /// `switch-reboot`: how long the switch's data plane is down (default by `mode`).
    #[serde(default)]
    pub duration_us: Option<f64>,
    /// `link-flap`: one down/up cycle per period (down for its first half).
    #[serde(default)]
    pub period_us: Option<f64>,
    /// `link-flap`: how many cycles.
    #[serde(default)]
    pub count: Option<u32>,
    /// `ecmp-reseed`: the new hash seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// `ecmp-hash-fields`: the fields hashed from then on.
    #[serde(default)]
    pub fields: Option<Vec<HashField>>,
    /// `switch-reboot`: `"cold"` (default) or `"warm"` (`events::RebootMode`).
    #[serde(default)]
    pub mode: Option<crate::events::RebootMode>,
    /// `switch-reboot`, cold: how long after its ports return the switch advertises its routes.
    #[serde(default)]
    pub routes_after_us: Option<f64>,
    /// `host-stall`: the host keeps draining its receive buffer at this rate instead of
    /// stopping (a PCIe- or memory-bound host), Gb/s.
    #[serde(default)]
    pub drain_gbps: Option<f64>,
    /// `nic-reset`: the `[nic_profiles.NAME]` the NIC comes back with (its new settings).
    #[serde(default)]
    pub profile: Option<String>,
}

impl FaultConfig {
    /// A fault table of `kind` at `at_us` on `a`, every other key left out.
    pub fn new(kind: FaultKind, at_us: f64, a: impl Into<String>) -> Self {
        FaultConfig {
            kind,
            at_us,
            a: a.into(),
            b: None,
            duration_us: None,
            period_us: None,
            count: None,
            seed: None,
            fields: None,
            mode: None,
            routes_after_us: None,
            drain_gbps: None,
            profile: None,
        }
    }
}

/// A byte count in the fabric file: a number, or a string with a K, M or G suffix ("64K").
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum SizeInput {
    Bytes(u64),
    Text(String),
}

impl SizeInput {
    /// The byte count, or `None` if the text is not a size (`units::parse_size`).
    pub fn bytes(&self) -> Option<u64> {
        match self {
            SizeInput::Bytes(b) => Some(*b).filter(|&b| b > 0),
            SizeInput::Text(t) => crate::units::parse_size(t),
        }
    }
}

/// A workload the file runs (`[[workload]]`): an NCCL-like collective, as nccl-tests runs it,
/// or one training step of a plan. Keys follow `rocelab simulate`'s flags.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Its name in the outputs (default `workload<i>`).
    #[serde(default)]
    pub name: Option<String>,
    /// all_reduce, all_gather, reduce_scatter, alltoall, broadcast or sendrecv.
    #[serde(default)]
    pub collective: Option<String>,
    /// A training step: `"plan"` for this file's own `[plan]`, or a plan file's path (relative
    /// to this file).
    #[serde(default)]
    pub step: Option<String>,
    /// The sweep, as nccl-tests' -b, -e, -f (default: one size).
    #[serde(default)]
    pub min_bytes: Option<SizeInput>,
    #[serde(default)]
    pub max_bytes: Option<SizeInput>,
    #[serde(default)]
    pub step_factor: Option<u64>,
    /// The first K GPU nodes; default: every GPU of the fabric.
    #[serde(default)]
    pub nodes: Option<u32>,
    #[serde(default)]
    pub channels: Option<u32>,
    /// ring or tree (NCCL_ALGO).
    #[serde(default)]
    pub algo: Option<String>,
    #[serde(default)]
    pub qps_per_connection: Option<u32>,
    #[serde(default)]
    pub split_data_on_qps: Option<bool>,
    #[serde(default)]
    pub chunk_bytes: Option<SizeInput>,
    #[serde(default)]
    pub root: Option<u32>,
    /// auto or nics.
    #[serde(default)]
    pub placement: Option<String>,
    /// PXN for all-to-all and send/recv (false: `NCCL_PXN_DISABLE=1`).
    #[serde(default)]
    pub pxn: Option<bool>,
    /// LL, LL128, Simple or auto (NCCL_PROTO; default: NCCL's choice).
    #[serde(default)]
    pub proto: Option<String>,
    /// Inference serving: `"plan"` for this file's own `[plan]`, or a plan file's path
    /// (relative to this file); the keys below are a plan file's `[serve]` keys
    /// (`crate::serving`).
    #[serde(default)]
    pub serve: Option<String>,
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    #[serde(default)]
    pub requests: Option<u32>,
    #[serde(default)]
    pub trace: Option<String>,
    #[serde(default)]
    pub token_budget: Option<u32>,
    #[serde(default)]
    pub max_batch: Option<u32>,
    #[serde(default)]
    pub kv_transfer: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Scenarios: one file per kind under `scenario/`.

pub use crate::scenario::hotspot::HotspotTarget;
pub use crate::scenario::routing_change::RoutingChangeKind;
pub use crate::scenario::sustained::SustainedPattern;
pub use crate::scenario::{ScenarioConfig, ScenarioKind, ScenarioParams};
