//! The checklist's checks: what a check reads from a scenario's result, how it compares it,
//! its limit and why. Each kind lists its own checks beside its setup and evaluation
//! (`kinds/<kind>.rs`, `CHECKS`); `rocelab-validate` judges them. The reasons several kinds
//! share are here.

use rocelab_model::config::ScenarioKind;
use serde::Serialize;

/// How a figure is compared with its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Cmp {
    /// figure ≤ limit
    AtMost,
    /// figure ≥ limit
    AtLeast,
}

impl Cmp {
    /// `<=` or `>=`, as the outputs print it.
    pub fn sign(self) -> &'static str {
        match self {
            Cmp::AtMost => "<=",
            Cmp::AtLeast => ">=",
        }
    }
}

/// A check of the checklist.
#[derive(Clone, Copy, Debug)]
pub struct CheckDef {
    /// `<scenario>.<rule>`.
    pub name: &'static str,
    pub kind: ScenarioKind,
    /// What is compared: the headline, a metric, or a difference of two (losses the fault
    /// explains subtracted from all losses); `headline` names the headline in a difference.
    pub figure: Figure,
    pub cmp: Cmp,
    /// `None`: reported only.
    pub limit: Option<f64>,
    /// The figure's unit (a ratio says what it is a ratio of).
    pub unit: &'static str,
    /// What the check means and where its default comes from.
    pub why: &'static str,
}

/// The figure a check reads from a scenario's result.
#[derive(Clone, Copy, Debug)]
pub enum Figure {
    Headline,
    Metric(&'static str),
    /// metric a − metric b.
    Difference(&'static str, &'static str),
    /// From the engine's report of the run: the largest share of the run any port and
    /// priority spent paused by PFC (received pauses).
    MaxPausedShare,
    /// From the engine's report: the 99th percentile of the packets' queueing delay, µs.
    QueueDelayP99Us,
    /// From the engine's report: the 99th percentile of a CNP's wait at one switch egress
    /// queue, µs.
    CnpDelayP99Us,
    /// From the telemetry: µs from the fault (`at_us`) until the fabric's goodput first reaches
    /// 90 % of its mean after the fault.
    RecoveryUs,
}

pub const LOSSLESS: &str = "a lossless class drops nothing while PFC headroom covers the cable and the peer's response (IEEE 802.1Qbb); any drop is a headroom, threshold or watchdog problem";
pub const NO_STORM: &str = "no PFC watchdog storm: a storm means a priority stayed paused past the watchdog's detection time (SONiC's PFC watchdog, 200 ms by default), which a healthy fabric never does under this load";

pub const PAUSED: &str = "no port and priority paused by PFC for more than 5 % of a steady load (the share at which `rocelab doctor` warns, pause_ratio): beyond it PFC is doing the braking that ECN and DCQCN should";

/// The default limit of the CNP-delay checks, µs per hop: ConnectX's
/// `rate_reduce_monitor_period` and `min_time_between_cnps` (4 µs, NVIDIA's DCQCN parameter
/// docs). A CNP held longer than that at one hop reaches its sender after the NIC could
/// already have acted on the next one, and DCQCN reacts a period late. On a strict-priority
/// CNP queue a CNP waits at most for the frame already on the wire (0.33 µs for 4,178 B at
/// 100 Gb/s).
pub const CNP_DELAY_US: f64 = 4.0;

pub const CNP_DELAY: &str = "the 99th percentile of a CNP's wait at one switch egress queue, µs: CNPs in a strict-priority queue of their own pass data at once; in a data class they wait behind the congestion they report, and DCQCN reacts late. 4 µs is ConnectX's rate_reduce_monitor_period and min_time_between_cnps (NVIDIA's DCQCN parameter docs)";

pub const CNP_PATH: &str = "the 99th percentile of a CNP's wait at one switch egress queue, µs, where CNPs must cross congestion: the checklist's `cnp-path` hotspot sends a flow into a hot receiver from a host whose own downlink is an incast's, so the receiver's CNPs reach their sender through a congested egress. In a strict-priority CNP class they pass the data at once; scheduled DWRR beside data, or in the data class, they wait their turn behind it and DCQCN cuts late. 4 µs: ConnectX's rate_reduce_monitor_period";

/// The default limit of `link-loss.recovery`, µs: far above the few round trips rerouting and
/// go-back-N after a NAK take, far below the shortest transport timeout a NIC is given in
/// practice (4.096 µs · 2^14 = 67 ms, NCCL's oldest `NCCL_IB_TIMEOUT`).
pub const RECOVERY_US: f64 = 1000.0;

pub const PFC_ON_TCP: &str = "no PFC pause for the priority TCP rides (pause frames sent for it while loss-based TCP streams beside RDMA): TCP recovers loss itself; made lossless, it never sees a loss and never backs off, its queue fills the buffer, and the pauses stop every flow of its priority on the paused links, wherever they go (head-of-line blocking), spreading hop by hop to the senders. PFC belongs on the RoCE priority only (NVIDIA's and SONiC's RoCE defaults)";
