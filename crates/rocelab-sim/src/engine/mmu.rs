//! The switch MMU: forwarding a packet that arrives, admission against the shared pool
//! (lossless: priority-group reserve, dynamic or static XOFF threshold, then headroom; lossy:
//! the α share of the free pool), ingress accounting, and release when a packet leaves.

use super::*;

// The MMU's arithmetic, as pure functions of the numbers it reads (tested by hand below).

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

impl Sim<'_> {
    /// The XOFF threshold on a priority group's shared use: static, or the dynamic threshold
    /// (the same for every PG of a switch: it depends only on the free shared pool).
    #[inline]
    pub(super) fn pfc_threshold(&self, sw: u32) -> u64 {
        let s = &self.switches[sw as usize];
        if let Some((xoff, _)) = s.static_xoff {
            return xoff;
        }
        alpha_share(free_pool(s.buffer, s.total_hdrm, s.total_rsrv, s.shared_used), s.alpha_lossless)
    }

    #[inline]
    pub(super) fn shared_of(&self, sw: u32, port: u32, prio: u8) -> u64 {
        let r = self.switches[sw as usize].reserve;
        self.ports[port as usize].pg[prio as usize].ing.saturating_sub(r)
    }

    #[inline]
    pub(super) fn switch_arrive(&mut self, sw: u32, in_port: u32, pkt: u32) {
        let (class, dst, hash, size) = {
            let p = self.pkts.get(pkt);
            (p.class, p.dst, p.hash, p.wire_bytes as u64)
        };
        let cp = self.classes[class as usize];
        let (prio, queue) = (cp.prio, cp.queue);
        let out = self.ecmp_choose(sw, dst, hash);
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
        // Admission.
        let thr = if cp.lossless { self.pfc_threshold(sw) } else { u64::MAX };
        let s = &self.switches[sw as usize];
        let shared = self.shared_of(sw, in_port, prio);
        if cp.lossless {
            let ip = &self.ports[in_port as usize];
            if lossless_drops(ip.pg[prio as usize].hdrm, ip.headroom, shared, thr, size) {
                self.drop_pkt(in_port, queue, pkt, DropReason::Headroom);
                return;
            }
        } else {
            let limit = alpha_share(free_pool(s.buffer, s.total_hdrm, s.total_rsrv, s.shared_used), s.alpha_lossy);
            if lossy_drops(shared, limit, s.reserve, s.used, s.buffer, size) {
                self.drop_pkt(in_port, queue, pkt, DropReason::Buffer);
                return;
            }
        }
        // Ingress accounting.
        let s = &mut self.switches[sw as usize];
        let pg = &mut self.ports[in_port as usize].pg[prio as usize];
        match charge(pg.ing, size, s.reserve, cp.lossless.then_some(thr)) {
            Charge::Reserve => pg.ing += size,
            Charge::Headroom => pg.hdrm += size,
            Charge::Shared { shared } => {
                pg.ing += size;
                s.shared_used += shared;
            }
        }
        s.used += size;
        s.peak_used = s.peak_used.max(s.used);
        {
            let p = self.pkts.get_mut(pkt);
            p.in_port = in_port;
            p.in_prio = prio;
            p.enq_time = self.now;
        }
        let op = &mut self.ports[out as usize];
        op.queues[queue as usize].ring.push_back(pkt);
        op.nonempty |= 1 << queue;
        op.queues[queue as usize].bytes += size;
        if op.queues[queue as usize].bytes > op.queues[queue as usize].peak {
            op.queues[queue as usize].peak = op.queues[queue as usize].bytes;
        }
        if cp.lossless {
            self.check_pause(sw, in_port, prio);
        }
        self.switch_try_tx(out);
    }

    #[inline]
    pub(super) fn release(&mut self, sw: u32, in_port: u32, prio: u8, size: u64) {
        let s = &mut self.switches[sw as usize];
        let ip = &mut self.ports[in_port as usize];
        let pi = prio as usize;
        let (from_hdrm, from_shared) = release_split(ip.pg[pi].ing, ip.pg[pi].hdrm, s.reserve, size);
        ip.pg[pi].hdrm -= from_hdrm;
        ip.pg[pi].ing -= size - from_hdrm;
        s.shared_used -= from_shared;
        s.used -= size;
        if self.classes.iter().any(|c| c.prio == prio && c.lossless) {
            self.check_resume(sw, in_port, prio);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The MMU's arithmetic against numbers worked out by hand.
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
}
