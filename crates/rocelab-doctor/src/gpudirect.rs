//! The GPUDirect RDMA path of each GPU node: does every GPU have an RDMA NIC next to it on
//! PCIe, do the nodes agree on which NIC (rail) each GPU uses, is GPU Direct RDMA in use, and
//! through which mechanism.
//!
//! Sources: `nvidia-smi topo -m` (PCIe paths), the loaded modules (`nvidia_peermem`, the
//! legacy `nv_peer_mem`), and NCCL's INFO log (`NET/IB : Using`, `DMA-BUF is available`,
//! `GPU Direct RDMA Enabled/Disabled`, `via NET/IB/<n>/GDRDMA`). Each rule stays silent when
//! its source is missing.
//!
//! | code | severity | when |
//! |---|---|---|
//! | `gpudirect` | info | which GPUDirect RDMA mechanism the node has (peer-memory module, DMA-BUF, none seen) |
//! | `gpu-nic-far` | warning | a GPU's nearest RDMA NIC is `PHB`, `NODE` or `SYS` away, not `PIX`/`PXB` |
//! | `rail-misaligned` | warning | GPUs share a nearest NIC while NICs are left over, or nodes map one GPU index to different NICs |
//! | `gdr-not-used` | warning | NCCL moves network data through host memory (channels without `GDRDMA`, `GPU Direct RDMA Disabled`) although the GPU and NIC are close |
//! | `nccl-socket-fallback` | error | NCCL uses TCP sockets, not RDMA, for the network |

use crate::diagnose::{Finding, Severity};
use crate::drift::finding;
use crate::parse::gpu::{PciePath, Topo};
use crate::parse::nccl_log::{HostNet, NcclLog};
use crate::snapshot::Snapshot;
use std::collections::{BTreeMap, BTreeSet};

/// The NICs a node's GPUs may use: those NCCL lists, else every NIC of the matrix.
fn usable_nics(topo: &Topo, net: Option<&HostNet>) -> Vec<usize> {
    let listed: BTreeSet<String> = net.map(|n| n.ib_device_names().into_iter().collect()).unwrap_or_default();
    (0..topo.nics.len()).filter(|i| listed.is_empty() || listed.contains(&topo.nics[*i])).collect()
}

/// GPU index -> (path, nearest NICs among `nics`).
fn nearest(topo: &Topo, nics: &[usize]) -> Vec<(String, PciePath, Vec<String>)> {
    let mut out = Vec::new();
    for (g, row) in topo.paths.iter().enumerate() {
        let Some(best) = nics.iter().filter_map(|n| row[*n]).min() else { continue };
        let at: Vec<String> = nics.iter().filter(|n| row[**n] == Some(best)).map(|n| topo.nics[*n].clone()).collect();
        out.push((topo.gpus[g].clone(), best, at));
    }
    out
}

/// Runs the GPUDirect rules over each node's latest snapshot plus NCCL logs given apart.
pub fn rules(latest: &[&Snapshot], extra_log: &NcclLog, out: &mut Vec<Finding>) {
    let mut log = extra_log.clone();
    for s in latest {
        log.merge(&s.nccl_log);
    }
    let by_host: BTreeMap<&str, &Snapshot> = latest.iter().map(|s| (s.host.as_str(), *s)).collect();
    let mut hosts: BTreeSet<&str> = by_host.keys().copied().collect();
    hosts.extend(log.hosts.keys().map(String::as_str));
    // GPU name -> (node, its single nearest NIC), for the cross-node rail check.
    let mut rail_map: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for host in hosts {
        let snap = by_host.get(host).copied();
        let net = log.hosts.get(host);
        let topo = snap.and_then(|s| s.gpu_topo.as_ref());
        let modules = snap.and_then(|s| s.modules.as_ref());
        let gdr_said = net.is_some_and(|n| {
            n.net_channels_gdr + n.net_channels_no_gdr > 0
                || !n.gdr_enabled.is_empty()
                || !n.gdr_disabled.is_empty()
                || !n.dmabuf_gpus.is_empty()
        });
        if let Some(n) = net.filter(|n| (n.socket || n.socket_channels > 0) && n.ib_devices.is_empty()) {
            out.push(finding("nccl-socket-fallback", Severity::Error, host, "NCCL", "NCCL uses TCP sockets for the network (NET/Socket), not RoCE".into(), vec![format!("network channels over sockets: {}", n.socket_channels)], "NCCL found no usable RDMA device: check NCCL_IB_HCA, NCCL_IB_DISABLE, the RoCE GID (NCCL_IB_GID_INDEX) and that the RDMA devices are visible in the job's container"));
        }
        if topo.is_none() && modules.is_none() && !gdr_said {
            continue;
        }
        let near: Vec<(String, PciePath, Vec<String>)> =
            topo.map(|t| nearest(t, &usable_nics(t, net))).unwrap_or_default();
        // Which mechanism.
        let mut mech = Vec::new();
        if let Some(m) = modules {
            if m.contains("nvidia_peermem") {
                mech.push("nvidia-peermem (module nvidia_peermem loaded)".to_string());
            }
            if m.contains("nv_peer_mem") {
                mech.push("nv_peer_mem (legacy peer-memory module loaded)".to_string());
            }
        }
        if let Some(n) = net.filter(|n| !n.dmabuf_gpus.is_empty()) {
            mech.push(format!("DMA-BUF (NCCL: available on {} GPU(s))", n.dmabuf_gpus.len()));
        }
        let mut ev = Vec::new();
        if let Some(m) = modules {
            let rdma: Vec<&str> = m
                .iter()
                .map(String::as_str)
                .filter(|x| ["nvidia", "nvidia_peermem", "nv_peer_mem", "ib_core", "mlx5_ib", "gdrdrv"].contains(x))
                .collect();
            ev.push(format!(
                "loaded modules: {}",
                if rdma.is_empty() {
                    "none of nvidia, nvidia_peermem, nv_peer_mem, ib_core, mlx5_ib".into()
                } else {
                    rdma.join(", ")
                }
            ));
        }
        if let Some(n) = net {
            ev.push(format!(
                "NCCL network channels: {} with GDRDMA, {} without",
                n.net_channels_gdr, n.net_channels_no_gdr
            ));
        }
        let in_use = net.is_some_and(|n| n.net_channels_gdr > 0);
        let msg = if mech.is_empty() && in_use && modules.is_none() {
            "GPUDirect RDMA in use (NCCL channels via GDRDMA); the loaded modules were not collected, so the mechanism is unknown".to_string()
        } else if mech.is_empty() {
            "no GPUDirect RDMA mechanism seen: no peer-memory module loaded and NCCL does not report DMA-BUF"
                .to_string()
        } else {
            format!("GPUDirect RDMA through {}", mech.join(" and "))
        };
        out.push(finding("gpudirect", Severity::Info, host, "GPU↔NIC", msg, ev, if mech.is_empty() && !in_use { "load nvidia_peermem (`modprobe nvidia-peermem`), or use DMA-BUF (NVIDIA open GPU kernel modules, Linux 5.12 or later, NCCL 2.13 or later)" } else { "" }));
        // GPUs whose nearest NIC is far.
        let far: Vec<String> = near
            .iter()
            .filter(|(_, p, _)| !p.is_near())
            .map(|(g, p, at)| format!("{g}: nearest NIC {} is {} ({})", at.join("/"), p.as_str(), p.meaning()))
            .collect();
        if !far.is_empty() {
            out.push(finding("gpu-nic-far", Severity::Warning, host, "GPU↔NIC", format!("{} GPU(s) have no RDMA NIC on their PCIe switch: their network traffic crosses the CPU", far.len()), far, "GPU Direct RDMA is slow or disabled (NCCL_NET_GDR_LEVEL) across host bridges and sockets: put each GPU's NIC under its PCIe switch, or bind the job's ranks to GPUs that have one (NCCL_IB_HCA)"));
        }
        // Rail alignment within the node: GPUs sharing a NIC while others sit idle.
        if let Some(t) = topo {
            let nics = usable_nics(t, net);
            let mut users: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (g, _, at) in &near {
                if at.len() == 1 {
                    users.entry(at[0].as_str()).or_default().push(g.as_str());
                }
            }
            let shared: Vec<String> = users
                .iter()
                .filter(|(_, gs)| gs.len() > 1)
                .map(|(n, gs)| format!("{n} is nearest to {}", gs.join(", ")))
                .collect();
            let idle: Vec<&str> = nics.iter().map(|n| t.nics[*n].as_str()).filter(|n| !users.contains_key(n)).collect();
            if !shared.is_empty() && !idle.is_empty() && nics.len() >= t.gpus.len() {
                let mut ev = shared;
                ev.push(format!("nearest to no GPU: {}", idle.join(", ")));
                out.push(finding("rail-misaligned", Severity::Warning, host, "GPU↔NIC", "GPUs share a NIC while other NICs are nearest to none: one rail carries two GPUs' traffic".into(), ev, "check the PCIe placement (a NIC in the wrong slot) and NCCL_IB_HCA; in a rail-optimized fabric GPU k must reach NIC k on every node"));
            }
            for (g, _, at) in &near {
                if at.len() == 1 {
                    rail_map.entry(g.clone()).or_default().entry(at[0].clone()).or_default().insert(host.to_string());
                }
            }
        }
        // GDR in use?
        if let Some(n) = net {
            let close = near.iter().any(|(_, p, _)| p.is_near()) || topo.is_none();
            if (n.net_channels_no_gdr > 0 || !n.gdr_disabled.is_empty()) && close && n.net_channels_gdr == 0 {
                let mut ev = vec![format!(
                    "NCCL network channels: {} without GDRDMA, {} with",
                    n.net_channels_no_gdr, n.net_channels_gdr
                )];
                ev.extend(n.gdr_disabled.iter().take(3).cloned());
                if let Some(p) = near.iter().find(|(_, p, _)| p.is_near()) {
                    ev.push(format!("{} reaches {} through {} ({})", p.0, p.2.join("/"), p.1.as_str(), p.1.meaning()));
                }
                let hint = if mech.is_empty() {
                    "NCCL stages network data through host memory: load nvidia_peermem or enable DMA-BUF (see `gpudirect`)"
                } else {
                    "a mechanism is loaded but NCCL does not use it: check NCCL_NET_GDR_LEVEL / NCCL_NET_GDR_READ, PCIe ACS and the IOMMU, and that the module matches the driver"
                };
                out.push(finding("gdr-not-used", Severity::Warning, host, "GPU↔NIC", "GPU Direct RDMA is not in use although GPU and NIC are close: network data is copied through host memory".into(), ev, hint));
            }
        }
    }
    // Rail alignment across nodes: one GPU index, different NICs.
    for (g, nics) in &rail_map {
        if nics.len() > 1 {
            let ev: Vec<String> = nics
                .iter()
                .map(|(nic, hs)| format!("{g} → {nic} on {}", hs.iter().cloned().collect::<Vec<_>>().join(", ")))
                .collect();
            out.push(finding("rail-misaligned", Severity::Warning, "fabric", g, format!("{g} reaches the network through different NICs on different nodes: its traffic changes rail between nodes"), ev, "GPU k should use NIC k (rail k) on every node; otherwise rail-local traffic crosses the spine. Check the NICs' PCIe slots and NCCL_IB_HCA ordering"));
        }
    }
}
