//! NCCL's own log (`NCCL_DEBUG=INFO`), as printed inside nccl-tests output or by any job.
//!
//! Every line reads `host:pid:tid [cuda device] NCCL INFO <message>`; the messages read here:
//!
//! ```text
//! gpu01:41000:41000 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.11<0>
//! gpu01:41000:41000 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.11<0>
//! gpu01:41000:41000 [0] NCCL INFO DMA-BUF is available on GPU device 0
//! gpu01:41000:41000 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 <= 4), read 0 mode Default
//! gpu01:41000:41000 [0] NCCL INFO GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 4)
//! gpu01:41000:41000 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'
//! gpu01:41000:41000 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
//! ```
//! (layouts from NCCL's `src/transport/net_ib.cc`, `net_socket.cc` and `src/transport.cc`
//! messages as they appear in public bug reports). Lines that are not NCCL INFO lines, and
//! INFO messages not listed, are ignored: this parser never fails, it only gathers.
//!
//! `NCCL WARN` lines are gathered too, by kind ([`WarnKind`]), with a count and the first
//! message of each kind per host:
//!
//! ```text
//! kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) ...
//! ```
//! (NVIDIA/nccl issues 1405 and 1814). `status` is the verbs work-completion status
//! (`enum ibv_wc_status` in rdma-core's `verbs.h`): 12 is `IBV_WC_RETRY_EXC_ERR` (the QP
//! resent until its retry count ran out: packets lost on the path, or the peer gone), 13
//! `IBV_WC_RNR_RETRY_EXC_ERR` (the receiver posted no buffer in time), 5 `IBV_WC_WR_FLUSH_ERR`
//! (work flushed after an earlier error). Newer NCCL prints the name itself.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What NCCL said about its network path, per host.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NcclLog {
    pub hosts: BTreeMap<String, HostNet>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostNet {
    /// RDMA devices of `NET/IB : Using`, by NCCL's index: `mlx5_0:1/RoCE`.
    pub ib_devices: BTreeMap<u32, String>,
    /// `NET/Socket : Using` seen: NCCL moves data over TCP sockets.
    pub socket: bool,
    /// CUDA devices for which `DMA-BUF is available`.
    pub dmabuf_gpus: BTreeSet<String>,
    /// `GPU Direct RDMA Enabled/Disabled ...` messages, as printed (deduplicated).
    pub gdr_enabled: BTreeSet<String>,
    pub gdr_disabled: BTreeSet<String>,
    /// Network channel connections (`via NET/...`) with and without GPU Direct RDMA.
    pub net_channels_gdr: u32,
    pub net_channels_no_gdr: u32,
    /// `via NET/Socket/...` connections.
    pub socket_channels: u32,
    /// `NCCL WARN` lines by kind: how many, and the first message.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub warnings: BTreeMap<WarnKind, WarnSeen>,
}

/// What a `NCCL WARN` line reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarnKind {
    /// `IBV_WC_RETRY_EXC_ERR` (status 12): transport retries exhausted.
    RetryExceeded,
    /// `IBV_WC_RNR_RETRY_EXC_ERR` (status 13): receiver not ready, retries exhausted.
    RnrRetryExceeded,
    /// Another work-completion error from a peer.
    CompletionError,
    /// `IBV_WC_WR_FLUSH_ERR` (status 5): flushed after an earlier error.
    Flushed,
    /// A timeout (connection, proxy, collective watchdog).
    Timeout,
    /// Any other warning.
    Other,
}

impl WarnKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WarnKind::RetryExceeded => "IBV_WC_RETRY_EXC_ERR",
            WarnKind::RnrRetryExceeded => "IBV_WC_RNR_RETRY_EXC_ERR",
            WarnKind::CompletionError => "work-completion error",
            WarnKind::Flushed => "IBV_WC_WR_FLUSH_ERR",
            WarnKind::Timeout => "timeout",
            WarnKind::Other => "other warning",
        }
    }

    fn of(msg: &str) -> WarnKind {
        let status = msg
            .split_once("status=")
            .map(|(_, r)| r.split(|c: char| c.is_whitespace() || c == ',').next().unwrap_or(""))
            .unwrap_or("");
        let lower = msg.to_ascii_lowercase();
        if msg.contains("IBV_WC_RETRY_EXC_ERR") || status == "12" {
            WarnKind::RetryExceeded
        } else if msg.contains("IBV_WC_RNR_RETRY_EXC_ERR") || status == "13" {
            WarnKind::RnrRetryExceeded
        } else if msg.contains("IBV_WC_WR_FLUSH_ERR") || status == "5" {
            WarnKind::Flushed
        } else if msg.contains("Got completion from peer") || msg.contains("IBV_WC_") {
            WarnKind::CompletionError
        } else if lower.contains("timeout") || lower.contains("timed out") {
            WarnKind::Timeout
        } else {
            WarnKind::Other
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WarnSeen {
    pub count: u64,
    /// The first message of this kind, cut to a readable length.
    pub first: String,
}

impl HostNet {
    /// RDMA device names NCCL uses, without port and link layer: `mlx5_0`.
    pub fn ib_device_names(&self) -> Vec<String> {
        self.ib_devices.values().map(|d| d.split([':', '/']).next().unwrap_or(d).to_string()).collect()
    }
}

impl NcclLog {
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    pub fn merge(&mut self, other: &NcclLog) {
        for (h, n) in &other.hosts {
            let e = self.hosts.entry(h.clone()).or_default();
            for (i, d) in &n.ib_devices {
                e.ib_devices.entry(*i).or_insert_with(|| d.clone());
            }
            e.socket |= n.socket;
            e.dmabuf_gpus.extend(n.dmabuf_gpus.iter().cloned());
            e.gdr_enabled.extend(n.gdr_enabled.iter().cloned());
            e.gdr_disabled.extend(n.gdr_disabled.iter().cloned());
            e.net_channels_gdr = e.net_channels_gdr.saturating_add(n.net_channels_gdr);
            e.net_channels_no_gdr = e.net_channels_no_gdr.saturating_add(n.net_channels_no_gdr);
            e.socket_channels = e.socket_channels.saturating_add(n.socket_channels);
            for (k, w) in &n.warnings {
                let m = e.warnings.entry(*k).or_insert_with(|| WarnSeen { count: 0, first: w.first.clone() });
                m.count = m.count.saturating_add(w.count);
            }
        }
    }

    /// Gathers one line (see [`parse`]).
    pub fn add_line(&mut self, line: &str) {
        if let Some((host, msg)) = split_warn(line) {
            let w = self.hosts.entry(host.to_string()).or_default().warnings.entry(WarnKind::of(msg)).or_default();
            if w.count == 0 {
                w.first = super::excerpt_n(msg, 200);
            }
            w.count = w.count.saturating_add(1);
            return;
        }
        let Some((host, msg)) = split_line(line) else { return };
        let h = self.hosts.entry(host.to_string()).or_default();
        if let Some(rest) = msg.strip_prefix("NET/IB : Using ") {
            let list = rest.split(';').next().unwrap_or("");
            for tok in list.split_whitespace() {
                let Some((idx, name)) = tok.strip_prefix('[').and_then(|t| t.split_once(']')) else { continue };
                if let (Ok(i), false) = (idx.parse::<u32>(), name.is_empty()) {
                    h.ib_devices.insert(i, name.to_string());
                }
            }
        } else if msg.starts_with("NET/Socket : Using ") {
            h.socket = true;
        } else if let Some(rest) = msg.strip_prefix("DMA-BUF is available on GPU device ") {
            h.dmabuf_gpus.insert(rest.trim().to_string());
        } else if let Some(pos) = msg.find("GPU Direct RDMA Enabled") {
            h.gdr_enabled.insert(msg[pos..].to_string());
        } else if let Some(pos) = msg.find("GPU Direct RDMA Disabled") {
            h.gdr_disabled.insert(msg[pos..].to_string());
        } else if let Some((_, via)) = msg.split_once(" via NET/") {
            if via.starts_with("Socket") {
                h.socket_channels += 1;
            } else if via.contains("GDRDMA") {
                h.net_channels_gdr += 1;
            } else {
                h.net_channels_no_gdr += 1;
            }
        }
    }

    /// Drops hosts that only had lines of no interest.
    pub fn finish(&mut self) {
        self.hosts.retain(|_, h| *h != HostNet::default());
    }
}

/// `host:pid:tid [dev] [file:line] NCCL WARN message` -> (host, message); a PyTorch
/// watchdog's collective timeout (no host prefix) is kept under `job`.
fn split_warn(line: &str) -> Option<(&str, &str)> {
    if let Some((prefix, msg)) = line.split_once(" NCCL WARN ") {
        let host = prefix.trim().split(':').next()?.trim();
        return (!host.is_empty() && !host.contains(char::is_whitespace)).then_some((host, msg.trim()));
    }
    let pos = line.find("Watchdog caught collective operation timeout")?;
    Some(("job", line[pos..].trim()))
}

/// `host:pid:tid [dev] NCCL INFO message` -> (host, message).
fn split_line(line: &str) -> Option<(&str, &str)> {
    let (prefix, msg) = line.split_once(" NCCL INFO ")?;
    let host = prefix.trim().split(':').next()?.trim();
    (!host.is_empty() && !host.contains(char::is_whitespace)).then_some((host, msg.trim()))
}

pub fn parse(text: &str) -> NcclLog {
    let mut log = NcclLog::default();
    for line in text.lines() {
        log.add_line(line);
    }
    log.finish();
    log
}

/// [`parse`] over a reader of any size, line by line.
pub fn parse_reader(r: impl std::io::BufRead) -> std::io::Result<NcclLog> {
    let mut log = NcclLog::default();
    crate::util::for_each_line(r, |_, line| {
        log.add_line(line);
        true
    })?;
    log.finish();
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_that_matter() {
        let text = "\
gpu01:41000:41000 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.11<0>
gpu01:41000:41000 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.11<0>
gpu01:41000:41000 [0] NCCL INFO DMA-BUF is available on GPU device 0
gpu01:41000:41000 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 <= 4), read 0 mode Default
gpu01:41000:41000 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
gpu01:41000:41000 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1
gpu02:51000:51000 [3] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.12<0>
gpu02:51000:51000 [3] NCCL INFO Channel 00/0 : 11[3] -> 3[3] [send] via NET/Socket/0
not a nccl line
";
        let log = parse(text);
        let a = &log.hosts["gpu01"];
        assert_eq!(a.ib_device_names(), vec!["mlx5_0", "mlx5_1"]);
        assert_eq!(a.dmabuf_gpus.len(), 1);
        assert_eq!(a.gdr_enabled.len(), 1);
        assert_eq!((a.net_channels_gdr, a.net_channels_no_gdr), (1, 1));
        let b = &log.hosts["gpu02"];
        assert!(b.socket && b.socket_channels == 1 && b.ib_devices.is_empty());
        assert!(parse("garbage\n:::: NCCL INFO\n").is_empty());
    }

    /// Lines from NVIDIA/nccl issue 1814 (the same layout as issue 1405).
    #[test]
    fn warn_lines_by_kind() {
        let text = "\
hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 172.36.143.59<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv) localGid ::ffff:29.87.88.182 remoteGids::ffff:29.87.4.221
hostname-test:984:1357 [4] NCCL INFO transport/net.cc:1298 -> 6
hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 172.36.143.59<44206> with status=5 opcode=32656 len=32659 vendor err 249 (Recv) localGid ::ffff:29.87.88.182 remoteGids::ffff:29.87.4.221
hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 172.36.143.59<44206> with status=5 opcode=32656 len=32659 vendor err 249 (Recv) localGid ::ffff:29.87.88.182 remoteGids::ffff:29.87.4.221
gpu02:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1> with status=IBV_WC_RNR_RETRY_EXC_ERR(13) opcode=0
[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.
";
        let log = parse(text);
        let w = &log.hosts["hostname-test"].warnings;
        assert_eq!(w[&WarnKind::RetryExceeded].count, 1);
        assert!(w[&WarnKind::RetryExceeded].first.contains("status=12"));
        assert_eq!(w[&WarnKind::Flushed].count, 2);
        assert_eq!(log.hosts["gpu02"].warnings[&WarnKind::RnrRetryExceeded].count, 1);
        assert_eq!(log.hosts["job"].warnings[&WarnKind::Timeout].count, 1);
        // The same text through the streaming reader.
        assert_eq!(parse_reader(text.as_bytes()).unwrap(), log);
    }
}
