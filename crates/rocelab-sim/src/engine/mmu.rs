//! The switch MMU: forwarding a packet that arrives, admission against the shared pool
//! (lossless: priority-group reserve, dynamic or static XOFF threshold, then headroom; lossy:
//! the α share of the free pool), ingress accounting, and release when a packet leaves.

use super::*;

// The MMU's arithmetic, as pure functions of the numbers it reads (tested by hand below);
// `engine::pfc` takes its XOFF/XON decisions from here too, against the same threshold.

/// The shared pool not yet used: buffer less every headroom and reserve carved out, less what
/// the priority groups hold above their reserve.
#[inline]
pub(super) fn free_pool(buffer: u64, total_hdrm: u64, total_rsrv: u64, shared_used: u64) -> u64 {
    buffer.saturating_sub(total_hdrm + total_rsrv + shared_used)
}

/// The dynamic threshold: a priority group may hold `alpha` times the free pool.
#[inline]
pub(super) fn alpha_share(free: u64, alpha: f64) -> u64 {
    (free as f64 * alpha) as u64
}

/// A lossless packet is dropped only when its priority group's headroom cannot take it and
/// the shared pool refuses it too.
#[inline]
pub(super) fn lossless_drops(hdrm: u64, headroom: u64, shared: u64, thr: u64, size: u64) -> bool {
    hdrm + size > headroom && shared + size > thr
}

/// A lossy packet is dropped above its α share of the free pool (but never inside its
/// reserve), or when the buffer is full.
#[inline]
pub(super) fn lossy_drops(shared: u64, limit: u64, reserve: u64, used: u64, buffer: u64, size: u64) -> bool {
    shared + size > limit.max(reserve) || used + size > buffer
}

/// Where an admitted packet is charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Charge {
    /// Inside the priority group's reserve.
    Reserve,
    /// Past it: `shared` of its bytes come from the shared pool.
    Shared { shared: u64 },
    /// A lossless group over its XOFF threshold: into headroom.
    Headroom,
}

/// The charge for `size` bytes on a priority group holding `ing` bytes of reserve and shared
/// use; `lossless_thr` is the XOFF threshold of a lossless group (`None`: lossy).
#[inline]
pub(super) fn charge(ing: u64, size: u64, reserve: u64, lossless_thr: Option<u64>) -> Charge {
    let new = ing + size;
    if new <= reserve {
        Charge::Reserve
    } else if lossless_thr.is_some_and(|thr| new - reserve > thr) {
        Charge::Headroom
    } else {
        Charge::Shared { shared: size.min(new - reserve) }
    }
}

/// Releasing `size` bytes of a group holding `ing` (reserve + shared) and `hdrm`: headroom
/// empties first, then shared use above the reserve. Returns (from headroom, from shared).
#[inline]
pub(super) fn release_split(ing: u64, hdrm: u64, reserve: u64, size: u64) -> (u64, u64) {
    let from_hdrm = hdrm.min(size);
    (from_hdrm, (size - from_hdrm).min(ing.saturating_sub(reserve)))
}

/// XOFF is due when a lossless priority group holds headroom bytes (it went past its
/// threshold) or its shared use has reached the threshold `thr`.
#[inline]
pub(super) fn xoff_due(hdrm: u64, shared: u64, thr: u64) -> bool {
    hdrm > 0 || shared >= thr
}

/// XON under a static threshold: shared use is down to the configured `xon`.
#[inline]
pub(super) fn static_xon_due(shared: u64, xon: u64) -> bool {
    shared <= xon
}

/// XON under the dynamic threshold: shared use is at least `resume_offset` below the
/// current threshold (hysteresis, so a group does not flap XOFF/XON around one value), or
/// empty — the threshold may sit below the offset when the pool is nearly full, and a group
/// holding nothing shared must resume anyway.
#[inline]
pub(super) fn dynamic_xon_due(shared: u64, resume_offset: u64, thr: u64) -> bool {
    shared == 0 || shared + resume_offset <= thr
}

/// One switch's shared buffer: its size and carve-outs, its thresholds, what it holds.
pub(crate) struct Switch {
    pub node: u32,
    pub buffer: u64,
    /// Bytes the priority groups hold above their reserve (headroom not counted).
    pub shared_used: u64,
    /// Headroom and reserve carved out of the buffer, all ports and lossless priorities.
    pub total_hdrm: u64,
    pub total_rsrv: u64,
    /// Per (port, priority group).
    pub reserve: u64,
    pub resume_offset: u64,
    pub alpha_lossless: f64,
    pub alpha_lossy: f64,
    /// Static (XOFF, XON) thresholds on a priority group's shared use; `None`: dynamic.
    pub static_xoff: Option<(u64, u64)>,
    pub used: u64,
    pub peak_used: u64,
    /// RED's marking draws at this switch's egress queues.
    pub rng: Rng,
}

/// The switches' MMU as a component: it owns every switch's buffer state and decides
/// admission and release. The per-(port, priority group) counters it charges (`IngressPg`)
/// stay in their port's cache lines, beside what the same packet touches there; the engine
/// hands it the one a packet is charged to.
pub(crate) struct Mmu {
    /// By engine switch (the router's numbering).
    pub switches: Vec<Switch>,
}

impl Mmu {
    /// The XOFF threshold on a priority group's shared use: static, or the dynamic threshold
    /// (the same for every PG of a switch: it depends only on the free shared pool).
    #[inline]
    pub(super) fn xoff_threshold(&self, sw: u32) -> u64 {
        let s = &self.switches[sw as usize];
        if let Some((xoff, _)) = s.static_xoff {
            return xoff;
        }
        alpha_share(free_pool(s.buffer, s.total_hdrm, s.total_rsrv, s.shared_used), s.alpha_lossless)
    }

    /// What priority group `pg` of switch `sw` holds in the shared pool.
    #[inline]
    pub(super) fn shared(&self, sw: u32, pg: &IngressPg) -> u64 {
        pg.ing.saturating_sub(self.switches[sw as usize].reserve)
    }

    /// Admits `size` bytes into priority group `pg` (of a port with `headroom` bytes of PFC
    /// headroom) at switch `sw` and charges them, or says why they are dropped. `lossless`:
    /// the group is PFC-protected (its threshold is then `xoff_threshold`).
    #[inline]
    pub(super) fn admit(
        &mut self,
        sw: u32,
        pg: &mut IngressPg,
        headroom: u64,
        lossless: bool,
        size: u64,
    ) -> Result<(), DropReason> {
        let thr = if lossless { self.xoff_threshold(sw) } else { u64::MAX };
        let shared = self.shared(sw, pg);
        let s = &mut self.switches[sw as usize];
        if lossless {
            if lossless_drops(pg.hdrm, headroom, shared, thr, size) {
                return Err(DropReason::Headroom);
            }
        } else {
            let limit = alpha_share(free_pool(s.buffer, s.total_hdrm, s.total_rsrv, s.shared_used), s.alpha_lossy);
            if lossy_drops(shared, limit, s.reserve, s.used, s.buffer, size) {
                return Err(DropReason::Buffer);
            }
        }
        match charge(pg.ing, size, s.reserve, lossless.then_some(thr)) {
            Charge::Reserve => pg.ing += size,
            Charge::Headroom => pg.hdrm += size,
            Charge::Shared { shared } => {
                pg.ing += size;
                s.shared_used += shared;
            }
        }
        s.used += size;
        s.peak_used = s.peak_used.max(s.used);
        Ok(())
    }

    /// Charges `size` bytes to `pg` all from the shared pool (InfiniBand: no reserve, no
    /// headroom; the sender's credits guarantee the room).
    #[inline]
    pub(super) fn take_shared(&mut self, sw: u32, pg: &mut IngressPg, size: u64) {
        let s = &mut self.switches[sw as usize];
        pg.ing += size;
        s.shared_used += size;
        s.used += size;
        s.peak_used = s.peak_used.max(s.used);
    }

    /// `size` bytes charged to `pg` leave switch `sw`: headroom empties first, then the
    /// shared use above the reserve.
    #[inline]
    pub(super) fn release(&mut self, sw: u32, pg: &mut IngressPg, size: u64) {
        let s = &mut self.switches[sw as usize];
        let (from_hdrm, from_shared) = release_split(pg.ing, pg.hdrm, s.reserve, size);
        pg.hdrm -= from_hdrm;
        pg.ing -= size - from_hdrm;
        s.shared_used -= from_shared;
        s.used -= size;
    }
}

impl Sim<'_> {
    /// The XOFF threshold of switch `sw` (`Mmu::xoff_threshold`).
    #[inline]
    pub(super) fn pfc_threshold(&self, sw: u32) -> u64 {
        self.mmu.xoff_threshold(sw)
    }

    /// What priority group `prio` of `port` at switch `sw` holds in the shared pool.
    #[inline]
    pub(super) fn shared_of(&self, sw: u32, port: u32, prio: u8) -> u64 {
        self.mmu.shared(sw, &self.ports[port as usize].pg[prio as usize])
    }

    /// A packet arrives at a RoCE switch: routed, admitted by the MMU (reserve, shared pool,
    /// headroom; PFC XOFF when a lossless priority group crosses its threshold), queued.
    #[inline]
    pub(super) fn switch_arrive_eth(&mut self, sw: u32, in_port: u32, pkt: u32) {
        let (class, dst, hash, size) = {
            let p = self.pkts.get(pkt);
            (p.class, p.dst, p.hash, p.wire_bytes as u64)
        };
        let cp = self.queues.classes[class as usize];
        let (prio, queue) = (cp.prio, cp.queue);
        let out = match self.router.load_balancing() {
            rocelab_model::lb::LoadBalancing::Ecmp => self.router.choose(sw, dst, hash),
            _ => self.lb_choose(sw, dst, hash, prio, pkt),
        };
        if out == NONE {
            self.drop_pkt(in_port, queue, pkt, DropReason::LinkDown);
            return;
        }
        if self.ports[out as usize].wd_drop[prio as usize]
            && self.ports[out as usize].pause[prio as usize].wd_until > self.now
        {
            self.drop_pkt(out, queue, pkt, DropReason::Watchdog);
            return;
        }
        // Admission and ingress accounting.
        let ip = &mut self.ports[in_port as usize];
        if let Err(reason) = self.mmu.admit(sw, &mut ip.pg[prio as usize], ip.headroom, cp.lossless, size) {
            // (UET: cut to its header and forwarded at high priority instead, `engine::uet`.)
            if !self.try_trim(sw, in_port, pkt, out) {
                self.drop_pkt(in_port, queue, pkt, reason);
            }
            return;
        }
        self.enqueue_egress(pkt, in_port, prio, out, queue, size);
        if cp.lossless {
            self.check_pause(sw, in_port, prio);
        }
        self.switch_try_tx(out);
    }

    /// Queues `pkt` (`size` bytes, arrived on `in_port` at priority or VL `in_prio`, its
    /// buffer charged) at egress queue `queue` of port `out`, stamped for the queueing delay.
    #[inline]
    pub(super) fn enqueue_egress(&mut self, pkt: u32, in_port: u32, in_prio: u8, out: u32, queue: u8, size: u64) {
        let p = self.pkts.get_mut(pkt);
        p.in_port = in_port;
        p.in_prio = in_prio;
        p.enq_time = self.now;
        let q = &mut self.ports[out as usize].queues[queue as usize];
        q.ring.push_back(&mut self.pkts, pkt);
        q.bytes += size;
        q.peak = q.peak.max(q.bytes);
        self.ports[out as usize].nonempty |= 1 << queue;
    }

    // (Always inlined: into the switch's dequeue, once per packet-hop.)
    #[inline(always)]
    pub(super) fn release(&mut self, sw: u32, in_port: u32, prio: u8, size: u64) {
        self.mmu.release(sw, &mut self.ports[in_port as usize].pg[prio as usize], size);
        if prio < 8 && self.lossless_prios & (1 << prio) != 0 {
            self.check_resume(sw, in_port, prio);
        }
        self.released(in_port, prio, size);
    }
}

#[cfg(test)]
mod tests {
    //! The MMU's arithmetic against numbers worked out by hand.
    use super::super::test_support::{idle_sim as sim, model};
    use super::*;

    #[test]
    fn free_pool_and_dynamic_threshold() {
        // 32 MB buffer, 2 MB of headroom and 1 MB of reserves carved out, 5 MB shared in use:
        // 24 MB free; α = 1/8 lets one priority group hold 3 MB more.
        let free = free_pool(32_000_000, 2_000_000, 1_000_000, 5_000_000);
        assert_eq!(free, 24_000_000);
        assert_eq!(alpha_share(free, 0.125), 3_000_000);
        // Over-carved (headroom and reserves above the buffer): nothing free, no panic.
        assert_eq!(free_pool(1_000_000, 900_000, 200_000, 0), 0);
    }

    #[test]
    fn a_packet_is_charged_to_reserve_then_shared_then_headroom() {
        let (reserve, thr) = (4_096, 100_000);
        // 3,000 B held: a 1,000 B packet fits the 4,096 B reserve.
        assert_eq!(charge(3_000, 1_000, reserve, Some(thr)), Charge::Reserve);
        // 4,000 B held: the packet straddles the reserve, 904 B of it are shared.
        assert_eq!(charge(4_000, 1_000, reserve, Some(thr)), Charge::Shared { shared: 904 });
        // 103,596 B held: 100,500 B above the reserve after it, past the threshold: headroom.
        assert_eq!(charge(103_596, 1_000, reserve, Some(thr)), Charge::Headroom);
        // Exactly at the threshold is still shared.
        assert_eq!(charge(103_096, 1_000, reserve, Some(thr)), Charge::Shared { shared: 1_000 });
        // A lossy group has no headroom: past the threshold it stays shared (admission drops
        // it before, when it must).
        assert_eq!(charge(103_596, 1_000, reserve, None), Charge::Shared { shared: 1_000 });
    }

    #[test]
    fn lossless_drops_only_when_headroom_and_shared_pool_both_refuse() {
        // Headroom 50,000 B holding 49,500: a 1,000 B packet does not fit...
        assert!(!lossless_drops(49_500, 50_000, 10_000, 100_000, 1_000), "...but the pool takes it");
        assert!(lossless_drops(49_500, 50_000, 99_500, 100_000, 1_000), "neither takes it");
        assert!(!lossless_drops(49_000, 50_000, 99_500, 100_000, 1_000), "headroom takes it");
    }

    #[test]
    fn lossy_drops_above_its_share_or_a_full_buffer() {
        // Share 20,000 B, reserve 4,096: 19,500 + 1,000 > 20,000 drops; 18,500 + 1,000 does not.
        assert!(lossy_drops(19_500, 20_000, 4_096, 0, 1_000_000, 1_000));
        assert!(!lossy_drops(18_500, 20_000, 4_096, 0, 1_000_000, 1_000));
        // A share below the reserve still admits up to the reserve.
        assert!(!lossy_drops(3_000, 0, 4_096, 0, 1_000_000, 1_000));
        // A full buffer drops whatever the share.
        assert!(lossy_drops(0, 20_000, 4_096, 999_500, 1_000_000, 1_000));
    }

    #[test]
    fn release_empties_headroom_first_then_the_shared_part() {
        // Holding 10,000 B (reserve 4,096, so 5,904 shared) and 3,000 B of headroom.
        assert_eq!(release_split(10_000, 3_000, 4_096, 2_000), (2_000, 0));
        assert_eq!(release_split(10_000, 3_000, 4_096, 5_000), (3_000, 2_000));
        // Nothing shared left once below the reserve.
        assert_eq!(release_split(3_000, 0, 4_096, 1_000), (0, 0));
        assert_eq!(release_split(5_000, 0, 4_096, 2_000), (0, 904));
    }

    #[test]
    fn thresholds_round_down_to_whole_bytes() {
        // 32 MiB = 33,554,432 B, no headroom, 64 ports × 3 priorities × 4,096 B reserved =
        // 786,432 B, nothing shared yet: 32,768,000 B free; α = 1/8 → 4,096,000 B.
        let free = free_pool(33_554_432, 0, 64 * 3 * 4_096, 0);
        assert_eq!(free, 32_768_000);
        assert_eq!(alpha_share(free, 0.125), 4_096_000);
        // 1,000,001 B free at 1/8 is 125,000.125 B: a group may hold 125,000, not 125,001.
        assert_eq!(alpha_share(1_000_001, 0.125), 125_000);
        // α = 2 (a lossless alpha above 1 is legal on some ASICs): twice the free pool.
        assert_eq!(alpha_share(24_000_000, 2.0), 48_000_000);
    }

    #[test]
    fn xoff_at_the_threshold_xon_below_it_by_the_resume_offset() {
        // Threshold 100,000 B: 99,999 B shared is below it, 100,000 reaches it.
        assert!(!xoff_due(0, 99_999, 100_000));
        assert!(xoff_due(0, 100_000, 100_000));
        // Any headroom in use means the group already went past it.
        assert!(xoff_due(1, 0, 100_000));
        // Dynamic, resume offset 3,072 B: XON once shared ≤ 100,000 − 3,072 = 96,928.
        assert!(!dynamic_xon_due(96_929, 3_072, 100_000));
        assert!(dynamic_xon_due(96_928, 3_072, 100_000));
        // A threshold below the offset (pool nearly full): only an empty group resumes.
        assert!(!dynamic_xon_due(1, 3_072, 2_000));
        assert!(dynamic_xon_due(0, 3_072, 2_000));
        // Static XON 10,000 B: 10,001 holds the pause, 10,000 releases it.
        assert!(!static_xon_due(10_001, 10_000));
        assert!(static_xon_due(10_000, 10_000));
    }

    /// One switch (ns3-reference MMU: 32,000,000 B buffer, 4,096 B reserve, α = 1/8, 3,072 B
    /// resume offset), two 100 Gb/s hosts, the default classes (RoCE lossless on priority 3,
    /// CNP on 6, default on 0); `pfc` is the `[qos.pfc]` body.
    fn pair(pfc: &str) -> Model {
        let text = format!(
            r#"[fabric]
name = "mmu"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {{ name = "h0", kind = "host" }}, {{ name = "h1", kind = "host" }} ]
link = [ {{ a = "h0", b = "sw0", speed_gbps = 100, length_m = 2 }}, {{ a = "h1", b = "sw0", speed_gbps = 100, length_m = 2 }} ]
[qos.pfc]
{pfc}
"#
        );
        model("mmu.toml", &text)
    }

    /// (switch, ingress port from h0, egress port toward h1), the egress kept busy so that
    /// what arrives stays queued and charged.
    fn ports(s: &mut Sim) -> (u32, u32, u32) {
        let h1 = s.m.node_by_name("h1").unwrap().0;
        let port_to = |s: &Sim, node: u32| {
            s.ports
                .iter()
                .position(|p| p.sw != NONE && p.peer != NONE && s.ports[p.peer as usize].node == node)
                .unwrap() as u32
        };
        let h0 = s.m.node_by_name("h0").unwrap().0;
        let (ip, out) = (port_to(s, h0), port_to(s, h1));
        s.ports[out as usize].busy_until = SimTime::MAX;
        (s.ports[ip as usize].sw, ip, out)
    }

    /// A RoCE data packet of `bytes` from h0 to h1 arrives at the switch on `ip`.
    fn arrive(s: &mut Sim, sw: u32, ip: u32, bytes: u16) {
        let class = s.queues.classes.iter().position(|c| c.lossless).unwrap() as u8;
        assert_eq!(s.queues.classes[class as usize].prio, 3);
        let dst = s.m.node_by_name("h1").unwrap().0;
        let pkt = s.pkts.alloc(Packet {
            enq_time: SimTime::ZERO,
            qp: 0,
            psn: 0,
            dst,
            hash: 0,
            in_port: NONE,
            next: NONE,
            next_gap: u32::MAX,
            wire_bytes: bytes,
            payload: bytes,
            kind: Kind::Data,
            class,
            pcp: 3,
            ecn: 0,
            in_prio: 0,
        });
        s.switch_arrive(sw, ip, pkt);
    }

    #[test]
    fn the_dynamic_threshold_follows_the_free_pool_of_a_built_switch() {
        let m = pair("headroom_bytes = 100000");
        let mut s = sim(&m);
        let (sw, ip, _) = ports(&mut s);
        // Carved out: headroom 100,000 B × 2 ports × 1 lossless priority = 200,000 B;
        // reserves 4,096 B × 2 ports × 3 priorities in use = 24,576 B.
        // Free: 32,000,000 − 200,000 − 24,576 = 31,775,424 B; α = 1/8 → 3,971,928 B.
        assert_eq!(s.pfc_threshold(sw), 3_971_928);
        // Five 1,000 B packets: the first four and 96 B of the fifth fill the 4,096 B reserve,
        // the other 904 B are shared; the threshold drops by 904/8 = 113 B.
        for _ in 0..5 {
            arrive(&mut s, sw, ip, 1_000);
        }
        assert_eq!((s.ports[ip as usize].pg[3].ing, s.ports[ip as usize].pg[3].hdrm), (5_000, 0));
        assert_eq!((s.mmu.switches[sw as usize].shared_used, s.mmu.switches[sw as usize].used), (904, 5_000));
        assert_eq!(s.shared_of(sw, ip, 3), 904);
        assert_eq!(s.pfc_threshold(sw), 3_971_815);
        assert!(!s.ports[ip as usize].xoff[3]);
        // One packet leaves: its bytes come out of the shared part first (904), the rest of
        // the reserve, and the pool is whole again.
        s.release(sw, ip, 3, 1_000);
        assert_eq!(s.ports[ip as usize].pg[3].ing, 4_000);
        assert_eq!((s.mmu.switches[sw as usize].shared_used, s.mmu.switches[sw as usize].used), (0, 4_000));
        assert_eq!(s.pfc_threshold(sw), 3_971_928);
    }

    #[test]
    fn past_a_static_xoff_packets_go_to_headroom_and_drop_when_it_is_full() {
        // Static XOFF 2,000 B shared, headroom 3,000 B per port and priority.
        let m = pair("xoff_bytes = 2000\nxon_bytes = 1000\nheadroom_bytes = 3000");
        let mut s = sim(&m);
        let (sw, ip, _) = ports(&mut s);
        let pg = |s: &Sim| (s.ports[ip as usize].pg[3].ing, s.ports[ip as usize].pg[3].hdrm);
        // Six 1,000 B packets: 4,096 B reserve, 1,904 B shared — below XOFF.
        for _ in 0..6 {
            arrive(&mut s, sw, ip, 1_000);
        }
        assert_eq!(pg(&s), (6_000, 0));
        assert!(!s.ports[ip as usize].xoff[3]);
        // The seventh would make 2,904 B shared, past 2,000: it is charged to headroom, and
        // headroom in use sends XOFF.
        arrive(&mut s, sw, ip, 1_000);
        assert_eq!(pg(&s), (6_000, 1_000));
        assert!(s.ports[ip as usize].xoff[3]);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 1);
        // Two more fill the 3,000 B of headroom exactly; the tenth finds neither headroom
        // (4,000 > 3,000) nor the pool (2,904 > 2,000) and is dropped.
        arrive(&mut s, sw, ip, 1_000);
        arrive(&mut s, sw, ip, 1_000);
        assert_eq!(pg(&s), (6_000, 3_000));
        assert_eq!(s.ports[ip as usize].st.drops[3][DropReason::Headroom as usize], 0);
        arrive(&mut s, sw, ip, 1_000);
        assert_eq!(pg(&s), (6_000, 3_000));
        assert_eq!(s.ports[ip as usize].st.drops[3][DropReason::Headroom as usize], 1);
        assert_eq!(s.mmu.switches[sw as usize].used, 9_000);
        // Leaving packets empty headroom first, and there is no XON while any remains; once it
        // is empty, 1,904 B shared is still above XON (1,000): the pause holds.
        for _ in 0..3 {
            s.release(sw, ip, 3, 1_000);
            assert!(s.ports[ip as usize].xoff[3]);
        }
        assert_eq!(pg(&s), (6_000, 0));
        assert_eq!(s.shared_of(sw, ip, 3), 1_904);
        // The next 1,000 B come out of the shared part: 904 B ≤ 1,000, XON.
        s.release(sw, ip, 3, 1_000);
        assert_eq!(s.shared_of(sw, ip, 3), 904);
        assert!(!s.ports[ip as usize].xoff[3]);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 2, "one XOFF, one XON");
    }
    /// The component alone, no engine: one switch of 1 MB, 200 kB of headroom and 16 kB of
    /// reserve carved out, 1 kB reserved per priority group, α = 1/8 lossless, 1/2 lossy.
    fn one_switch(static_xoff: Option<(u64, u64)>) -> Mmu {
        Mmu {
            switches: vec![Switch {
                node: 0,
                buffer: 1_000_000,
                shared_used: 0,
                total_hdrm: 200_000,
                total_rsrv: 16_000,
                reserve: 1_000,
                resume_offset: 2_000,
                alpha_lossless: 0.125,
                alpha_lossy: 0.5,
                static_xoff,
                used: 0,
                peak_used: 0,
                rng: Rng::new(1, 0),
            }],
        }
    }

    #[test]
    fn the_mmu_component_admits_charges_and_releases_by_hand_computed_numbers() {
        let mut mmu = one_switch(None);
        let mut pg = IngressPg::default();
        // Free pool 1,000,000 − 200,000 − 16,000 = 784,000; an eighth of it.
        assert_eq!(mmu.xoff_threshold(0), 98_000);
        // The first 1,000 B fill the reserve; the shared pool is untouched.
        assert_eq!(mmu.admit(0, &mut pg, 10_000, true, 1_000), Ok(()));
        assert_eq!((pg.ing, pg.hdrm, mmu.switches[0].shared_used), (1_000, 0, 0));
        // 5,000 B more come from the shared pool, which shrinks the threshold.
        assert_eq!(mmu.admit(0, &mut pg, 10_000, true, 5_000), Ok(()));
        assert_eq!((pg.ing, mmu.shared(0, &pg), mmu.switches[0].used), (6_000, 5_000, 6_000));
        assert_eq!(mmu.xoff_threshold(0), 779_000 / 8);
        // Release empties headroom first (none), then shared use.
        mmu.release(0, &mut pg, 2_000);
        assert_eq!((pg.ing, mmu.switches[0].shared_used, mmu.switches[0].used), (4_000, 3_000, 4_000));
        assert_eq!(mmu.switches[0].peak_used, 6_000);
    }

    #[test]
    fn past_a_static_xoff_lossless_bytes_go_to_headroom_and_drop_only_when_it_is_full() {
        let mut mmu = one_switch(Some((20_000, 18_000)));
        assert_eq!(mmu.xoff_threshold(0), 20_000);
        // A group holding its reserve and 20,000 B shared: at the threshold.
        let mut pg = IngressPg::default();
        // (One 21,000 B admission would be refused: its shared part would pass XOFF by more
        // than the headroom holds.)
        assert_eq!(mmu.admit(0, &mut pg.clone(), 1_000, true, 21_000), Err(DropReason::Headroom));
        assert_eq!(mmu.admit(0, &mut pg, 1_000, true, 1_000), Ok(()));
        assert_eq!(mmu.admit(0, &mut pg, 1_000, true, 20_000), Ok(()));
        assert_eq!((pg.ing, pg.hdrm, mmu.shared(0, &pg)), (21_000, 0, 20_000));
        // 500 B more: past XOFF, into headroom.
        assert_eq!(mmu.admit(0, &mut pg, 1_000, true, 500), Ok(()));
        assert_eq!((pg.ing, pg.hdrm), (21_000, 500));
        // 600 B more would take headroom to 1,100 > 1,000: dropped, nothing charged.
        assert_eq!(mmu.admit(0, &mut pg, 1_000, true, 600), Err(DropReason::Headroom));
        assert_eq!((pg.ing, pg.hdrm, mmu.switches[0].used), (21_000, 500, 21_500));
        // Releasing 1,000 B: 500 from headroom, 500 from shared.
        mmu.release(0, &mut pg, 1_000);
        assert_eq!((pg.ing, pg.hdrm, mmu.switches[0].shared_used), (20_500, 0, 19_500));
    }

    #[test]
    fn a_lossy_group_drops_above_half_the_free_pool() {
        let mut mmu = one_switch(None);
        let mut pg = IngressPg::default();
        // Free pool 784,000: a lossy group may hold 392,000 B above its reserve.
        assert_eq!(mmu.admit(0, &mut pg, 0, false, 1_000 + 260_000), Ok(()));
        // Now free = 524,000, half = 262,000: 260,000 + 2,000 fits, one byte more does not.
        assert_eq!(mmu.admit(0, &mut pg, 0, false, 2_001), Err(DropReason::Buffer));
        assert_eq!(mmu.admit(0, &mut pg, 0, false, 2_000), Ok(()));
        assert_eq!(mmu.shared(0, &pg), 262_000);
    }
}
