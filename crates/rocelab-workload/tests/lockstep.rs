//! Rings in lockstep (`Ring::lockstep`, one group round per step on the flow engine) against
//! the same rings posted message by message.

mod common;

use common::ring8;
use rocelab_model::{Model, NodeId, SimTime};
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::{EngineKind, Run, SimOptions};
use rocelab_workload::placement::Placement;
use rocelab_workload::ring::{Ring, RingPlan};
use rocelab_workload::{Outcome, QpUse};
use std::cell::RefCell;
use std::rc::Rc;

struct Ran {
    end: SimTime,
    events: u64,
    tx: Vec<u64>,
    data_packets: u64,
}

/// A 2-channel ring of `steps` steps of `chunk` bytes per rank over `ranks`.
fn ring(m: &Model, ranks: &[NodeId], steps: u32, chunk: u64, lockstep: bool, engine: EngineKind) -> Ran {
    let out = Rc::new(RefCell::new(Outcome::default()));
    let plan = RingPlan {
        steps,
        chunk_bytes: chunk,
        channels: 2,
        qps: QpUse { qps: 1, split: false },
        seed: 11,
        wire: rocelab_workload::protocol::Wire::plain(),
    };
    let mut w = Ring::new(&Placement::Hosts(ranks.to_vec()), plan, out.clone());
    if lockstep {
        w = w.lockstep();
    }
    let expected = w.chunks_to_deliver();
    let faults = rocelab_sim::engine::resolve_faults(m).unwrap();
    let opts = SimOptions { engine, ..SimOptions::default() };
    let mut sim = Run::with_workload(m, Box::new(w), faults, opts).unwrap_or_else(|d| panic!("{d:?}"));
    sim.run(&mut |_| {});
    let o = out.borrow().clone();
    assert_eq!((o.delivered, o.failed), (expected, 0));
    let s = sim.snapshot_totals();
    Ran {
        end: o.end.unwrap(),
        events: s.events,
        tx: s.ports.iter().map(|p| p.tx_bytes).collect(),
        data_packets: s.counters.data_sent,
    }
}

/// The hosts of ring8 by leaf: the first 4 share a leaf, the last 4 the other.
fn by_leaf(m: &Model) -> Vec<NodeId> {
    let hosts: Vec<NodeId> = m.hosts().collect();
    let leaf_of = |h: &NodeId| m.port(m.port(m.node(*h).ports().next().unwrap()).peer).node;
    let l0 = leaf_of(&hosts[0]);
    let (mut a, b): (Vec<NodeId>, Vec<NodeId>) = hosts.iter().partition(|h| leaf_of(h) == l0);
    assert_eq!((a.len(), b.len()), (4, 4));
    a.extend(b);
    a
}

#[test]
fn a_ring_inside_one_leaf_takes_the_same_time_in_lockstep_as_message_by_message() {
    // Every hop has the same two links and the same share (each NIC's link halved between the
    // two channels): each rank's chunk arrives when every other's does, so the lockstep round
    // is the unbatched step exactly. Drain times are rounded up to the picosecond once per
    // step on either side: at most one ps apart per step.
    let m = ring8("");
    let ranks = &by_leaf(&m)[..4];
    let steps = 6;
    let a = ring(&m, ranks, steps, 1 << 20, false, EngineKind::Flow);
    let b = ring(&m, ranks, steps, 1 << 20, true, EngineKind::Flow);
    println!("unbatched {:?} ({} events), lockstep {:?} ({} events)", a.end, a.events, b.end, b.events);
    assert!(a.end.0.abs_diff(b.end.0) <= steps as u64, "{:?} vs {:?}", a.end, b.end);
    assert_eq!(a.tx, b.tx);
    assert_eq!(a.data_packets, b.data_packets);
    // 4 ranks × 2 channels per step in one round: far fewer events.
    assert!(b.events * 3 < a.events, "{} vs {}", b.events, a.events);
}

#[test]
fn in_lockstep_each_step_waits_for_its_slowest_hop_and_no_longer() {
    // Over both leaves, two hops of the 8 cross the spines: their last packet has two more
    // cables and two more store-and-forwards at 400G. Unbatched, a rank starts as soon as its
    // own chunk is in; in lockstep every step waits for the crossing hops' tail. No link is
    // shared beyond the NICs' two channels, so the rates are the same: the difference is
    // above 0 and at most that extra tail per step.
    let m = ring8("");
    let ranks = by_leaf(&m);
    let steps = 14;
    let chunk = 64 * 4096;
    let a = ring(&m, &ranks, steps, chunk, false, EngineKind::Flow);
    let b = ring(&m, &ranks, steps, chunk, true, EngineKind::Flow);
    let fabric = m.ports.iter().find(|p| p.speed.gbps() == 400.0).unwrap();
    let extra = 2 * (fabric.delay.0 + fabric.speed.serialize(4096 + DATA_OVERHEAD as u64).0);
    let diff = b.end.0 as i64 - a.end.0 as i64;
    println!("unbatched {:?}, lockstep {:?}: {diff} ps, bound {} ps", a.end, b.end, steps as u64 * extra);
    assert!(diff > 0, "{:?} vs {:?}", a.end, b.end);
    assert!(diff as u64 <= steps as u64 * (extra + 1), "{diff} ps > {steps} × {extra} ps");
    assert_eq!(a.tx, b.tx);
}

#[test]
fn the_packet_engine_runs_a_lockstep_ring_message_by_message_unchanged() {
    let m = ring8("");
    let ranks = by_leaf(&m);
    let a = ring(&m, &ranks, 3, 64 << 10, false, EngineKind::Packet);
    let b = ring(&m, &ranks, 3, 64 << 10, true, EngineKind::Packet);
    assert_eq!((a.end, a.events, a.tx), (b.end, b.events, b.tx));
}

#[test]
fn a_lockstep_ring_moves_off_a_lost_link_and_waits_out_a_cut() {
    // The alternating ring crosses the spines on every hop. One uplink of leaf0 lost at
    // 500 µs: the rounds move to the other and the ring ends about as fast; both lost until
    // 900 µs: leaf0 is cut off, the round running then stalls and the ring ends after 900 µs.
    let healthy = ring8("");
    let (a, b): (Vec<NodeId>, Vec<NodeId>) = {
        let r = by_leaf(&healthy);
        (r[..4].to_vec(), r[4..].to_vec())
    };
    let alternating: Vec<NodeId> = a.iter().zip(&b).flat_map(|(x, y)| [*x, *y]).collect();
    let chunk = 8 << 20;
    let base = ring(&healthy, &alternating, 14, chunk, true, EngineKind::Flow);
    let cut = ring8("[[fault]]\nkind = \"link-down\"\nat_us = 500\na = \"leaf0\"\nb = \"spine0\"\n");
    let r = ring(&cut, &alternating, 14, chunk, true, EngineKind::Flow);
    assert!(r.end >= base.end);
    assert!(r.end.0 as f64 <= base.end.0 as f64 * 1.05, "{:?} vs {:?}", r.end, base.end);
    let both = ring8(
        "[[fault]]\nkind = \"link-down\"\nat_us = 500\na = \"leaf0\"\nb = \"spine0\"\n\
         [[fault]]\nkind = \"link-down\"\nat_us = 500\na = \"leaf0\"\nb = \"spine1\"\n\
         [[fault]]\nkind = \"link-up\"\nat_us = 900\na = \"leaf0\"\nb = \"spine1\"\n",
    );
    let r2 = ring(&both, &alternating, 14, chunk, true, EngineKind::Flow);
    println!("healthy {:?}, one uplink lost {:?}, cut 500..900 µs {:?}", base.end, r.end, r2.end);
    assert!(r2.end.0 >= base.end.0 + 390_000_000, "{:?} vs {:?}", r2.end, base.end);
}
