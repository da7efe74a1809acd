//! Where a RoCE switch sends a data packet under `[routing] load_balancing` other than
//! `ecmp`: the router chooses (`Router::adaptive`, `spray`, `flowlet`), the engine tells it
//! each member's load. Control packets (ACKs, NAKs, CNPs) keep their QP's ECMP path: small,
//! and a sender must see its ACKs in order.

use super::*;
use rocelab_model::lb::LoadBalancing;

/// What a paused egress counts as on top of its queue: a priority paused by PFC cannot drain,
/// so its queue depth understates its wait; it is taken only when every member is paused.
const PAUSED_LOAD: u64 = 1 << 40;

impl Sim<'_> {
    /// The egress port switch `sw` forwards data packet `pkt` (for host `dst`, flow hash
    /// `hash`, priority `prio`) on under a load-balancing mode other than ECMP (`u32::MAX`: none).
    pub(super) fn lb_choose(&mut self, sw: u32, dst: u32, hash: u32, prio: u8, pkt: u32) -> u32 {
        let (kind, psn) = {
            let p = self.pkts.get(pkt);
            (p.kind, p.psn)
        };
        if kind != Kind::Data {
            return self.router.choose(sw, dst, hash);
        }
        // Spectrum-4 adaptive routing weighs a port by its egress queue occupancy and its
        // congestion state: here the bytes queued on the port, and PFC pause on the packet's
        // priority.
        let (ports, now) = (&self.ports, self.now);
        let load = |c: PortId| {
            let p = &ports[c.idx()];
            let q: u64 = p.queues.iter().map(|q| q.bytes).sum();
            q + if p.is_paused(prio, now) { PAUSED_LOAD } else { 0 }
        };
        match self.router.load_balancing() {
            LoadBalancing::Ecmp => self.router.choose(sw, dst, hash),
            LoadBalancing::Adaptive => self.router.adaptive(sw, dst, hash, psn, load),
            LoadBalancing::Spray => self.router.spray(sw, dst, hash, psn),
            LoadBalancing::Flowlet => self.router.flowlet(sw, dst, hash, now, load),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Load balancing on a 1:1 two-tier fabric against physics: line rate minus headers for
    //! per-packet modes, the max-min rates of the hash placement for ECMP.
    use super::*;

    /// Payload per packet and the RoCEv2 bytes around it on the wire (preamble and gap 20,
    /// Ethernet 14 + FCS 4, IPv4 20, UDP 8, BTH 12, ICRC 4).
    const MTU: u64 = 4096;
    const SIZE: u64 = 2_000_000;

    /// 4 leaves × 4 hosts, 4 spines, one 100G link from each leaf to each spine (1:1), 100G
    /// hosts; the transpose permutation: host j of leaf L sends `SIZE` bytes to host L of leaf
    /// j (j ≠ L), 12 flows all crossing the spine tier, one QP each. `routing` and `nic` go
    /// into those tables.
    fn transpose(routing: &str, nic: &str) -> Model {
        super::super::test_support::transpose_leaf_spine(
            "transpose",
            &format!("mtu = {MTU}\n{nic}"),
            &format!("[routing]\n{routing}"),
            SIZE,
        )
    }

    struct Outcome {
        /// Per QP: its finish time, ps.
        fct: Vec<u64>,
        retransmitted: u64,
        naks: u64,
        out_of_order: u64,
        dropped: u64,
    }

    fn run(m: &Model) -> Outcome {
        let mut s = crate::build(m, SimOptions::default()).unwrap_or_else(|d| panic!("{d:?}"));
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert!(s.all_done());
        Outcome {
            fct: s.host.qps.iter().map(|q| q.finish.unwrap().0).collect(),
            retransmitted: s.stats.retransmitted,
            naks: s.host.qps.iter().map(|q| q.st.naks).sum(),
            out_of_order: s.stats.out_of_order,
            dropped: s.stats.dropped,
        }
    }

    /// Payload goodput of a 100G link: 100 Gb/s × 4096 / (4096 + 82).
    fn goodput_bps() -> f64 {
        100e9 * MTU as f64 / (MTU + DATA_OVERHEAD as u64) as f64
    }

    /// The test: per-packet modes spread the permutation over the four spines, so
    /// every flow runs at ≥ 95 % of the goodput line rate, with nothing dropped or resent.
    #[test]
    fn adaptive_and_spray_carry_a_permutation_at_line_rate_without_retransmission() {
        let ideal_s = SIZE as f64 * 8.0 / goodput_bps();
        for mode in ["adaptive", "spray"] {
            let o = run(&transpose(&format!("load_balancing = \"{mode}\""), ""));
            let worst = o.fct.iter().map(|&f| ideal_s / (f as f64 * 1e-12)).fold(f64::MAX, f64::min);
            println!(
                "{mode}: slowest flow at {:.1} % of goodput line rate, {} out of order",
                worst * 100.0,
                o.out_of_order
            );
            assert!(worst >= 0.95, "{mode}: a flow ran at {:.1} % of line rate", worst * 100.0);
            assert_eq!((o.dropped, o.retransmitted, o.naks), (0, 0, 0), "{mode}");
            assert!(o.out_of_order > 0, "{mode}: per-packet spreading reorders some packets");
        }
    }

    /// Max-min fair rates (b/s) of flows crossing `paths`, every link of capacity `cap`:
    /// water-filling, the most loaded link fixing its flows' share first.
    fn max_min_rates(paths: &[Vec<u32>], cap: f64) -> Vec<f64> {
        let n = paths.len();
        let mut rate = vec![f64::NAN; n];
        loop {
            let links: std::collections::BTreeSet<u32> =
                (0..n).filter(|&i| rate[i].is_nan()).flat_map(|i| paths[i].iter().copied()).collect();
            let mut best: Option<(u32, f64)> = None;
            for l in links {
                let (fixed, free) = (0..n).filter(|&i| paths[i].contains(&l)).fold((0.0, 0), |(f, k), i| {
                    if rate[i].is_nan() {
                        (f, k + 1)
                    } else {
                        (f + rate[i], k)
                    }
                });
                let share = (cap - fixed) / free as f64;
                if free > 0 && best.is_none_or(|(_, b)| share < b) {
                    best = Some((l, share));
                }
            }
            let Some((l, share)) = best else { return rate };
            for i in 0..n {
                if rate[i].is_nan() && paths[i].contains(&l) {
                    rate[i] = share;
                }
            }
        }
    }

    /// The test: with ECMP and one QP per flow, flows whose hashes collide share an
    /// uplink or a spine downlink. Worked out from the traced paths, the max-min rates of
    /// that placement give the fabric's throughput while every flow runs; the twin's
    /// delivered bytes between 30 and 150 µs (before the first flow can finish, at 167 µs)
    /// match it, and so does its collision loss against a fabric where nothing collides.
    #[test]
    fn ecmp_collision_loss_matches_the_max_min_rates_of_the_hash_placement() {
        let m = transpose("", "");
        let mut s = crate::build(&m, SimOptions::default()).unwrap_or_else(|d| panic!("{d:?}"));
        let (t0, t1) = (SimTime::from_us(30), SimTime::from_us(150));
        s.run_until(t0);
        let at0: Vec<u64> = s.host.qps.iter().map(|q| q.st.bytes_delivered).collect();
        s.run_until(t1);
        let measured: Vec<f64> = s
            .host
            .qps
            .iter()
            .zip(&at0)
            .map(|(q, b0)| (q.st.bytes_delivered - b0) as f64 * 8.0 / (t1.0 - t0.0) as f64 * 1e12)
            .collect();
        let paths: Vec<Vec<u32>> = s
            .host
            .qps
            .iter()
            .map(|q| {
                let mut out = Vec::new();
                assert!(s.router.trace_path(q.src_nic, q.dst, q.hash, 8, &mut out));
                out
            })
            .collect();
        let line = goodput_bps();
        let predicted = max_min_rates(&paths, line);
        let n = predicted.len() as f64;
        let loss_p = 1.0 - predicted.iter().sum::<f64>() / (n * line);
        let loss_m = 1.0 - measured.iter().sum::<f64>() / (n * line);
        println!(
            "ecmp: collision loss {:.1} % (max-min of the placement {:.1} %); per flow Gb/s measured {:?}, max-min {:?}",
            loss_m * 100.0,
            loss_p * 100.0,
            measured.iter().map(|r| (r / 1e8).round() / 10.0).collect::<Vec<_>>(),
            predicted.iter().map(|r| (r / 1e8).round() / 10.0).collect::<Vec<_>>()
        );
        assert!(loss_p > 0.15, "this seed's placement has collisions (else the test tests nothing)");
        assert!((loss_m - loss_p).abs() < 0.03, "loss {loss_m} against max-min {loss_p}");
        // Each link the collisions saturate carries its capacity (DCQCN splits it unevenly
        // over so short a time, so the flows' shares are not compared one by one).
        let links: std::collections::BTreeSet<u32> = paths.iter().flatten().copied().collect();
        let mut saturated = 0;
        for l in links {
            let on: Vec<usize> = (0..paths.len()).filter(|&i| paths[i].contains(&l)).collect();
            let p: f64 = on.iter().map(|&i| predicted[i]).sum();
            if on.len() < 2 || p < 0.99 * line {
                continue;
            }
            saturated += 1;
            let m: f64 = on.iter().map(|&i| measured[i]).sum();
            assert!((m / p - 1.0).abs() < 0.08, "link {l}, flows {on:?}: {m} b/s, max-min {p} b/s");
        }
        assert!(saturated > 0);
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert_eq!(
            (s.stats.dropped, s.stats.retransmitted, s.stats.out_of_order),
            (0, 0, 0),
            "ECMP keeps every flow in order"
        );
    }

    /// Adaptive routing reorders packets; with out-of-order placement (the default under
    /// `adaptive`) none is resent. A receiver without it (`ooo_window_packets = 0`) answers
    /// each reordering with a NAK and the sender goes back N.
    #[test]
    fn reordering_under_adaptive_resends_nothing_with_placement_and_goes_back_n_without() {
        let with = run(&transpose("load_balancing = \"adaptive\"", ""));
        assert!(with.out_of_order > 0);
        assert_eq!((with.retransmitted, with.naks), (0, 0));
        let without = run(&transpose("load_balancing = \"adaptive\"", "ooo_window_packets = 0"));
        println!("without placement: {} NAKs, {} packets resent", without.naks, without.retransmitted);
        assert_eq!(without.out_of_order, 0, "nothing placed out of order");
        assert!(without.naks > 0 && without.retransmitted > 0);
    }

    /// The reorder state is bounded by `ooo_window_packets`: with a 64-packet window each
    /// QP's bitmap is one word (its 489-packet message would take 8), and every byte still
    /// arrives exactly once.
    #[test]
    fn the_reorder_state_is_bounded_by_the_window() {
        let m = transpose("load_balancing = \"spray\"", "ooo_window_packets = 64");
        let mut s = crate::build(&m, SimOptions::default()).unwrap_or_else(|d| panic!("{d:?}"));
        s.run(&mut |_| {});
        s.check_invariants().unwrap();
        assert!(s.all_done());
        assert_eq!(SIZE.div_ceil(MTU), 489);
        for q in &s.host.qps {
            assert_eq!(q.ooo_window, 64);
            assert!(q.ooo.len() <= 1, "a QP holds {} words of reorder state", q.ooo.len());
            assert_eq!(q.st.bytes_delivered, SIZE);
        }
        assert!(s.stats.out_of_order > 0);
        assert_eq!(s.stats.payload_delivered, 12 * SIZE);
    }

    /// Flowlets on flows that never pause: each flow's first packet picks the least-loaded
    /// member and the flow stays there (its packets are microseconds apart, the gap 500 µs),
    /// so nothing is reordered or resent.
    #[test]
    fn flowlets_of_unbroken_flows_never_reorder() {
        let o = run(&transpose("load_balancing = \"flowlet\"", ""));
        assert_eq!((o.dropped, o.retransmitted, o.naks, o.out_of_order), (0, 0, 0, 0));
    }
}
