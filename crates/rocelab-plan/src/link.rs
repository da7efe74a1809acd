//! Link profiles: the interconnects a plan can use, each with its rate, one-way small-message
//! latency as seen by a collective library, and the share of the rate a collective achieves.
//!
//! Rates and latencies (sources listed in docs/plan.md): Intel and Thunderbolt briefs, NVIDIA docs,
//! stas00/ml-engineering, Larsen et al. 2007. Efficiencies are measured ratios where one exists
//! (NVLink 4: 367.6/450 GB/s busbw, nccl-tests on 8×H200; RoCE 400G: 376.7/400 GB/s, 4 nodes ×
//! 8×B200; USB4/TB: 16.4/20 Gb/s TCP) and stated assumptions otherwise; every preset carries its
//! source string and every field can be overridden.

use serde::Serialize;

/// How bytes move: decides NCCL's hardware class (NVLink, PCI, NET) and whether LL128 is usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Nvlink,
    Pcie,
    /// Kernel TCP sockets (NCCL `NET/Socket`): a copy through host memory, no GPUDirect.
    Tcp,
    /// RoCEv2 or InfiniBand verbs with GPUDirect RDMA.
    Rdma,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkProfile {
    pub name: String,
    /// Data rate per port and direction, Gb/s: what the formulas use.
    pub rate_gbps: f64,
    /// The link rate users know the port by, when the data rate is lower (Thunderbolt 4 is a
    /// 40 Gb/s link that carries 32 Gb/s of PCIe data). `None`: the same as `rate_gbps`.
    pub link_gbps: Option<f64>,
    /// One-way small-message latency, µs.
    pub latency_us: f64,
    /// Share of `rate_gbps` a large collective achieves (busbw / rate).
    pub efficiency: f64,
    pub transport: Transport,
    /// Links that have no switch (Thunderbolt) join hosts point to point: at most this many
    /// hosts in a full mesh. `None`: switched, no limit.
    pub max_hosts: Option<u32>,
    /// NICs per node in the usual build for this link: one per GPU (rail-optimized) for RDMA,
    /// one per server for TCP Ethernet and Thunderbolt, since without GPUDirect the traffic
    /// crosses host memory anyway. `None`: one per GPU.
    pub typical_nics_per_node: Option<u32>,
    pub source: String,
}

impl LinkProfile {
    pub const PRESETS: &'static [&'static str] = &[
        "nvlink3",
        "nvlink4",
        "nvlink5",
        "pcie4",
        "pcie5",
        "tb4",
        "tb5",
        "eth10-tcp",
        "eth25-tcp",
        "eth100-tcp",
        "roce100",
        "roce200",
        "roce400",
        "roce800",
        "ib-hdr",
        "ib-ndr",
        "ib-xdr",
    ];

    pub fn preset(name: &str) -> Option<LinkProfile> {
        #[allow(clippy::too_many_arguments)]
        fn l(
            name: &str,
            rate_gbps: f64,
            latency_us: f64,
            efficiency: f64,
            transport: Transport,
            max_hosts: Option<u32>,
            nics: Option<u32>,
            source: &str,
        ) -> LinkProfile {
            LinkProfile {
                name: name.into(),
                rate_gbps,
                link_gbps: None,
                latency_us,
                efficiency,
                transport,
                max_hosts,
                typical_nics_per_node: nics,
                source: source.into(),
            }
        }
        use Transport::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "nvlink3" => l("nvlink3", 2400.0, 0.7, 0.78, Nvlink, None, None,
                "A100 NVLink 3: 300 GB/s per direction; 235/300 GB/s busbw measured (stas00)"),
            "nvlink4" => l("nvlink4", 3600.0, 0.7, 0.82, Nvlink, None, None,
                "H100/H200 NVLink 4: 450 GB/s per direction; 367.6/450 GB/s busbw without NVLS (stas00 8xH200)"),
            "nvlink5" => l("nvlink5", 7200.0, 0.7, 0.82, Nvlink, None, None,
                "B200 NVLink 5: 900 GB/s per direction; efficiency assumed as NVLink 4"),
            "pcie4" => l("pcie4", 248.0, 1.5, 0.80, Pcie, None, None,
                "PCIe Gen4 x16 ≈31 GB/s per direction (stas00); efficiency assumed"),
            "pcie5" => l("pcie5", 504.0, 1.5, 0.80, Pcie, None, None,
                "PCIe Gen5 x16 ≈63 GB/s per direction (stas00); efficiency assumed"),
            "tb4" => LinkProfile { link_gbps: Some(40.0), ..l("tb4", 32.0, 30.0, 0.82, Tcp, Some(4), Some(1),
                "Thunderbolt 4: 40 Gb/s link, 32 Gb/s of PCIe data for host-to-host networking (Intel TB4 brief); 16.4/20 Gb/s TCP measured on USB4 (jiribrejcha.net); no switches") },
            "tb5" => LinkProfile { link_gbps: Some(80.0), ..l("tb5", 64.0, 30.0, 0.82, Tcp, Some(4), Some(1),
                "Thunderbolt 5: 80 Gb/s link, 64 Gb/s of PCIe data for host networking (TB5 brief); TCP latency order of magnitude (jeffgeerling.com); no switches") },
            "eth10-tcp" => l("eth10-tcp", 10.0, 15.0, 0.94, Tcp, None, Some(1),
                "10 GbE + kernel TCP: payload ≈94% at MTU 1500; ≥10 µs one-way in the stack (Larsen et al. 2007)"),
            "eth25-tcp" => l("eth25-tcp", 25.0, 15.0, 0.90, Tcp, None, Some(1),
                "25 GbE + kernel TCP: MTU 1500 payload 94%, minus socket copies (assumed 90%)"),
            "eth100-tcp" => l("eth100-tcp", 100.0, 15.0, 0.60, Tcp, None, Some(1),
                "100 GbE + kernel TCP: NCCL NET/Socket rarely drives 100G from one host (assumed 60%)"),
            "roce100" => l("roce100", 100.0, 3.0, 0.94, Rdma, None, None,
                "RoCEv2 100G; a few µs end to end (NVIDIA); efficiency as measured at 400G"),
            "roce200" => l("roce200", 200.0, 3.0, 0.94, Rdma, None, None,
                "RoCEv2 200G (ConnectX-6/7); efficiency as measured at 400G"),
            "roce400" => l("roce400", 400.0, 3.0, 0.94, Rdma, None, None,
                "RoCEv2 400G ConnectX-7; 376.7/400 GB/s busbw, 4 nodes × 8×B200 (stas00)"),
            "roce800" => l("roce800", 800.0, 3.0, 0.94, Rdma, None, None,
                "RoCEv2 800G ConnectX-8 (NVIDIA); efficiency as measured at 400G"),
            "ib-hdr" => l("ib-hdr", 200.0, 0.6, 0.94, Rdma, None, None,
                "InfiniBand HDR 4x 200 Gb/s, ≈0.6 µs end to end (stas00)"),
            "ib-ndr" => l("ib-ndr", 400.0, 0.6, 0.94, Rdma, None, None,
                "InfiniBand NDR 4x 400 Gb/s; latency assumed as HDR"),
            "ib-xdr" => l("ib-xdr", 800.0, 0.6, 0.94, Rdma, None, None,
                "InfiniBand XDR 4x 800 Gb/s; latency assumed as HDR"),
            _ => return None,
        })
    }

    /// The rate as users know it: `400 Gb/s`, or `40 Gb/s link, 32 Gb/s PCIe data` for a port
    /// whose data rate is below its link rate.
    pub fn rate_text(&self) -> String {
        match self.link_gbps {
            Some(l) if l != self.rate_gbps => format!("{l} Gb/s link, {} Gb/s PCIe data", self.rate_gbps),
            _ => format!("{} Gb/s", self.rate_gbps),
        }
    }

    /// Bytes per second a large transfer achieves on one port: rate/8 × efficiency.
    pub fn effective_bytes_per_s(&self) -> f64 {
        self.rate_gbps * 1e9 / 8.0 * self.efficiency
    }

    pub fn latency_seconds(&self) -> f64 {
        self.latency_us * 1e-6
    }

    /// True for links between nodes (Ethernet, InfiniBand, Thunderbolt networking).
    pub fn is_network(&self) -> bool {
        matches!(self.transport, Transport::Tcp | Transport::Rdma)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_sane() {
        for name in LinkProfile::PRESETS {
            let l = LinkProfile::preset(name).unwrap();
            assert_eq!(&l.name, name);
            assert!(l.rate_gbps > 0.0 && l.latency_us > 0.0, "{name}");
            assert!(l.efficiency > 0.0 && l.efficiency <= 1.0, "{name}");
            assert!(!l.source.is_empty(), "{name} needs a source");
        }
        // Intra-node links are not networks; Thunderbolt has no switches.
        assert!(!LinkProfile::preset("nvlink4").unwrap().is_network());
        assert!(LinkProfile::preset("tb5").unwrap().max_hosts.is_some());
        assert!(LinkProfile::preset("roce400").unwrap().max_hosts.is_none());
        // 400 Gb/s × 94% = 47 GB/s.
        assert!((LinkProfile::preset("roce400").unwrap().effective_bytes_per_s() - 47e9).abs() < 1.0);
    }
}
