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

use crate::{Diagnostic, SimTime};
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
        let gen = self.gen.unwrap_or(5);
        let (gts, code) = rate(gen).ok_or_else(|| d("gen", format!("PCIe generation {gen}"), "3, 4, 5 or 6"))?;
        let lanes = self.lanes.unwrap_or(16);
        if !matches!(lanes, 1 | 2 | 4 | 8 | 16) {
            return Err(d("lanes", format!("{lanes} lanes"), "1, 2, 4, 8 or 16"));
        }
        let affinity = match &self.gpu_nic {
            None => Affinity::Pix,
            Some(s) => Affinity::parse(s).ok_or_else(|| {
                d("gpu_nic", format!("affinity `{s}`"), "PIX, PXB, PHB, NODE or SYS, as nvidia-smi topo -m prints it")
            })?,
        };
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
            bytes_per_s: lanes as f64 * gts * 1e9 * code / 8.0 * TLP_EFFICIENCY,
            affinity,
            gdr: self.gpudirect.unwrap_or(true) && affinity <= Affinity::Pxb,
            send_latency: SimTime::from_secs_f64(send_ns * 1e-9),
            recv_latency: SimTime::from_secs_f64(recv_ns * 1e-9),
        })
    }
}

impl PcieLeg {
    /// What one message of `bytes` between nodes adds to its hop: the NIC's DMA on both ends,
    /// and without GPUDirect the copy through host memory on each side.
    pub fn hop_cost(&self, bytes: u64) -> SimTime {
        let bounce = if self.gdr { 0 } else { SimTime::from_secs_f64(2.0 * bytes as f64 / self.bytes_per_s).0 };
        SimTime(self.send_latency.0 + self.recv_latency.0 + bounce)
    }
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
    fn values_that_cannot_be_are_named() {
        for (c, key) in [
            (PcieConfig { gen: Some(7), ..Default::default() }, "gpu_node.pcie.gen"),
            (PcieConfig { lanes: Some(12), ..Default::default() }, "gpu_node.pcie.lanes"),
            (PcieConfig { gpu_nic: Some("NV4".into()), ..Default::default() }, "gpu_node.pcie.gpu_nic"),
            (PcieConfig { dma_read_ns: Some(-1.0), ..Default::default() }, "gpu_node.pcie.dma_read_ns"),
        ] {
            assert_eq!(c.resolve().unwrap_err().path, key);
        }
    }
}
