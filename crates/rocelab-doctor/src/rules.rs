//! The doctor's rules, registered like lint's: code, the severities it may give, and what it
//! finds. Every finding is made through [`crate::diagnose::Finding::new`], which checks (in
//! debug builds, so in every test) that its code is registered here with that severity;
//! `docs/doctor.md`'s rule table lists exactly these codes (a test compares them).

use crate::diagnose::Severity::{self, Error, Info, Warning};

pub struct RuleInfo {
    pub code: &'static str,
    pub severities: &'static [Severity],
    /// What the rule finds, in one line.
    pub finds: &'static str,
}

macro_rules! rule {
    ($code:literal, [$($s:expr),+], $finds:literal) => {
        RuleInfo { code: $code, severities: &[$($s),+], finds: $finds }
    };
}

pub static RULES: &[RuleInfo] = &[
    rule!(
        "pfc-storm",
        [Error, Warning],
        "a port/priority paused most of the window, the NIC's pause-storm guard, or a switch PFC watchdog deadlock"
    ),
    rule!("pause-ratio", [Warning], "paused time above the pause ratio of the window"),
    rule!("pause-flood", [Warning], "PFC pause frames at a flood rate where no duration counter says how long"),
    rule!("global-pause", [Error, Warning], "802.3x link-level pause"),
    rule!("ecn-without-cnp", [Error], "ECN-marked packets received and no CNP sent: the notification point is off"),
    rule!("cnp-not-handled", [Error, Warning], "CNPs received and ignored: the reaction point is off"),
    rule!("pause-without-ecn", [Warning], "pauses in the fabric and no ECN mark anywhere"),
    rule!("nic-buffer-drops", [Error], "the NIC ran out of receive buffer"),
    rule!("rx-no-wqe", [Warning], "packets arrived with no receive buffer posted (a host problem)"),
    rule!("retransmissions", [Error, Warning], "out-of-sequence, NAK, timeout or duplicate counters grew"),
    rule!("retry-exhausted", [Error], "a queue pair exhausted its retries"),
    rule!("link-flap", [Error], "the link went down"),
    rule!("link-errors", [Warning], "CRC or PCS symbol errors"),
    rule!("switch-drops", [Warning], "switch queue or no-buffer drops on a class not declared lossless"),
    rule!("lossless-drops", [Error], "drops on a queue or priority the fabric declares lossless"),
    rule!("firmware-mix", [Warning], "NICs of one kind run different firmware across hosts"),
    rule!("busbw-low", [Error, Warning], "nccl-tests busbw below the expected network bandwidth"),
    rule!(
        "busbw-reference",
        [Warning],
        "busbw (algbw on two nodes) above what the network carries: the reference is wrong"
    ),
    rule!("busbw-ok", [Info], "busbw as expected"),
    rule!("busbw-unknown", [Info], "no line rate known to judge busbw"),
    rule!("busbw-not-judged", [Info], "the run's sizes are below the comparable range"),
    rule!("single-node", [Info], "a one-node run does not test the network"),
    rule!("nccl-wrong-results", [Error], "nccl-tests validation failed"),
    rule!("nccl-transport-error", [Error], "NCCL WARN work-completion errors (IBV_WC_RETRY_EXC_ERR, RNR, ...)"),
    rule!("nccl-timeout", [Error], "NCCL WARN timeouts or a collective watchdog timeout"),
    rule!("nccl-warn", [Info], "other NCCL WARN lines"),
    rule!("twin-shortfall", [Error, Warning], "production below its twin's busbw"),
    rule!("twin-above", [Warning], "production above its twin: the twin is not this cluster"),
    rule!("twin-match", [Info], "production matches its twin"),
    rule!("drift-trust", [Error], "trust mode differs from the intent"),
    rule!("drift-dscp-map", [Error], "DSCP code points map to other priorities than intended"),
    rule!("drift-pfc", [Error], "PFC priorities differ from the intent"),
    rule!("drift-ecn-np", [Error, Warning], "ECN notification point enables differ"),
    rule!("drift-ecn-rp", [Error, Warning], "ECN reaction point enables differ"),
    rule!("drift-cnp", [Error], "CNP DSCP or priority differ"),
    rule!("drift-mtu", [Error], "the netdev MTU allows a smaller RoCE MTU than intended"),
    rule!("drift-firmware", [Warning], "firmware differs from the intent"),
    rule!("drift-dcqcn", [Warning], "a DCQCN knob the fabric sets differs"),
    rule!("gpudirect", [Info], "which GPUDirect RDMA mechanism the node has"),
    rule!("gpu-nic-far", [Warning], "a GPU has no RDMA NIC on its PCIe switch"),
    rule!("rail-misaligned", [Warning], "GPUs and NICs are not paired rail by rail"),
    rule!("gdr-not-used", [Warning], "NCCL's network channels do not use GPUDirect RDMA"),
    rule!("nccl-socket-fallback", [Error], "NCCL moves data over TCP sockets"),
];

pub fn lookup(code: &str) -> Option<&'static RuleInfo> {
    RULES.iter().find(|r| r.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for r in RULES {
            assert!(seen.insert(r.code), "{} registered twice", r.code);
            assert!(!r.severities.is_empty());
        }
    }
}
