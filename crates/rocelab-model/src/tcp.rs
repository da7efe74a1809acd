//! The host's TCP, as `net.ipv4.tcp_congestion_control` sets it on Linux: which window runs
//! the TCP traffic that did not negotiate ECN (ECN-capable TCP runs DCTCP either way).

use serde::{Deserialize, Serialize};

/// `[nic] tcp_congestion_control`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TcpCongestionControl {
    /// Reno's window (RFC 5681) with go-back-N recovery and the NIC profile's transport
    /// timeout: rocelab's TCP-like transport before Linux's was modelled, kept as the default
    /// so earlier results stay as they were.
    #[default]
    Reno,
    /// Linux's default: CUBIC (RFC 9438) with SACK recovery, delayed ACKs and Linux's
    /// retransmission timeout (SRTT + at least 200 ms).
    Cubic,
}
