//! The GPU↔NIC leg of a GPU node (`[gpu_node.pcie]`): the PCIe link each device has, how far
//! the GPU sits from its NIC, and whether the NIC reads and writes GPU memory directly
//! (GPUDirect RDMA) or through a bounce buffer in host memory.
//!
//! * **Bandwidth** of a device link: lanes × the generation's transfer rate × its encoding
//!   (128b/130b for Gen 3–5; Gen 6's 256-byte FLITs carry 242 bytes of TLPs) × the share of a
//!   256-byte TLP that is payload (24 bytes of header, sequence number, LCRC and framing):
//!   Gen 5 ×16 = 16 × 32 GT/s × 128/130 / 8 × 256/280 = 57.6 GB/s.
//! * **Affinity**, as `nvidia-smi topo -m` prints it: PIX (one PCIe switch between GPU and
//!   NIC), PXB (several switches), PHB (through the CPU's host bridge), SYS (across the
//!   sockets). NCCL uses GPUDirect RDMA only up to PXB (`NCCL_NET_GDR_LEVEL`, default PXB,
//!   `src/graph/paths.cc`): at PHB or SYS, or with `gpudirect = false`, every message is
//!   staged in host memory — the GPU writes it there over its own link before the NIC reads it,
//!   and the NIC writes a received one there before the GPU reads it: the bytes cross the GPU's
//!   link once more on each side.
//! * **Latency**: a NIC sends after two DMA reads (the work request, then the payload) and
//!   delivers with a posted write; a small DMA read takes about 0.5–0.9 µs end to end
//!   (Neugebauer et al., "Understanding PCIe performance for end host networking", SIGCOMM
//!   2018). Crossing the sockets (SYS) adds the inter-socket link to each.

use crate::{BitsPerSec, Diagnostic, Model, NodeId, Role, SimTime};
use serde::{Deserialize, Serialize};

/// `[gpu_node.pcie]` as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PcieConfig {
    /// PCIe generation of the GPU's and the NIC's links: 3, 4, 5 or 6 (default 5: H100 and
    /// ConnectX-7).
    #[serde(default)]
    pub gen: Option<u32>,
    /// Lanes of each device's link (default 16).
    #[serde(default)]
    pub lanes: Option<u32>,
    /// GPU↔NIC affinity as `nvidia-smi topo -m` shows it: PIX, PXB, PHB or SYS (default PIX).
    #[serde(default)]
    pub gpu_nic: Option<String>,
    /// GPUDirect RDMA (nvidia-peermem or DMA-BUF) available (default true).
    #[serde(default)]
    pub gpudirect: Option<bool>,
    /// One small DMA read, round trip, ns (default 600).
    #[serde(default)]
    pub dma_read_ns: Option<f64>,
    /// One crossing of the inter-socket link, ns (default 200; SYS only).
    #[serde(default)]
    pub socket_crossing_ns: Option<f64>,
    /// PCIe generation and lanes of each NIC's own link, where it differs from the GPU's (a
    /// NIC behind a Gen5 x4 link carries at most 14.4 GB/s, whatever its port's speed).
    #[serde(default)]
    pub nic_gen: Option<u32>,
    #[serde(default)]
    pub nic_lanes: Option<u32>,
    /// The node's GPU rows of `nvidia-smi topo -m`, NIC columns only: row g lists GPU g's class
    /// to each NIC in rail order (`"PIX SYS SYS SYS"`). NCCL gives each GPU its closest NIC
    /// ([`nccl_nic_choice`]); without it, GPU g's closest NIC is NIC ⌊g·R/G⌋ at `gpu_nic`.
    #[serde(default)]
    pub topo: Option<Vec<String>>,
}

/// How far a GPU sits from its NIC (`nvidia-smi topo -m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Affinity {
    Pix,
    Pxb,
    Phb,
    Sys,
}

impl Affinity {
    pub fn parse(s: &str) -> Option<Affinity> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PIX" => Some(Affinity::Pix),
            "PXB" => Some(Affinity::Pxb),
            // NODE (across host bridges of one NUMA node) is beyond PXB for NCCL too.
            "PHB" | "NODE" => Some(Affinity::Phb),
            "SYS" => Some(Affinity::Sys),
            _ => None,
        }
    }
}

/// The GPU↔NIC leg, resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcieLeg {
    /// Payload bandwidth of a device's link, per direction, bytes/s.
    pub bytes_per_s: f64,
    /// Payload bandwidth of a NIC's own link, per direction, bytes/s.
    pub nic_bytes_per_s: f64,
    pub affinity: Affinity,
    /// Whether NCCL moves data with GPUDirect RDMA (asked for, and the affinity within PXB).
    pub gdr: bool,
    /// Added to a message between nodes on the sending side (two DMA reads) and the receiving
    /// side (a posted write, half a round trip).
    pub send_latency: SimTime,
    pub recv_latency: SimTime,
}

/// Transfer rate per lane (GT/s) and line-code efficiency per generation.
fn rate(gen: u32) -> Option<(f64, f64)> {
    match gen {
        3 => Some((8.0, 128.0 / 130.0)),
        4 => Some((16.0, 128.0 / 130.0)),
        5 => Some((32.0, 128.0 / 130.0)),
        6 => Some((64.0, 242.0 / 256.0)),
        _ => None,
    }
}

/// Share of a 256-byte-payload TLP that is payload.
const TLP_EFFICIENCY: f64 = 256.0 / 280.0;

impl PcieConfig {
    /// The leg, or the key that cannot be used (`gpu_node.pcie.<key>`).
    pub fn resolve(&self) -> Result<PcieLeg, Diagnostic> {
        let d = |key: &str, msg: String, hint: &str| Diagnostic::new(format!("gpu_node.pcie.{key}"), msg, hint);
        let link = |gen_key: &str, gen: u32, lanes_key: &str, lanes: u32| -> Result<f64, Diagnostic> {
            let (gts, code) = rate(gen).ok_or_else(|| d(gen_key, format!("PCIe generation {gen}"), "3, 4, 5 or 6"))?;
            if !matches!(lanes, 1 | 2 | 4 | 8 | 16) {
                return Err(d(lanes_key, format!("{lanes} lanes"), "1, 2, 4, 8 or 16"));
            }
            Ok(lanes as f64 * gts * 1e9 * code / 8.0 * TLP_EFFICIENCY)
        };
        let (gen, lanes) = (self.gen.unwrap_or(5), self.lanes.unwrap_or(16));
        let bytes_per_s = link("gen", gen, "lanes", lanes)?;
        let nic_bytes_per_s =
            link("nic_gen", self.nic_gen.unwrap_or(gen), "nic_lanes", self.nic_lanes.unwrap_or(lanes))?;
        let mut affinity = match &self.gpu_nic {
            None => Affinity::Pix,
            Some(s) => Affinity::parse(s).ok_or_else(|| {
                d("gpu_nic", format!("affinity `{s}`"), "PIX, PXB, PHB, NODE or SYS, as nvidia-smi topo -m prints it")
            })?,
        };
        if let Some(rows) = &self.topo {
            // The farthest GPU from the NIC NCCL gives it sets the leg: a ring waits for its
            // slowest hop.
            let t = topo_classes(rows).map_err(|(i, msg)| d(&format!("topo[{i}]"), msg, TOPO_HINT))?;
            let choice = nccl_nic_choice(&t);
            affinity = (0..t.len()).map(|g| t[g][choice[g]]).max().unwrap_or(affinity);
        }
        let ns = |key: &str, v: Option<f64>, default: f64| match v {
            Some(x) if !(x.is_finite() && (0.0..=1e6).contains(&x)) => {
                Err(d(key, format!("{x} ns"), "0 to 1000000 ns"))
            }
            Some(x) => Ok(x),
            None => Ok(default),
        };
        let read = ns("dma_read_ns", self.dma_read_ns, 600.0)?;
        let socket =
            if affinity == Affinity::Sys { ns("socket_crossing_ns", self.socket_crossing_ns, 200.0)? } else { 0.0 };
        // A read crosses the sockets twice (request and completion), a posted write once.
        let send_ns = 2.0 * (read + 2.0 * socket);
        let recv_ns = read / 2.0 + socket;
        Ok(PcieLeg {
            bytes_per_s,
            nic_bytes_per_s,
            affinity,
            gdr: self.gpudirect.unwrap_or(true) && affinity <= Affinity::Pxb,
            send_latency: SimTime::from_secs_f64(send_ns * 1e-9),
            recv_latency: SimTime::from_secs_f64(recv_ns * 1e-9),
        })
    }
}

const TOPO_HINT: &str =
    "one row per GPU, its class to each NIC in rail order, as nvidia-smi topo -m prints them: \"PIX SYS SYS SYS\"";

/// `topo` rows as classes: every row the same number of NICs, each a class NCCL knows; the
/// row index and the problem otherwise.
pub fn topo_classes(rows: &[String]) -> Result<Vec<Vec<Affinity>>, (usize, String)> {
    let mut out: Vec<Vec<Affinity>> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let classes: Vec<Affinity> = row
            .split_whitespace()
            .map(|c| Affinity::parse(c).ok_or_else(|| (i, format!("class `{c}`"))))
            .collect::<Result<_, _>>()?;
        if classes.is_empty() {
            return Err((i, "an empty row".into()));
        }
        if let Some(first) = out.first() {
            if first.len() != classes.len() {
                return Err((i, format!("{} NICs where row 0 has {}", classes.len(), first.len())));
            }
        }
        out.push(classes);
    }
    Ok(out)
}

/// NCCL's rule for the NIC a GPU uses (`ncclTopoGetLocalNet`, `src/graph/topo.cc`, channel 0):
/// the NICs of the closest path class to the GPU (PIX before PXB before PHB before SYS) are its
/// local NICs; of those it takes number `dev mod count`, its device index with the low bits
/// mirrored first when the count is a power of two (`mirrorBits`), so GPUs that share their
/// local NICs spread over them. Returns the NIC index of each GPU.
pub fn nccl_nic_choice(topo: &[Vec<Affinity>]) -> Vec<usize> {
    let mirror = |val: usize, pow2: usize| {
        let (mut m, mut b, mut mb) = (0, 1, pow2 >> 1);
        while b < pow2 {
            if val & b != 0 {
                m |= mb;
            }
            b <<= 1;
            mb >>= 1;
        }
        m
    };
    topo.iter()
        .enumerate()
        .map(|(dev, row)| {
            let best = row.iter().min().copied();
            let local: Vec<usize> = (0..row.len()).filter(|&n| Some(row[n]) == best).collect();
            let count = local.len().max(1);
            let net = if count.is_power_of_two() { mirror(dev, count) } else { dev };
            local[net % count]
        })
        .collect()
}

impl PcieLeg {
    /// The rate at which a NIC can move data between the GPU and the wire, bytes/s: its own
    /// PCIe link's and the GPU's, the slower (the port's speed caps it further).
    pub fn nic_cap_bytes_per_s(&self) -> f64 {
        self.nic_bytes_per_s.min(self.bytes_per_s)
    }

    /// What one message of `bytes` between nodes adds to its hop: the NIC's DMA on both ends,
    /// and without GPUDirect the copy through host memory on each side.
    pub fn hop_cost(&self, bytes: u64) -> SimTime {
        let bounce = if self.gdr { 0 } else { SimTime::from_secs_f64(2.0 * bytes as f64 / self.bytes_per_s).0 };
        SimTime(self.send_latency.0 + self.recv_latency.0 + bounce)
    }
}

/// What a GPU node's NIC can move between the GPU and the wire, bits/s: its PCIe link
/// (`PcieLeg::nic_cap_bytes_per_s`), where the fabric declares `[gpu_node.pcie]` and it resolves
/// (a wrong table is reported where the collective is set up, not here).
pub fn nic_cap_bps(m: &Model) -> Option<f64> {
    m.config.gpu_node.pcie.as_ref()?.resolve().ok().map(|l| l.nic_cap_bytes_per_s() * 8.0)
}

/// The rate a port of `host` sends at: `None` unless `host` is a NIC of a GPU node whose PCIe
/// link carries less than its ports (a dual-port NIC shares one link: each port gets its share),
/// else that share, never above the port's speed. The packet engine serializes the port at it.
pub fn port_send_cap(m: &Model, host: NodeId) -> Option<BitsPerSec> {
    let node = m.node(host);
    if !matches!(node.role, Role::Host { gpu_node: Some(_), .. }) {
        return None;
    }
    let per_port = nic_cap_bps(m)? / node.num_ports.max(1) as f64;
    let speed = node.ports().map(|p| m.port(p).speed).max()?;
    (per_port < speed.0 as f64).then_some(BitsPerSec(per_port.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gen5_x16_link_and_nccls_gdr_rule() {
        let leg = PcieConfig::default().resolve().unwrap();
        // 16 × 32 GT/s × 128/130 / 8 × 256/280 = 57.6 GB/s.
        assert!((leg.bytes_per_s / 1e9 - 57.6).abs() < 0.05, "{}", leg.bytes_per_s);
        assert!(leg.gdr && leg.affinity == Affinity::Pix);
        assert_eq!(leg.hop_cost(1 << 20), SimTime::from_secs_f64(1.5e-6));
        for (a, gdr) in [("pxb", true), ("PHB", false), ("SYS", false)] {
            let l = PcieConfig { gpu_nic: Some(a.into()), ..Default::default() }.resolve().unwrap();
            assert_eq!(l.gdr, gdr, "{a}");
        }
        let off = PcieConfig { gpudirect: Some(false), ..Default::default() }.resolve().unwrap();
        // The bounce: the bytes cross the GPU's link once more on each side.
        let extra = off.hop_cost(1 << 20).0 - leg.hop_cost(1 << 20).0;
        assert!((extra as f64 * 1e-12 - 2.0 * (1u64 << 20) as f64 / leg.bytes_per_s).abs() < 1e-12);
        let sys = PcieConfig { gpu_nic: Some("SYS".into()), ..Default::default() }.resolve().unwrap();
        assert!(sys.send_latency > leg.send_latency && sys.recv_latency > leg.recv_latency);
    }

    #[test]
    fn nccl_gives_each_gpu_its_closest_nic_and_shares_ties_in_turn() {
        let rows = |r: &[&str]| topo_classes(&r.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        // One NIC per GPU pair behind a PCIe switch (PIX), the other NICs across the host.
        let pairs = rows(&[
            "PIX SYS SYS SYS",
            "PIX SYS SYS SYS",
            "SYS PIX SYS SYS",
            "SYS PIX SYS SYS",
            "SYS SYS PIX SYS",
            "SYS SYS PIX SYS",
            "SYS SYS SYS PIX",
            "SYS SYS SYS PIX",
        ]);
        assert_eq!(nccl_nic_choice(&pairs), [0, 0, 1, 1, 2, 2, 3, 3]);
        // The NICs listed out of GPU order: each GPU still gets its PIX NIC.
        let crossed = rows(&["SYS PIX", "PIX SYS"]);
        assert_eq!(nccl_nic_choice(&crossed), [1, 0]);
        // GPUs with no close NIC (all SYS) spread over the four by their mirrored index
        // (1 = 0b01 -> 0b10 = NIC 2, 3 -> NIC 3); PXB beats PHB.
        let far = rows(&["SYS SYS SYS SYS", "SYS SYS SYS SYS", "PHB PXB PHB PHB", "SYS SYS SYS SYS"]);
        assert_eq!(nccl_nic_choice(&far), [0, 2, 1, 3]);
        // Three local NICs (not a power of two): index mod 3.
        let three = rows(&["PIX PIX PIX SYS", "PIX PIX PIX SYS", "PIX PIX PIX SYS", "PIX PIX PIX SYS"]);
        assert_eq!(nccl_nic_choice(&three), [0, 1, 2, 0]);
        // The leg takes the farthest chosen class: PXB (GPUDirect stays on).
        let topo = Some(vec!["PIX SYS".to_string(), "PHB PXB".to_string()]);
        let leg = PcieConfig { topo, ..Default::default() }.resolve().unwrap();
        assert_eq!((leg.affinity, leg.gdr), (Affinity::Pxb, true));
    }

    #[test]
    fn a_nic_behind_a_narrow_link_is_capped_by_it() {
        // A 200G port behind PCIe Gen5 x4: 4 × 32 GT/s × 128/130 / 8 × 256/280 = 14.4 GB/s
        // (115 Gb/s), the GPU's x16 link 57.6 GB/s.
        let leg = PcieConfig { nic_lanes: Some(4), ..Default::default() }.resolve().unwrap();
        assert!((leg.nic_cap_bytes_per_s() / 1e9 - 14.4).abs() < 0.01, "{}", leg.nic_cap_bytes_per_s());
        assert!((leg.bytes_per_s / 1e9 - 57.6).abs() < 0.05);
        assert_eq!(PcieConfig::default().resolve().unwrap().nic_cap_bytes_per_s(), leg.bytes_per_s);
    }

    #[test]
    fn values_that_cannot_be_are_named() {
        for (c, key) in [
            (PcieConfig { gen: Some(7), ..Default::default() }, "gpu_node.pcie.gen"),
            (PcieConfig { lanes: Some(12), ..Default::default() }, "gpu_node.pcie.lanes"),
            (PcieConfig { gpu_nic: Some("NV4".into()), ..Default::default() }, "gpu_node.pcie.gpu_nic"),
            (PcieConfig { dma_read_ns: Some(-1.0), ..Default::default() }, "gpu_node.pcie.dma_read_ns"),
            (PcieConfig { nic_lanes: Some(3), ..Default::default() }, "gpu_node.pcie.nic_lanes"),
            (PcieConfig { topo: Some(vec!["PIX NV4".into()]), ..Default::default() }, "gpu_node.pcie.topo[0]"),
            (
                PcieConfig { topo: Some(vec!["PIX SYS".into(), "SYS".into()]), ..Default::default() },
                "gpu_node.pcie.topo[1]",
            ),
        ] {
            assert_eq!(c.resolve().unwrap_err().path, key);
        }
    }
}
