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
        }
    }
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
        let Some((host, msg)) = split_line(line) else { continue };
        let h = log.hosts.entry(host.to_string()).or_default();
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
    log.hosts.retain(|_, h| *h != HostNet::default());
    log
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
}
