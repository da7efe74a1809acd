//! The switch MMU: forwarding a packet that arrives, admission against the shared pool
//! (lossless: priority-group reserve, dynamic or static XOFF threshold, then headroom; lossy:
//! the α share of the free pool), ingress accounting, and release when a packet leaves.

use super::*;

impl Sim<'_> {
    /// The XOFF threshold on a priority group's shared use: static, or the dynamic threshold
    /// (the same for every PG of a switch: it depends only on the free shared pool).
    #[inline]
    pub(super) fn pfc_threshold(&self, sw: u32) -> u64 {
        let s = &self.switches[sw as usize];
        if let Some((xoff, _)) = s.static_xoff {
            return xoff;
        }
        let free = s.buffer.saturating_sub(s.total_hdrm + s.total_rsrv + s.shared_used);
        (free as f64 * s.alpha_lossless) as u64
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
        if cp.lossless {
            let ip = &self.ports[in_port as usize];
            if ip.pg[prio as usize].hdrm + size > ip.headroom && self.shared_of(sw, in_port, prio) + size > thr {
                self.drop_pkt(in_port, queue, pkt, DropReason::Headroom);
                return;
            }
        } else {
            let free = s.buffer.saturating_sub(s.total_hdrm + s.total_rsrv + s.shared_used);
            let limit = (free as f64 * s.alpha_lossy) as u64;
            if self.shared_of(sw, in_port, prio) + size > limit.max(s.reserve) || s.used + size > s.buffer {
                self.drop_pkt(in_port, queue, pkt, DropReason::Buffer);
                return;
            }
        }
        // Ingress accounting.
        let s = &mut self.switches[sw as usize];
        let ip = &mut self.ports[in_port as usize];
        let new = ip.pg[prio as usize].ing + size;
        if new <= s.reserve {
            ip.pg[prio as usize].ing = new;
        } else if cp.lossless && new - s.reserve > thr {
            ip.pg[prio as usize].hdrm += size;
        } else {
            ip.pg[prio as usize].ing = new;
            s.shared_used += size.min(new - s.reserve);
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
        let from_hdrm = ip.pg[pi].hdrm.min(size);
        let from_shared = (size - from_hdrm).min(ip.pg[pi].ing.saturating_sub(s.reserve));
        ip.pg[pi].hdrm -= from_hdrm;
        ip.pg[pi].ing -= size - from_hdrm;
        s.shared_used -= from_shared;
        s.used -= size;
        if self.classes.iter().any(|c| c.prio == prio && c.lossless) {
            self.check_resume(sw, in_port, prio);
        }
    }
}
