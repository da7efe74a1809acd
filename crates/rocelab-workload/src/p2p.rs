//! Point-to-point collectives: every transfer is known up front and none waits on another, so
//! all of them are posted at once and the collective ends when the last one has arrived.
//!
//! * all-to-all (nccl-tests' `alltoall_perf`): each rank sends S/n to every other rank. NCCL
//!   runs it as a group of n−1 sends and n−1 receives per rank, all in flight together;
//! * send/recv (`sendrecv_perf`): rank r sends S to rank r+1 and receives S from rank r−1.
//!
//! A (sender, receiver) pair is one NCCL connection per channel; each connection has its own
//! QPs (`NCCL_IB_QPS_PER_CONNECTION`), each QP its own UDP source port, fixed for the whole
//! collective as NCCL's long-lived QPs are. With one QP per connection, ECMP hashes each pair's
//! data onto one path, and on a tier with as many uplinks as hosts some uplinks carry two
//! connections while others idle; with more QPs each connection's data is spread over more
//! paths and the load evens out.
//!
//! With GPU placement (`placement`), a transfer between two GPUs of one node goes over the
//! intra-node link (latency + bytes / bandwidth, each GPU's outgoing transfers one at a time),
//! and one between nodes leaves its node on the NIC of the rail the destination GPU's NIC is
//! on, as NCCL's PXN does by default (`NCCL_P2P_PXN_LEVEL=2`: the data crosses NVLink to the
//! GPU on the destination's rail and goes out its NIC, so the message stays on one rail). That
//! NVLink leg is not charged separately. With PXN off (`NCCL_PXN_DISABLE=1`) a GPU sends from
//! its own NIC, and a message to another rail crosses the spine tier.

use crate::placement::{Hop, IntraNode, Placement};
use crate::Outcome;
use rocelab_model::SimTime;
use rocelab_sim::rng::Rng;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use std::cell::RefCell;
use std::rc::Rc;

/// One transfer of the collective: `bytes` from rank `from` to rank `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub from: u32,
    pub to: u32,
    pub bytes: u64,
}

/// all-to-all of an S-byte buffer per rank: S/n (rounded up, as NCCL pads) to every other rank.
pub fn all_to_all(n: u32, bytes: u64) -> Vec<Transfer> {
    let per_peer = bytes.div_ceil(n.max(1) as u64);
    (0..n)
        .flat_map(|from| (0..n).filter(move |&to| to != from).map(move |to| Transfer { from, to, bytes: per_peer }))
        .collect()
}

/// send/recv of an S-byte buffer: rank r sends S to r+1 (the last to the first).
pub fn send_recv(n: u32, bytes: u64) -> Vec<Transfer> {
    (0..n).map(|from| Transfer { from, to: (from + 1) % n, bytes }).collect()
}

/// How an exchange's transfers go.
#[derive(Clone, Copy, Debug)]
pub struct ExchangePlan {
    pub channels: u32,
    pub qps: crate::QpUse,
    pub wire: crate::protocol::Wire,
    /// PXN: a message to another node leaves on the NIC of the destination's rail.
    pub pxn: bool,
    /// Draws the source ports.
    pub seed: u64,
}

/// Posts every transfer at time 0, split over channels (one connection each) and QPs.
pub struct Exchange {
    /// One message per (transfer, channel in use): (hop, bytes, sport).
    msgs: Vec<(Hop, u64, u16)>,
    qps: crate::QpUse,
    wire: crate::protocol::Wire,
    intra: Option<IntraNode>,
    /// When each rank's intra-node link is free again.
    intra_free: Vec<SimTime>,
    out: Rc<RefCell<Outcome>>,
    /// Added to every tag: the exchange's instance number (`crate::ring::INSTANCE_SHIFT`).
    tag_base: u64,
}

/// How a transfer from rank `from` to rank `to` travels.
fn route(placement: &Placement, from: u32, to: u32, pxn: bool) -> Hop {
    match placement {
        Placement::Hosts(h) => Hop::Net { src: h[from as usize], dst: h[to as usize] },
        Placement::Gpus(l) => {
            let g = l.gpus;
            let (ka, kb) = ((from / g) as usize, (to / g) as usize);
            if ka == kb {
                return Hop::Local { gpu: from };
            }
            let dst = l.nic_of(kb, to % g);
            let own = l.nic_of(ka, from % g);
            if !pxn {
                return Hop::Net { src: own, dst };
            }
            // PXN: out of the source node on the NIC with the destination NIC's index.
            let idx = l.nodes[kb].iter().position(|&h| h == dst).unwrap_or(0);
            Hop::Net { src: l.nodes[ka].get(idx).copied().unwrap_or(own), dst }
        }
    }
}

impl Exchange {
    /// `transfers` between the ranks of `placement`, each split over `plan.channels`
    /// connections.
    pub fn new(
        placement: &Placement,
        transfers: &[Transfer],
        plan: ExchangePlan,
        out: Rc<RefCell<Outcome>>,
    ) -> Exchange {
        let ExchangePlan { channels, qps, wire, pxn, seed } = plan;
        let channels = channels.max(1) as u64;
        // Its own stream, so the ring's ports do not move when this one draws more.
        let mut rng = Rng::new(seed, 0x5032_5000);
        let mut msgs = vec![];
        for t in transfers {
            let hop = route(placement, t.from, t.to, pxn);
            for c in 0..channels {
                // Channel c takes an equal share, the first ones the remainder; a channel left
                // with nothing (a tiny buffer) is not used, so it draws no port either.
                let b = t.bytes / channels + u64::from(c < t.bytes % channels);
                if b == 0 {
                    continue;
                }
                let b = wire.wire_bytes(b);
                let sport = rng.sport();
                msgs.push((hop, b, sport));
            }
        }
        let intra_free = vec![SimTime(0); placement.ranks()];
        Exchange { msgs, qps, wire, intra: placement.intra().cloned(), intra_free, out, tag_base: 0 }
    }

    /// The same exchange with its tags carrying `instance`, so several run in one workload.
    pub fn instance(mut self, instance: u16) -> Exchange {
        self.tag_base = (instance as u64) << crate::ring::INSTANCE_SHIFT;
        self
    }

    pub fn chunks_to_deliver(&self) -> u64 {
        self.msgs.len() as u64
    }
}

impl Workload for Exchange {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        for (i, &(hop, bytes, sport)) in self.msgs.iter().enumerate() {
            match hop {
                Hop::Net { src, dst } => {
                    // One message per connection.
                    let (qps, first) = self.qps.for_message(bytes, 0);
                    let msg = Message {
                        src,
                        dst,
                        size_bytes: bytes,
                        class: None,
                        qps,
                        tag: self.tag_base | i as u64,
                        // Every transfer is posted at once: the proxy's post overhead, which
                        // NCCL's model charges per ring step, is on no chain here; the
                        // GPU↔NIC leg is.
                        start: self.wire.p2p_start(net.now(), bytes),
                        sport: Some(crate::QpUse::sport(sport, first)),
                    };
                    // Ranks sit on distinct hosts and sizes are 1 B..1 TB: a refusal is a bug.
                    net.post(msg).expect("a transfer between two hosts of the fabric");
                }
                Hop::Local { gpu } => {
                    let intra = self.intra.as_ref().expect("local hops only with GPU placement");
                    // Each GPU sends its intra-node transfers one after the other.
                    let free = &mut self.intra_free[gpu as usize];
                    *free = SimTime((*free).max(net.now()).0 + intra.serialize(bytes).0);
                    let at = SimTime(free.0 + intra.latency.0);
                    net.wake_at(at, self.tag_base | i as u64).expect("an intra-node transfer within the clock range");
                }
            }
        }
    }

    fn on_delivered(&mut self, done: Delivered, _net: &mut Net<'_, '_>) {
        self.out.borrow_mut().record(&done);
    }

    fn on_wake(&mut self, _tag: u64, net: &mut Net<'_, '_>) {
        self.out.borrow_mut().record_local(net.now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_to_all_sends_a_share_to_every_other_rank() {
        let t = all_to_all(4, 1000);
        assert_eq!(t.len(), 12);
        assert!(t.iter().all(|x| x.from != x.to && x.bytes == 250));
        for r in 0..4 {
            // n−1 out, n−1 in: (n−1)/n of the buffer leaves each rank.
            assert_eq!(t.iter().filter(|x| x.from == r).map(|x| x.bytes).sum::<u64>(), 750);
            assert_eq!(t.iter().filter(|x| x.to == r).count(), 3);
        }
    }

    #[test]
    fn send_recv_is_a_shift_by_one() {
        let t = send_recv(3, 64);
        assert_eq!(
            t,
            vec![
                Transfer { from: 0, to: 1, bytes: 64 },
                Transfer { from: 1, to: 2, bytes: 64 },
                Transfer { from: 2, to: 0, bytes: 64 }
            ]
        );
    }
}
