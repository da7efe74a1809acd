//! The InfiniBand link layer (`[fabric] link_layer = "infiniband"`): credit-based flow control
//! per virtual lane, VL arbitration, and IB routing (static by destination LID, or adaptive).
//!
//! * **Credits.** Every port holds, per VL, the bytes of receive buffer its peer has
//!   advertised and it has not used (`Port::credits`, initially the peer's `vl_buffer_bytes`).
//!   A VL may send its head packet only when the credits cover it; sending spends them. The
//!   receiver frees the bytes when the packet leaves its input buffer — at a switch when the
//!   packet leaves on its egress port, at an HCA when the host takes it — and the credits
//!   reach the sender one propagation delay later (`Ev::CreditArrive`). A receiver can
//!   therefore never overflow: no drops, no pause frames, no headroom.
//! * **VL arbitration** (IBTA Vol. 1 §7.6.9): a high- and a low-priority table of (VL, weight
//!   in 64-byte units) entries served weighted round-robin; the high table goes first, but
//!   after `limit_of_high_priority` × 4096 bytes of it a waiting low-priority VL gets a packet.
//! * **Routing.** Static: each switch sends everything for a destination LID through the same
//!   minimal next hop, the LID modulo the number of candidates (D-mod-k, what OpenSM's ftree
//!   and updn engines give a fat tree). Adaptive: per packet, the minimal next hop with the
//!   fewest bytes queued, ties to the static choice (NVIDIA Quantum's adaptive routing).
//!   With adaptive routing receivers accept packets out of order (`Qp::ooo`), as RC over
//!   adaptive routing requires; with static routing a gap is a loss (NAK, go-back-N).

use super::*;
use crate::rng::mix64;
use rocelab_model::config::IbRoutingKind;
use rocelab_model::infiniband::{self as ibm, Ib};

/// Bytes every packet kind carries besides its payload, per link layer (and, for RoCE, per
/// the simulator whose count a run reproduces: `[simulation] header_overhead`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overheads {
    pub data: u32,
    pub ack: u32,
    pub cnp: u32,
    /// The smallest ACK frame (ns-3 pads its ACKs to 60 B).
    pub ack_floor: u32,
    /// A timestamp header on data and ACKs of an RTT-timed QP (ns-3's TIMELY carries 8 B).
    pub ts: u32,
}

impl Overheads {
    pub const ROCE: Overheads = Overheads { data: DATA_OVERHEAD, ack: ACK_WIRE, cnp: CNP_WIRE, ack_floor: 0, ts: 0 };
    pub const INFINIBAND: Overheads =
        Overheads { data: ibm::IB_DATA_OVERHEAD, ack: ibm::IB_ACK_WIRE, cnp: ibm::IB_CNP_WIRE, ack_floor: 0, ts: 0 };
    /// HPCC's ns-3 model (`custom-header.cc`, `rdma-hw.cc`): 14 B link header + IPv4 20 + UDP
    /// 8 + sequence 4 + priority group 2 on data; ACKs of 14 + 20 + 12 B padded to 60; CNPs of
    /// 14 + 20 + 8. No preamble, gap or FCS (its point-to-point links serialize the packet).
    pub const NS3: Overheads = Overheads { data: 48, ack: 46, cnp: 42, ack_floor: 60, ts: 8 };
}

/// A port's InfiniBand state, beside its `Port` (only on IB fabrics).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IbPort {
    /// Bytes of receive buffer per VL the peer has advertised and this port has not yet used.
    pub credits: [u32; 8],
    /// Credits the peer has freed that are still on their way back, per VL.
    pub credit_in_flight: [u32; 8],
    /// The VL arbiter's position in its tables.
    arb: ArbState,
}

impl IbPort {
    pub fn new(credits: [u32; 8]) -> IbPort {
        IbPort { credits, credit_in_flight: [0; 8], arb: ArbState::default() }
    }
}

/// Where a port's VL arbiter stands in its two tables.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ArbState {
    hi: u8,
    lo: u8,
    /// Bytes left in the current entry's weight (≤ 0: move on).
    hi_left: i32,
    lo_left: i32,
    /// High-priority bytes sent since a low-priority VL last had its chance.
    hi_sent: u32,
    /// The last pick came from the high-priority table.
    from_high: bool,
}

/// The engine's InfiniBand settings.
pub(crate) struct IbState {
    /// (VL, weight in bytes) entries with a weight > 0.
    high: Vec<(u8, i32)>,
    low: Vec<(u8, i32)>,
    /// `None`: the high table is never cut short.
    high_limit: Option<u64>,
    pub adaptive: bool,
    /// Per node: the host's LID (its rank among hosts); switches `NONE`.
    lid: Vec<u32>,
    /// Per node: the static routing's divisor of the LID at a switch (D-mod-k: a switch of
    /// tier l takes up-port (LID / k₀·…·kₗ₋₁) mod kₗ, kᵢ the up fan-out of tier i), so each
    /// tier spreads destinations over its own up-ports instead of repeating the tier below's
    /// choice. 1 at leaves and on hosts.
    lid_div: Vec<u64>,
    pub initial_credits: [u32; 8],
    /// Congestion control (`None`: off).
    pub cc: Option<ibm::IbCc>,
}

impl IbState {
    pub fn new(m: &Model, ib: &Ib) -> Result<IbState, Vec<Diagnostic>> {
        // The engine keeps eight queues per port: VLs 8–14 (15-VL ports) are refused.
        let mut errs = Vec::new();
        for c in &m.qos.classes {
            let vl = ib.vl_of_sl(c.priority);
            if vl >= 8 {
                errs.push(Diagnostic::new(
                    "infiniband.sl_to_vl",
                    format!("class `{}` (SL {}) maps to VL {vl}; the engine models VL0–VL7", c.name, c.priority),
                    "map the SLs in use to VLs 0..=7",
                ));
            } else if vl >= ib.data_vls {
                // A VL the ports do not operate has no buffer and never gets a credit: its
                // packets would wait forever (a switch discards them; lint IBA001).
                errs.push(Diagnostic::new(
                    "infiniband.sl_to_vl",
                    format!(
                        "class `{}` (SL {}) maps to VL {vl}, but the ports operate {} data VLs (VL0–VL{})",
                        c.name,
                        c.priority,
                        ib.data_vls,
                        ib.data_vls - 1
                    ),
                    "map the SLs in use below `data_vls`, or raise `infiniband.data_vls`",
                ));
            }
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        let to_bytes = |t: &[(u8, u16)]| -> Vec<(u8, i32)> {
            t.iter().filter(|e| e.1 > 0 && e.0 < 8).map(|&(vl, w)| (vl, w as i32 * 64)).collect()
        };
        let mut lid = vec![NONE; m.nodes.len()];
        for (k, h) in m.hosts().enumerate() {
            lid[h.idx()] = k as u32;
        }
        let vl_buffer = ib.vl_buffer_bytes.min(u32::MAX as u64) as u32;
        let lid_div = lid_divisors(m);
        let mut initial_credits = [0u32; 8];
        for (vl, c) in initial_credits.iter_mut().enumerate() {
            if vl < ib.data_vls as usize {
                *c = vl_buffer;
            }
        }
        Ok(IbState {
            high: to_bytes(&ib.vl_arb_high),
            low: to_bytes(&ib.vl_arb_low),
            high_limit: ib.high_limit_bytes(),
            adaptive: ib.routing == IbRoutingKind::Adaptive,
            lid,
            lid_div,
            initial_credits,
            cc: ib.cc.clone(),
        })
    }
}

/// Per node, the product of the up fan-outs of the switch tiers below it (see
/// `IbState::lid_div`); a tier's up fan-out is the most ports any of its switches has toward
/// a higher tier (they are all alike in a fat tree).
fn lid_divisors(m: &Model) -> Vec<u64> {
    use rocelab_model::topology::Tier;
    let tiers = [Tier::Leaf, Tier::Spine, Tier::Core];
    let mut up = [1u64; 3];
    for n in m.switches().map(|id| m.node(id)) {
        if let Some(t) = tiers.iter().position(|&t| t == n.tier) {
            let ups = n.ports().filter(|&p| m.node(m.port(m.port(p).peer).node).tier > n.tier).count() as u64;
            up[t] = up[t].max(ups);
        }
    }
    m.nodes
        .iter()
        .map(|n| tiers.iter().position(|&t| t == n.tier).map_or(1, |t| up[..t].iter().product::<u64>()))
        .collect()
}

impl Sim<'_> {
    /// A VL queue may send: it holds a packet and the credits cover its head.
    #[inline]
    fn vl_ready(&self, port: u32, vl: u8) -> bool {
        let p = &self.ports[port as usize];
        let v = vl as usize & 7;
        if p.nonempty & (1 << v) == 0 {
            return false;
        }
        let head = p.queues[v].ring.front().expect("nonempty");
        self.ib_ports[port as usize].credits[v] >= self.pkts.get(head).wire_bytes as u32
    }

    /// One weighted round-robin step over a table: the VL to send, or `None` if no entry's VL
    /// is ready. Moves past entries whose weight is spent or whose VL cannot send; an entry
    /// entered afresh starts with its full weight.
    fn arb_table(&mut self, port: u32, high: bool) -> Option<u8> {
        let ib = self.link.ib();
        let table = if high { &ib.high } else { &ib.low };
        let n = table.len();
        if n == 0 || !table.iter().any(|&(vl, _)| self.vl_ready(port, vl)) {
            return None;
        }
        let a = self.ib_ports[port as usize].arb;
        let (mut idx, mut left) = if high { (a.hi as usize % n, a.hi_left) } else { (a.lo as usize % n, a.lo_left) };
        // A ready VL with a weight exists: within one lap past the current entry it is
        // entered afresh.
        for _ in 0..=n {
            let vl = table[idx].0;
            if left > 0 && self.vl_ready(port, vl) {
                let st = &mut self.ib_ports[port as usize].arb;
                if high {
                    (st.hi, st.hi_left) = (idx as u8, left);
                } else {
                    (st.lo, st.lo_left) = (idx as u8, left);
                }
                st.from_high = high;
                return Some(vl);
            }
            idx = (idx + 1) % n;
            left = table[idx].1;
        }
        None
    }

    /// The VL arbiter: the high-priority table first, unless it has sent its limit while a
    /// low-priority VL waits; then the low-priority table.
    pub(super) fn pick_vl(&mut self, port: u32) -> Option<usize> {
        let limit = self.link.ib().high_limit;
        let hi_sent = self.ib_ports[port as usize].arb.hi_sent as u64;
        let low_first = limit.is_some_and(|l| hi_sent > l);
        if !low_first {
            if let Some(vl) = self.arb_table(port, true) {
                return Some(vl as usize);
            }
        }
        if let Some(vl) = self.arb_table(port, false) {
            self.ib_ports[port as usize].arb.hi_sent = 0;
            return Some(vl as usize);
        }
        if low_first {
            // No low-priority VL can send after all: the high table goes on.
            self.ib_ports[port as usize].arb.hi_sent = 0;
            return self.arb_table(port, true).map(|v| v as usize);
        }
        None
    }

    /// Charges the packet the arbiter just picked against its entry's weight (and the high
    /// table's limit).
    pub(super) fn arb_sent(&mut self, port: u32, bytes: u32) {
        let a = &mut self.ib_ports[port as usize].arb;
        if a.from_high {
            a.hi_left -= bytes as i32;
            a.hi_sent = a.hi_sent.saturating_add(bytes);
        } else {
            a.lo_left -= bytes as i32;
        }
    }

    /// Spends the credits of a packet going onto `port`'s wire.
    #[inline]
    pub(super) fn spend_credits(&mut self, port: u32, vl: u8, bytes: u32) {
        let c = &mut self.ib_ports[port as usize].credits[vl as usize & 7];
        debug_assert!(*c >= bytes, "sent without credits");
        *c = c.saturating_sub(bytes);
    }

    /// The receiver on `in_port` freed `bytes` of VL `vl`: the credits travel back to the
    /// sender (the peer port) over the link.
    #[inline]
    pub(super) fn return_credits(&mut self, in_port: u32, vl: u8, bytes: u32) {
        let (peer, delay) = {
            let p = &self.ports[in_port as usize];
            (p.peer, p.delay)
        };
        self.ib_ports[peer as usize].credit_in_flight[vl as usize & 7] += bytes;
        self.q.push(self.now + delay, Ev::CreditArrive { port: peer, vl, bytes });
    }

    pub(super) fn on_credit_arrive(&mut self, port: u32, vl: u8, bytes: u32) {
        let p = &mut self.ib_ports[port as usize];
        p.credit_in_flight[vl as usize & 7] -= bytes;
        p.credits[vl as usize & 7] += bytes;
        self.kick(port);
    }

    /// A packet reaches an HCA: taken at once (its credits go back), or, while the host does
    /// not drain, held in the VL's receive buffer — which the credits keep from overflowing.
    pub(super) fn host_arrive_ib(&mut self, nic: u32, pkt: u32) {
        let (kind, size, vl) = {
            let p = self.pkts.get(pkt);
            (p.kind, p.wire_bytes as u32, p.pcp)
        };
        let n = &mut self.host.nics[nic as usize];
        if n.stalled && kind == Kind::Data {
            n.rx_bytes += size as u64;
            n.rx_q.push_back(pkt);
            return;
        }
        let port = n.port;
        self.return_credits(port, vl, size);
        self.host_receive(nic, pkt);
    }

    /// IB congestion control at a switch: a data packet leaving a VL queue that held more than
    /// the threshold carries FECN (counted as an ECN mark of the queue) — if the port is a root
    /// of congestion. A port whose queue grows because it lacks credits is a victim of
    /// congestion further on and does not mark (the annex's victim mask left clear): here, a
    /// port whose credits would not cover another packet of this size after this one.
    #[inline]
    pub(super) fn ib_mark_fecn(&mut self, port: u32, vl: usize, pkt: u32, qlen: u64) {
        let Some(cc) = self.link.ib_cc() else { return };
        let (kind, size) = {
            let p = self.pkts.get(pkt);
            (p.kind, p.wire_bytes as u32)
        };
        let victim = self.ib_ports[port as usize].credits[vl] < 2 * size;
        if qlen > cc.marking_threshold_bytes && kind == Kind::Data && !victim {
            self.pkts.get_mut(pkt).ecn = CE;
            self.ports[port as usize].st.ecn_marked[vl] += 1;
            self.notify(Observed::EcnMark { time: self.now, port: PortId(port), queue: vl as u8 });
        }
    }

    /// A packet arrives at a switch of an InfiniBand fabric: routed, held in the input
    /// port's VL buffer (which the sender's credits guarantee has room), queued at egress.
    pub(super) fn switch_arrive_ib(&mut self, sw: u32, in_port: u32, pkt: u32) {
        let (class, dst, size) = {
            let p = self.pkts.get(pkt);
            (p.class, p.dst, p.wire_bytes as u64)
        };
        let vl = self.queues.classes[class as usize].queue;
        let out = self.ib_choose(sw, dst);
        if out == NONE {
            self.return_credits(in_port, vl, size as u32);
            self.drop_pkt(in_port, vl, pkt, DropReason::LinkDown);
            return;
        }
        self.mmu.take_shared(sw, &mut self.ports[in_port as usize].pg[vl as usize], size);
        self.enqueue_egress(pkt, in_port, vl, out, vl, size);
        self.switch_try_tx(out);
    }

    /// The egress port for `dst` at switch `sw`: static by destination LID, or adaptive (the
    /// least-loaded minimal next hop). After a link change, a choice the switch knows to be
    /// unusable falls back to the resilient ECMP choice.
    fn ib_choose(&self, sw: u32, dst: u32) -> u32 {
        let ib = self.link.ib();
        let r = &self.router;
        let cands = r.candidates(sw, dst);
        if cands.is_empty() {
            return NONE;
        }
        let node = r.switch_node(sw);
        let lid = ib.lid[dst as usize] as u64;
        let n = cands.len();
        let base = (lid / ib.lid_div[node as usize] % n as u64) as usize;
        // As `Router::choose`: with no link changed since the start every switch forwards by
        // the full table, else by what it has learned.
        let (fresh, view) = (r.pristine(), r.view(sw));
        let usable = |c: PortId| if fresh { r.own_and_routed(c, node) } else { r.usable(view, c, node, dst) };
        if ib.adaptive && n > 1 {
            let best = r.least_loaded(sw, cands, base, dst, |c| self.queued_bytes(c));
            if best != NONE {
                return best;
            }
        } else if usable(cands[base]) {
            return cands[base].0;
        }
        r.rehash(view, cands, node, dst, mix64(lid))
    }
}

#[cfg(test)]
mod tests {
    //! Credits, VL arbitration and IB routing against numbers worked out by hand.
    use super::super::test_support::{enqueue, model};
    use super::*;

    /// One switch and `n` hosts at 100 Gb/s, 2 m cables (10 ns), IB with 64 KiB per VL,
    /// `extra` added at the end.
    fn star(n: usize, extra: &str) -> Model {
        super::super::test_support::star(n, "link_layer = \"infiniband\"", extra)
    }

    fn host_port(s: &Sim, name: &str) -> u32 {
        let h = s.m.node_by_name(name).unwrap();
        s.m.node(h).first_port
    }

    #[test]
    fn ib_headers_are_26_bytes_and_an_ack_30() {
        assert_eq!(Overheads::INFINIBAND, Overheads { data: 26, ack: 30, cnp: 42, ack_floor: 0, ts: 0 });
        assert_eq!(Overheads::ROCE, Overheads { data: 82, ack: 86, cnp: 98, ack_floor: 0, ts: 0 });
    }

    /// The issue's credit test: h1 stops draining at 20 µs. Its switch port may send one
    /// credit window (64 KiB) more, the switch's input buffer from h0 then fills (64 KiB more),
    /// and h0 stops: within two windows and what was in flight, with no drop and no pause
    /// frame. Throughput resumes when h1 drains again at 60 µs.
    #[test]
    fn a_receiver_that_stops_returning_credits_stops_its_sender_within_one_window_per_hop() {
        let m = star(
            2,
            r#"[[traffic]]
pattern = "flow"
src = "h0"
dst = "h1"
size_bytes = 2000000
[[fault]]
kind = "host-stall"
at_us = 20
a = "h1"
[[fault]]
kind = "host-resume"
at_us = 60
a = "h1"
"#,
        );
        let mut s = crate::build(&m, SimOptions::default()).unwrap();
        let (h0, h1) = (host_port(&s, "h0"), host_port(&s, "h1"));
        let sw_to_h1 = s.ports[h1 as usize].peer;
        s.run_until(SimTime::from_us(20));
        s.check_invariants().unwrap();
        let at_stall = s.ports[h0 as usize].tx_bytes;
        // Before the stall h0 sends back to back at line rate: 100 Gb/s for 20 µs is 250,000 B,
        // 60.65 packets of 4,122 B (4,096 + 26 B of IB headers); a port counts a packet when
        // it starts, so 61 have.
        assert_eq!(at_stall, 61 * 4_122, "h0 sent {at_stall} B in 20 µs");
        s.run_until(SimTime::from_us(40));
        s.check_invariants().unwrap();
        let t40 = s.ports[h0 as usize].tx_bytes;
        s.run_until(SimTime::from_us(59));
        s.check_invariants().unwrap();
        let t59 = s.ports[h0 as usize].tx_bytes;
        assert_eq!(t40, t59, "h0 must be stopped: it sent {} B between 40 and 59 µs", t59 - t40);
        // What h0 could still send after the stall: at most h1's window at the switch port
        // and the switch's input window from h0 (64 KiB each). A window of 65,536 B holds 15
        // whole packets of 4,122 B; both buffers end up holding exactly that, and h0 sent
        // what they hold less the packets already in flight when h1 stopped.
        let window = 65_536u64;
        let full = 15 * 4_122;
        let after = t59 - at_stall;
        assert!(after <= 2 * window, "h0 sent {after} B after the stall; two windows are {}", 2 * window);
        let sw_from_h0 = s.ports[h0 as usize].peer;
        let vl = s.queues.classes[m.qos.rdma_class()].queue as usize;
        assert_eq!(s.host.nics[s.ports[h1 as usize].nic as usize].rx_bytes, full, "h1 holds a full window");
        assert_eq!(s.ports[sw_from_h0 as usize].pg[vl].ing, full, "the switch's input buffer from h0 is full");
        assert!(after + 3 * 4_122 >= 2 * full, "h0 stopped early: {after} B after the stall");
        assert!((s.ib_ports[sw_to_h1 as usize].credits[vl] as u64) < 4_122, "the switch port to h1 is out of credits");
        // Lossless with no pause: no drop, no PFC frame.
        assert_eq!(s.stats.dropped, 0);
        assert_eq!(s.ports.iter().map(|p| p.st.pfc_tx.iter().sum::<u64>()).sum::<u64>(), 0);
        // Resumed: the rest goes at line rate and everything arrives.
        s.run_until(SimTime::from_us(70));
        let t70 = s.ports[h0 as usize].tx_bytes;
        assert!(t70 - t59 > 110_000, "after the resume h0 sent {} B in 10 µs", t70 - t59);
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert!(s.all_done());
        assert_eq!(s.stats.dropped, 0);
        assert_eq!(s.stats.retransmitted, 0);
        // Every credit is home or on its way (the last ACK's credits may still travel when
        // the run ends).
        for p in &s.ib_ports {
            let back: Vec<u32> = (0..8).map(|v| p.credits[v] + p.credit_in_flight[v]).collect();
            assert_eq!(back, s.link.ib().initial_credits.to_vec());
        }
    }

    /// 4 leaves × 4 hosts, 4 spines, 100G everywhere, 2 m host and 10 m fabric cables, IB with
    /// `routing`; the transpose permutation: host j of leaf L sends `size` bytes to host L of
    /// leaf j (j ≠ L). Destinations from one leaf then share their LID modulo 4, so static
    /// D-mod-k routing puts a leaf's three flows on one of its four uplinks.
    fn transpose(routing: &str, size: u64) -> Model {
        let traffic = super::super::test_support::transpose_traffic(size);
        let text = format!(
            r#"[fabric]
name = "transpose"
link_layer = "infiniband"
[infiniband]
routing = "{routing}"
[topology.leaf_spine]
leaves = 4
spines = 4
hosts_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 2 }}
fabric_link = {{ speed_gbps = 100, length_m = 10 }}
{traffic}"#
        );
        model("transpose.toml", &text)
    }

    /// (largest / mean bytes over the leaf → spine links, slowest flow's completion time in µs,
    /// packets received out of order).
    fn run_transpose(routing: &str) -> (f64, f64, u64) {
        let m = transpose(routing, 1_000_000);
        let mut s = crate::build(&m, SimOptions::default()).unwrap();
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert!(s.all_done());
        assert_eq!((s.stats.dropped, s.stats.retransmitted), (0, 0), "lossless, nothing resent");
        let up: Vec<u64> = s
            .ports
            .iter()
            .filter(|p| {
                let (a, b) = (&s.m.nodes[p.node as usize], &s.m.nodes[s.ports[p.peer as usize].node as usize]);
                a.tier == rocelab_model::topology::Tier::Leaf && b.tier == rocelab_model::topology::Tier::Spine
            })
            .map(|p| p.tx_bytes)
            .collect();
        assert_eq!(up.len(), 16);
        let max = *up.iter().max().unwrap() as f64;
        let mean = up.iter().sum::<u64>() as f64 / up.len() as f64;
        let fct = s.host.qps.iter().map(|q| q.finish.unwrap().0).max().unwrap() as f64 / 1e6;
        let ooo = s.host.qps.iter().map(|q| q.st.out_of_sequence).sum();
        // The QPs' own counts and the report's metric (from the run-wide counter) say the
        // same; the metric is absent when zero.
        let r = crate::RunReport::from_sim(&s);
        let metric = r.metrics.iter().find(|m| m.name == "rocelab_out_of_order_packets_total").map(|m| m.value);
        assert_eq!(metric, (ooo > 0).then_some(ooo as f64));
        (max / mean, fct, ooo)
    }

    /// The issue's adaptive-routing test: static routing piles each leaf's three flows onto
    /// one uplink (the hottest carries 4× the mean); adaptive routing spreads them per packet,
    /// so the hottest uplink carries little more than the mean and the slowest flow finishes
    /// about 3× sooner. Reordered packets appear only with adaptive routing, and are absorbed.
    #[test]
    fn adaptive_routing_spreads_a_permutation_that_collides_under_static_routing() {
        let (imb_static, fct_static, ooo_static) = run_transpose("static");
        let (imb_ar, fct_ar, ooo_ar) = run_transpose("adaptive");
        println!(
            "static: max/mean uplink bytes {imb_static:.3}, max FCT {fct_static:.1} µs; adaptive: {imb_ar:.3}, \
             {fct_ar:.1} µs, {ooo_ar} packets out of order; FCT ratio {:.2}",
            fct_static / fct_ar
        );
        // Static: 3 flows on one uplink of 4 per leaf, nothing on the other three.
        assert!((imb_static - 4.0).abs() < 0.01, "static imbalance {imb_static}");
        assert_eq!(ooo_static, 0, "static routing keeps every flow in order");
        assert!(imb_ar < 1.5, "adaptive imbalance {imb_ar}");
        // 1 MB at a third of 100G against at full rate: about 3×.
        assert!(fct_static / fct_ar > 2.5, "FCT static {fct_static} µs vs adaptive {fct_ar} µs");
        // Physics: a flow cannot beat its 100G link: 1 MB in 244 packets of 4,122 B is 80.5 µs.
        assert!(fct_ar > 80.4, "{fct_ar} µs");
        assert!(ooo_ar > 0, "per-packet spreading reorders some packets");
    }

    /// Static routing on three tiers (a k = 4 fat tree: 2 up-ports per edge and per
    /// aggregation switch, 4 cores): each host sends to the same host of the next pod, so the
    /// 16 destination LIDs cover every residue. D-mod-k takes edge up-port LID mod 2 and
    /// aggregation up-port (LID / 2) mod 2: every core carries 4 flows. (Taking LID mod 2 at
    /// both tiers would reach only the 2 cores on the diagonal, each with 8 flows.)
    #[test]
    fn static_routing_on_three_tiers_spreads_destinations_over_every_core() {
        let mut text = String::from(
            "[fabric]\nname = \"ft4-ib\"\nlink_layer = \"infiniband\"\n[infiniband]\nrouting = \"static\"\n\
             [topology.fat_tree]\nk = 4\nlink = { speed_gbps = 100, length_m = 10 }\n",
        );
        for h in 0..16 {
            text += &format!(
                "[[traffic]]\npattern = \"flow\"\nsrc = \"host{h}\"\ndst = \"host{}\"\nsize_bytes = 100000\n",
                (h + 4) % 16
            );
        }
        let m = model("ft4-ib.toml", &text);
        let mut s = crate::build(&m, SimOptions::default()).unwrap();
        s.run(&mut |_| {});
        assert!(s.all_done());
        let per_core: Vec<u64> =
            s.m.nodes
                .iter()
                .filter(|n| n.tier == rocelab_model::topology::Tier::Core)
                .map(|n| n.ports().map(|p| s.ports[p.idx()].tx_bytes).sum())
                .collect();
        assert_eq!(per_core.len(), 4);
        let mean = per_core.iter().sum::<u64>() / 4;
        assert!(per_core.iter().all(|&b| b == mean), "every core carries 4 of the 16 flows: {per_core:?}");
    }

    /// A class on a VL the ports do not operate would wait for credits forever: refused.
    #[test]
    fn a_class_on_a_vl_the_ports_do_not_operate_is_refused() {
        let m = star(
            2,
            "[infiniband]\ndata_vls = 4\nsl_to_vl = [0, 1, 2, 5, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]\n\
             [[traffic]]\npattern = \"flow\"\nsrc = \"h0\"\ndst = \"h1\"\nsize_bytes = 10000\n",
        );
        let errs = crate::build(&m, SimOptions::default()).err().expect("refused");
        assert!(errs.iter().any(|d| d.path == "infiniband.sl_to_vl" && d.message.contains("maps to VL 5")), "{errs:?}");
    }

    /// An HCA's ACK waiting for credits on its VL does not hold an ACK of another VL behind
    /// it: each goes on its own VL, as the HCA's per-VL send queues do.
    #[test]
    fn an_ack_short_of_credits_does_not_block_an_ack_on_another_vl() {
        let m = star(2, "[[traffic]]\npattern = \"flow\"\nsrc = \"h0\"\ndst = \"h1\"\nsize_bytes = 100000\n");
        let mut s = crate::build(&m, SimOptions::default()).unwrap();
        let port = host_port(&s, "h1");
        let nic = s.host.qps[0].dst_nic;
        assert_eq!(s.host.nics[nic as usize].port, port);
        let class = s.host.qps[0].class;
        let ack = s.hdr.ack;
        let blocked = s.ctrl_packet(0, Kind::Ack, 1, class, 3, ack);
        let free = s.ctrl_packet(0, Kind::Ack, 2, class, 0, ack);
        let (b, f) = (s.pkts.alloc(blocked), s.pkts.alloc(free));
        s.host.nics[nic as usize].ack_q.extend([b, f]);
        s.ib_ports[port as usize].credits[3] = 0;
        s.nic_try_send(nic);
        // The VL 0 ACK went; the VL 3 one waits for its credits.
        assert_eq!(s.host.nics[nic as usize].ack_q.iter().copied().collect::<Vec<_>>(), [b]);
        assert_eq!(s.ports[port as usize].tx_bytes, ack as u64);
    }

    /// The VLs the arbiter picks `n` times over backlogged queues (heads stay queued).
    fn picks(s: &mut Sim, port: u32, n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                let vl = s.pick_vl(port).expect("a VL is ready");
                let head = s.ports[port as usize].queues[vl].ring.front().unwrap();
                let b = s.pkts.get(head).wire_bytes as u32;
                s.arb_sent(port, b);
                vl
            })
            .collect()
    }

    fn arb_star(tables: &str) -> Model {
        star(2, &format!("[infiniband]\n{tables}\n[qos.pfc_watchdog]\nenabled = false\n"))
    }

    #[test]
    fn vl_arbitration_high_table_first_within_its_limit_then_low_by_weight() {
        // Unlimited high priority: VL0 (high) takes every turn while it can send.
        let m = arb_star("vl_arb_high = [{ vl = 0, weight = 4 }]\nvl_arb_low = [{ vl = 1, weight = 4 }]\nlimit_of_high_priority = 255");
        let mut s = super::super::test_support::idle_sim(&m);
        let port = s.ports.iter().position(|p| p.sw != NONE).unwrap() as u32;
        enqueue(&mut s, port, 0, 1_000);
        enqueue(&mut s, port, 1, 1_000);
        assert!(picks(&mut s, port, 50).iter().all(|&v| v == 0));
        // Out of credits on VL0 (its receiver's buffer is full): the low table goes.
        s.ib_ports[port as usize].credits[0] = 999;
        assert!(picks(&mut s, port, 10).iter().all(|&v| v == 1));
        assert_eq!(s.pick_vl(port), Some(1));

        // Limit 0: one high-priority packet, then a low-priority one may go.
        let m = arb_star(
            "vl_arb_high = [{ vl = 0, weight = 4 }]\nvl_arb_low = [{ vl = 1, weight = 4 }]\nlimit_of_high_priority = 0",
        );
        let mut s = super::super::test_support::idle_sim(&m);
        enqueue(&mut s, port, 0, 1_000);
        enqueue(&mut s, port, 1, 1_000);
        assert_eq!(picks(&mut s, port, 6), vec![0, 1, 0, 1, 0, 1]);

        // Limit 1 (4,096 B): 1,000-byte high packets go while fewer than 4,097 B have gone,
        // five of them, then one low-priority packet.
        let m = arb_star("vl_arb_high = [{ vl = 0, weight = 255 }]\nvl_arb_low = [{ vl = 1, weight = 4 }]\nlimit_of_high_priority = 1");
        let mut s = super::super::test_support::idle_sim(&m);
        enqueue(&mut s, port, 0, 1_000);
        enqueue(&mut s, port, 1, 1_000);
        assert_eq!(picks(&mut s, port, 12), vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);

        // Low table, weights 48 and 16 (3,072 B and 1,024 B a turn): bytes 3:1.
        let m = arb_star("vl_arb_high = []\nvl_arb_low = [{ vl = 1, weight = 48 }, { vl = 2, weight = 16 }]");
        let mut s = super::super::test_support::idle_sim(&m);
        enqueue(&mut s, port, 1, 512);
        enqueue(&mut s, port, 2, 512);
        let p = picks(&mut s, port, 4_000);
        let (a, b) = (p.iter().filter(|&&v| v == 1).count(), p.iter().filter(|&&v| v == 2).count());
        assert_eq!((a, b), (3_000, 1_000));
        // A VL in no table is never served.
        enqueue(&mut s, port, 3, 512);
        assert!(picks(&mut s, port, 100).iter().all(|&v| v != 3));
    }

    /// 8-to-1 incast on IB: the receiver's link is the bottleneck; credits back-pressure the
    /// senders hop by hop, so nothing is dropped, no pause frame is sent, every packet is
    /// conserved, and the incast takes what the link's goodput allows.
    #[test]
    fn an_incast_on_ib_loses_nothing_and_finishes_at_the_bottleneck_rate() {
        let m = star(9, "[[traffic]]\npattern = \"incast\"\ndst = \"h0\"\nsenders = 8\nsize_bytes = 1000000\n");
        let mut s =
            crate::build(&m, SimOptions { sample_interval: Some(SimTime::from_us(5)), ..SimOptions::default() })
                .unwrap();
        for k in 1..=20 {
            s.run_until(SimTime::from_us(10 * k));
            s.check_invariants().unwrap_or_else(|e| panic!("{e:#?}"));
            // The switch holds at most one VL buffer per input port (8 senders).
            let sw = &s.mmu.switches[0];
            assert!(sw.used <= 8 * 65_536, "switch holds {} B", sw.used);
        }
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert!(s.all_done());
        let st = &s.stats;
        assert_eq!((st.dropped, st.retransmitted), (0, 0));
        assert_eq!(st.sent, st.delivered, "conservation");
        assert_eq!(s.ports.iter().map(|p| p.st.pfc_tx.iter().sum::<u64>()).sum::<u64>(), 0);
        // 8 MB through one 100G link at 4096/4122 goodput: 643.3 µs at best; within 2 %.
        let bound = 8e6 * 4_122.0 / 4_096.0 * 8.0 / 100e9 * 1e6;
        let end = s.now().as_us_f64();
        assert!(end >= bound && end <= bound * 1.02, "incast took {end} µs, bound {bound} µs");
    }

    /// Two switches joined by a 400G link; h1–h5 on sw0, h0 and h6 on sw1, hosts at 100G. h1–h4
    /// send `size` each to h0 (a 4:1 incast behind sw1), h5 sends `size` to h6 (a victim that
    /// shares only the sw0 → sw1 link and its VL with the incast). `cc`: `[infiniband.cc]` body
    /// or `None`.
    fn victim(cc: Option<&str>, size: u64) -> Model {
        victim_with(cc, size, "")
    }

    /// `victim` with `extra` appended (faults).
    fn victim_with(cc: Option<&str>, size: u64, extra: &str) -> Model {
        let hosts: Vec<String> = (0..7).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
        let mut links: Vec<String> =
            (1..6).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }}")).collect();
        links.push("{ a = \"h0\", b = \"sw1\", speed_gbps = 100, length_m = 2 }".into());
        links.push("{ a = \"h6\", b = \"sw1\", speed_gbps = 100, length_m = 2 }".into());
        links.push("{ a = \"sw0\", b = \"sw1\", speed_gbps = 400, length_m = 10 }".into());
        let mut traffic = String::new();
        for i in 1..5 {
            traffic += &format!("[[traffic]]\npattern = \"flow\"\nsrc = \"h{i}\"\ndst = \"h0\"\nsize_bytes = {size}\n");
        }
        traffic += &format!("[[traffic]]\npattern = \"flow\"\nsrc = \"h5\"\ndst = \"h6\"\nsize_bytes = {size}\n");
        let cc = cc.map_or(String::new(), |c| format!("[infiniband.cc]\n{c}\n"));
        let text = format!(
            r#"[fabric]
name = "victim"
link_layer = "infiniband"
{cc}[switch_models.sw]
preset = "ns3-reference"
ports = 8
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {{ name = "sw1", kind = "switch", model = "sw" }}, {} ]
link = [ {} ]
{traffic}{extra}"#,
            hosts.join(", "),
            links.join(", ")
        );
        model("victim.toml", &text)
    }

    /// (victim's goodput in Gb/s, slowest incast flow's completion in µs, BECNs received).
    fn run_victim(cc: Option<&str>) -> (f64, f64, u64) {
        let size = 4_000_000;
        let m = victim(cc, size);
        let mut s = crate::build(&m, SimOptions::default()).unwrap();
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert!(s.all_done());
        assert_eq!((s.stats.dropped, s.stats.retransmitted), (0, 0));
        let v = s.host.qps.iter().find(|q| s.m.nodes[q.src as usize].name == "h5").unwrap();
        let gbps = size as f64 * 8.0 / v.finish.unwrap().as_secs_f64() / 1e9;
        let incast = s.host.qps.iter().filter(|q| q.dst == v.dst - 6).map(|q| q.finish.unwrap().0).max().unwrap();
        let becn = s.host.qps.iter().map(|q| q.st.cnps).sum();
        (gbps, incast as f64 / 1e6, becn)
    }

    /// Congestion spreading and what IB congestion control does about it. Without CC the
    /// incast's packets wait at sw1 holding the credits of the shared sw0 → sw1 VL, so the
    /// victim, which needs nothing of the congested port, gets only its FIFO share of what the
    /// credits let through. With FECN/BECN and the CCT the incast senders slow down to about
    /// their fair share, sw1's input buffer stops filling, and the victim runs near its line
    /// rate; the incast itself still takes what h0's link allows.
    #[test]
    fn ib_congestion_control_frees_a_victim_of_congestion_spreading() {
        let (v_off, incast_off, becn_off) = run_victim(None);
        let (v_on, incast_on, becn_on) = run_victim(Some("marking_threshold_bytes = 32768"));
        println!(
            "victim {v_off:.1} Gb/s without CC, {v_on:.1} Gb/s with; incast done at {incast_off:.0} / {incast_on:.0} µs; \
             BECNs {becn_off} / {becn_on}"
        );
        assert_eq!(becn_off, 0);
        assert!(becn_on > 0);
        assert!(v_off < 50.0, "without CC the victim should suffer: {v_off} Gb/s");
        assert!(v_on > 1.5 * v_off, "with CC {v_on} Gb/s against {v_off} Gb/s");
        // The incast is bound by h0's link either way: 16 MB at 100G less headers is 1,288 µs.
        let bound = 16e6 * 4_122.0 / 4_096.0 * 8.0 / 100e9 * 1e6;
        assert!(incast_off >= bound && incast_on >= bound, "{incast_off} {incast_on} vs {bound}");
    }

    /// A link of the victim fabric goes down mid-incast and comes back: the packets on it are
    /// lost (and counted), the credits they held return to the sender, the incast reroutes
    /// through the other path, and every credit is accounted for at every step.
    #[test]
    fn a_link_lost_and_restored_keeps_the_credits_whole() {
        // The sw0 → sw1 link, which the incast and the victim cross, is down from 30 to 60 µs.
        let text = "[[fault]]\nkind = \"link-down\"\nat_us = 30\na = \"sw0\"\nb = \"sw1\"\n\
                    [[fault]]\nkind = \"link-up\"\nat_us = 60\na = \"sw0\"\nb = \"sw1\"\n";
        let m = victim_with(None, 2_000_000, text);
        let mut s = crate::build(&m, SimOptions::default()).unwrap();
        for k in 1..=40 {
            s.run_until(SimTime::from_us(5 * k));
            s.check_invariants().unwrap_or_else(|e| panic!("at {} µs: {e:#?}", 5 * k));
        }
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert!(s.all_done(), "everything arrives after the link is back");
        assert!(s.stats.dropped > 0, "the link's packets were lost");
        for p in &s.ib_ports {
            let back: Vec<u32> = (0..8).map(|v| p.credits[v] + p.credit_in_flight[v]).collect();
            assert_eq!(back, s.link.ib().initial_credits.to_vec());
        }
    }
}
