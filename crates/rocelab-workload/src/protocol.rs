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
/// `hwLatencies[NET]`, µs: [tree, ring][LL, LL128, Simple].
const NET_LAT_US: [[f64; 3]; 2] = [[5.0, 8.5, 14.0], [2.7, 4.0, 14.0]];
/// At most this many messages posted ahead of a connection's window: `NCCL_STEPS` (8) slots
/// of a connection's FIFO, less the ring's window of 3.
const NCCL_STEPS_AHEAD: u32 = 8 - 3;
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
    /// Messages a connection may post beyond its window while earlier ones wait out their post
    /// delay (a delay does not hold the NIC; NCCL keeps up to `NCCL_STEPS` = 8 steps of a
    /// connection in flight): 0 unless NCCL's hop latency is charged ([`Wire::with_nccl_net_hop`]).
    pub ahead: u32,
    /// The most a channel's GPU side streams, data bytes/s: NCCL's model's bandwidth for the
    /// pick shared over the channels (its per-channel LL/LL128/tree caps), where NCCL's costs
    /// are charged; `None`: the links' rates alone. The tree's leaves release each chunk at it.
    pub channel_bytes_per_s: Option<f64>,
    /// Whether `net_overhead` is NCCL's whole hop latency less what the twin simulates
    /// ([`Wire::with_nccl_net_hop`]) rather than the proxy's post overhead: then broadcast's
    /// pipeline and the point-to-point sends pay it per hop too.
    pub nccl_hop: bool,
    /// The rate a connection's messages leave its NIC at, bytes/s, where NCCL's hop latency is
    /// charged (0 elsewhere): a pipeline that keeps several chunks in flight to cover the wait
    /// sends them one after the other at it, as an RC QP executes its work requests in order.
    pub nic_bytes_per_s: f64,
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
        Wire {
            proto,
            step_bytes,
            net_overhead: SimTime::from_secs_f64(NET_OVERHEAD_US * times * 1e-6),
            pcie: None,
            ahead: 0,
            channel_bytes_per_s: None,
            nccl_hop: false,
            nic_bytes_per_s: 0.0,
        }
    }

    /// Simple, each step one message, no post overhead: the training step's collectives
    /// (`step`), whose buckets the twin has always sent whole.
    pub fn plain() -> Wire {
        Wire {
            proto: Proto::Simple,
            step_bytes: u64::MAX,
            net_overhead: SimTime(0),
            pcie: None,
            ahead: 0,
            channel_bytes_per_s: None,
            nccl_hop: false,
            nic_bytes_per_s: 0.0,
        }
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

    /// The least time between a chunk's delivery and what a chain of steps does in answer:
    /// the next hop's post overhead over the network (`start` of an empty message), or the
    /// intra-node latency `local` for a hop inside a node. Zero when the wire posts at once
    /// (a partitioned run then cannot take the chain: `Workload::reaction_delay`).
    pub fn reaction_delay(&self, local: Option<SimTime>) -> SimTime {
        let net = self.start(SimTime(0), 0).unwrap_or(SimTime(0));
        local.map_or(net, |l| net.min(l))
    }

    /// When a point-to-point message posted at `now` leaves: after its GPU↔NIC leg (every
    /// transfer is posted at once, so the proxy's post overhead is on no chain), and where
    /// NCCL's hop latency is charged, after the rest of that hop's latency, once.
    pub fn p2p_start(&self, now: SimTime, bytes: u64) -> Option<SimTime> {
        let d = self.leg(bytes).0 + if self.nccl_hop { self.net_overhead.0 } else { 0 };
        (d > 0).then_some(SimTime(now.0 + d))
    }

    /// The wire with NCCL's own latency for a hop between nodes (`hwLatencies[NET]` of `algo`
    /// and the protocol, the tree's where every node has one rank, as NCCL's model takes it):
    /// that figure is a small message's whole hop, NIC to NIC, as NCCL calibrated it; the twin
    /// simulates the fabric and charges the PCIe leg itself, so what it adds before the send is
    /// the rest: the figure less the leg's DMA latency and `fabric` (the shortest NIC-to-NIC
    /// path's own latency), never less than the proxy's post overhead. A longer or loaded path
    /// adds its own time on top, as it would to NCCL's. The delay is latency, not work: a
    /// connection posts as many more messages ahead as a step of the wire takes to cover it at
    /// the NIC's `nic_bytes_per_s` (at most `NCCL_STEPS` in flight, as NCCL has them), so a
    /// large buffer keeps its bandwidth.
    pub fn with_nccl_net_hop(self, algo: Algo, one_rank_per_node: bool, fabric: SimTime, nic_bytes_per_s: f64) -> Wire {
        let a = if algo == Algo::Tree || one_rank_per_node { 0 } else { 1 };
        let hop = SimTime::from_secs_f64(NET_LAT_US[a][p_idx(self.proto)] * 1e-6);
        let known = self.pcie.map_or(0, |l| l.send_latency.0 + l.recv_latency.0) + fabric.0;
        let delay = SimTime(hop.0.saturating_sub(known).max(self.net_overhead.0));
        let step_ps = self.wire_bytes(self.step_bytes) as f64 / nic_bytes_per_s.max(1.0) * 1e12;
        let ahead = (delay.0 as f64 / step_ps.max(1.0)).ceil().min(NCCL_STEPS_AHEAD as f64) as u32;
        Wire { net_overhead: delay, ahead, nccl_hop: true, nic_bytes_per_s, ..self }
    }

    /// When a message of `bytes` on the wire, one of a connection's chunks kept in flight to
    /// cover NCCL's hop latency, leaves: after its wait ([`Wire::start`]) and once the
    /// connection's previous chunk has left the NIC (`free`, moved on to when this one has).
    pub fn start_in_order(&self, now: SimTime, bytes: u64, free: &mut SimTime) -> Option<SimTime> {
        let at = self.start(now, bytes).unwrap_or(now).max(*free);
        let on_wire = SimTime::from_secs_f64(bytes as f64 / self.nic_bytes_per_s.max(1.0));
        *free = SimTime(at.0 + on_wire.0);
        (at > now).then_some(at)
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
    fn nccls_hop_latency_is_charged_less_what_the_twin_simulates() {
        let leg = rocelab_model::pcie::PcieConfig::default().resolve().unwrap();
        let wire = |proto| Wire { pcie: Some(leg), ..Wire::new(proto, SIMPLE_STEP_BYTES) };
        let fabric = SimTime::from_secs_f64(30e-9);
        let us = |w: Wire| w.net_overhead.0 as f64 * 1e-6;
        // Tree/LL128: 8.5 µs, less the leg's 1.5 µs of DMA and 30 ns of cable: 6.97 µs.
        let t = wire(Proto::Ll128).with_nccl_net_hop(Algo::Tree, false, fabric, 50e9);
        assert!((us(t) - 6.97).abs() < 1e-6, "{}", us(t));
        // One step of LL128 lines (600 KiB) takes 12.3 µs at 50 GB/s: one more in flight covers it.
        assert_eq!(t.ahead, 1);
        // Ring/Simple: 14 − 1.53 = 12.47 µs; a 512 KiB step takes 10.5 µs: two more.
        let r = wire(Proto::Simple).with_nccl_net_hop(Algo::Ring, false, fabric, 50e9);
        assert!((us(r) - 12.47).abs() < 1e-6 && r.ahead == 2, "{} {}", us(r), r.ahead);
        // With one rank per node the ring's hop is the tree's (LL: 5.0 µs, not 2.7).
        let one = wire(Proto::Ll).with_nccl_net_hop(Algo::Ring, true, fabric, 50e9);
        assert!((us(one) - 3.47).abs() < 1e-6, "{}", us(one));
        // A fabric slower than NCCL's figure leaves only the proxy's post overhead (3 µs with Simple).
        let slow = wire(Proto::Simple).with_nccl_net_hop(Algo::Ring, false, SimTime::from_us(20), 50e9);
        assert_eq!(slow.net_overhead, SimTime::from_us(3));
        // Never more than NCCL_STEPS in flight, however fast the NIC empties a step.
        assert_eq!(wire(Proto::Ll).with_nccl_net_hop(Algo::Tree, false, fabric, 1e15).ahead, NCCL_STEPS_AHEAD);
    }

    #[test]
    fn chunks_kept_in_flight_to_cover_the_hop_leave_one_after_the_other() {
        let leg = rocelab_model::pcie::PcieConfig::default().resolve().unwrap();
        let w = Wire { pcie: Some(leg), ..Wire::new(Proto::Simple, SIMPLE_STEP_BYTES) }.with_nccl_net_hop(
            Algo::Ring,
            false,
            SimTime::ZERO,
            50e9,
        );
        // Ring/Simple: 14 µs less the leg's 1.5 µs wait; the leg's 1.5 µs, then the wire.
        let mut free = SimTime::ZERO;
        let b = 512u64 << 10;
        let first = w.start_in_order(SimTime::ZERO, b, &mut free).unwrap();
        assert_eq!(first, SimTime::from_us(14));
        // 512 KiB at 50 GB/s = 10.49 µs on the NIC: a second chunk posted at once waits for it.
        let second = w.start_in_order(SimTime::ZERO, b, &mut free).unwrap();
        assert_eq!(second.0 - first.0, SimTime::from_secs_f64(b as f64 / 50e9).0);
        // One posted long after leaves after its own wait.
        let later = SimTime::from_us(100);
        assert_eq!(w.start_in_order(later, b, &mut free), Some(SimTime::from_us(114)));
    }

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
