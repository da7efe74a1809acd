//! What NCCL's protocol changes on the wire and per step (NVIDIA/nccl 2.30.7: `src/include/device.h`,
//! `src/init.cc`, `src/graph/tuning.cc`).
//!
//! * **Bytes on the wire.** Simple sends the data as it is. LL sends 8-byte lines of 4 data bytes
//!   and a 4-byte flag (twice the data); LL128 sends 128-byte lines of 120 data bytes and an
//!   8-byte flag.
//! * **Step size** (one network message, one slot of the connection's FIFO): the protocol's
//!   buffer over `NCCL_STEPS` = 8 slots. Simple: `NCCL_BUFFSIZE` 4 MiB / 8 = 512 KiB of data;
//!   LL: 8 lines × 512 threads × 16 B × 8 steps / 8 = 64 KiB of lines (32 KiB of data); LL128:
//!   120 elements × 640 threads × 8 B × 8 steps / 8 = 600 KiB of lines (562.5 KiB of data).
//!   A ring step larger than that is sliced into messages the next rank forwards one by one, so a
//!   large message pipelines along the ring as NCCL's does.
//! * **Latency.** A hop inside a node costs NCCL's `hwLat` for that link, algorithm and protocol
//!   (NVLink ring: 0.6 µs LL, 1.9 µs LL128, 3.4 µs Simple); a hop between nodes costs what the
//!   engine simulates plus the proxy's post overhead (`getNetOverhead`: 1 µs on x86, three times
//!   that with Simple), and every collective pays NCCL's base latency once
//!   (`baseLatencies[algo][proto]`), as NCCL's own model charges them.

use crate::{Algo, Proto};
use rocelab_model::pcie::PcieLeg;
use rocelab_model::SimTime;
use rocelab_plan::collective::HwClass;

/// Simple's step: `NCCL_BUFFSIZE` (4 MiB) over `NCCL_STEPS` (8).
pub const SIMPLE_STEP_BYTES: u64 = 512 << 10;
/// LL's step of data: 64 KiB of 16-byte FIFO lines, half of it data.
pub const LL_STEP_BYTES: u64 = 32 << 10;
/// LL128's step of data: 614,400 B of lines, 120 of every 128 bytes data.
pub const LL128_STEP_BYTES: u64 = 614_400 / 128 * 120;

/// `hwLatencies` inside a node, µs: [NVLink, PCI][tree, ring][LL, LL128, Simple].
const INTRA_LAT_US: [[[f64; 3]; 2]; 2] = [[[0.6, 1.25, 4.0], [0.6, 1.9, 3.4]], [[1.0, 1.9, 4.0], [1.0, 2.5, 5.7]]];
/// `baseLatencies`, µs: [tree, ring][LL, LL128, Simple].
const BASE_LAT_US: [[f64; 3]; 2] = [[6.8, 14.0, 8.4], [6.6, 14.0, 8.4]];
/// `getNetOverhead` on x86 (Intel), µs; Simple pays it three times.
const NET_OVERHEAD_US: f64 = 1.0;

fn p_idx(p: Proto) -> usize {
    match p {
        Proto::Ll => 0,
        Proto::Ll128 => 1,
        Proto::Simple => 2,
    }
}

/// One protocol as the twin charges it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wire {
    pub proto: Proto,
    /// Data bytes per network message (the protocol's step).
    pub step_bytes: u64,
    /// Added to each message between nodes: the proxy's post overhead.
    pub net_overhead: SimTime,
    /// The GPU↔NIC leg of GPU nodes (`[gpu_node.pcie]`): its DMA latency on both ends and,
    /// without GPUDirect RDMA, the copy through host memory; `None` where ranks are host NICs.
    pub pcie: Option<PcieLeg>,
}

impl Wire {
    /// `proto` with the step it sends; Simple's step is `simple_step` (`--chunk-bytes`).
    pub fn new(proto: Proto, simple_step: u64) -> Wire {
        let step_bytes = match proto {
            Proto::Simple => simple_step.max(1),
            Proto::Ll => LL_STEP_BYTES,
            Proto::Ll128 => LL128_STEP_BYTES,
        };
        let times = if proto == Proto::Simple { 3.0 } else { 1.0 };
        Wire { proto, step_bytes, net_overhead: SimTime::from_secs_f64(NET_OVERHEAD_US * times * 1e-6), pcie: None }
    }

    /// Simple, each step one message, no post overhead: the training step's collectives
    /// (`step`), whose buckets the twin has always sent whole.
    pub fn plain() -> Wire {
        Wire { proto: Proto::Simple, step_bytes: u64::MAX, net_overhead: SimTime(0), pcie: None }
    }

    /// Bytes on the wire for `data` bytes.
    pub fn wire_bytes(&self, data: u64) -> u64 {
        match self.proto {
            Proto::Simple => data,
            Proto::Ll => data.div_ceil(4) * 8,
            Proto::Ll128 => data.div_ceil(120) * 128,
        }
    }

    /// When a message of `bytes` on the wire, posted at `now` on a chain of steps (ring,
    /// tree), leaves: after the proxy's post overhead and its GPU↔NIC leg. (The receiving
    /// side's share of the leg is charged here too: on a chain of hops only the sum counts.)
    pub fn start(&self, now: SimTime, bytes: u64) -> Option<SimTime> {
        let d = self.net_overhead.0 + self.leg(bytes).0;
        (d > 0).then_some(SimTime(now.0 + d))
    }

    /// When a point-to-point message posted at `now` leaves: after its GPU↔NIC leg only
    /// (every transfer is posted at once, so the proxy's overhead is on no chain).
    pub fn p2p_start(&self, now: SimTime, bytes: u64) -> Option<SimTime> {
        let d = self.leg(bytes).0;
        (d > 0).then_some(SimTime(now.0 + d))
    }

    fn leg(&self, bytes: u64) -> SimTime {
        self.pcie.map_or(SimTime(0), |l| l.hop_cost(bytes))
    }
}

/// NCCL's latency of one hop inside a node for `algo`/`proto` on `intra` (ring's for the
/// algorithms the twin runs as rings), µs.
pub fn intra_hop_us(intra: HwClass, algo: Algo, proto: Proto) -> f64 {
    let i = if intra == HwClass::Nvlink { 0 } else { 1 };
    INTRA_LAT_US[i][if algo == Algo::Tree { 0 } else { 1 }][p_idx(proto)]
}

/// NCCL's base latency of a collective run with `algo`/`proto`, µs.
pub fn base_us(algo: Algo, proto: Proto) -> f64 {
    BASE_LAT_US[if algo == Algo::Tree { 0 } else { 1 }][p_idx(proto)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_their_flags() {
        let ll = Wire::new(Proto::Ll, SIMPLE_STEP_BYTES);
        assert_eq!(ll.wire_bytes(8), 16);
        assert_eq!(ll.wire_bytes(9), 24);
        let ll128 = Wire::new(Proto::Ll128, SIMPLE_STEP_BYTES);
        assert_eq!(ll128.wire_bytes(120), 128);
        assert_eq!(ll128.wire_bytes(121), 256);
        assert_eq!(LL128_STEP_BYTES, 576_000);
        assert_eq!(ll128.wire_bytes(LL128_STEP_BYTES), 614_400);
        assert_eq!(Wire::new(Proto::Simple, 1 << 20).wire_bytes(12345), 12345);
        assert_eq!(Wire::new(Proto::Simple, 1 << 20).net_overhead, SimTime::from_secs_f64(3e-6));
    }
}
