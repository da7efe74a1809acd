//! PFC (802.1Qbb): XOFF when a priority group crosses its threshold, refreshes while it stays
//! congested, XON below the resume offset; pause state on the egress side; the PFC watchdog;
//! flushing a port's queues.

use super::mmu::{dynamic_xon_due, static_xon_due, xoff_due};
use super::*;

impl Sim<'_> {
    #[inline]
    pub(super) fn check_pause(&mut self, sw: u32, in_port: u32, prio: u8) {
        let ip = &self.ports[in_port as usize];
        if ip.xoff[prio as usize] {
            return;
        }
        let thr = self.pfc_threshold(sw);
        if xoff_due(ip.pg[prio as usize].hdrm, self.shared_of(sw, in_port, prio), thr) {
            let ip = &mut self.ports[in_port as usize];
            ip.xoff[prio as usize] = true;
            self.send_pause(in_port, prio);
        }
    }

    pub(super) fn pause_quanta(&self) -> u16 {
        self.m.qos.pfc.pause_quanta.unwrap_or(u16::MAX)
    }

    /// Half the pause time: how often XOFF is re-sent while the priority stays congested.
    pub(super) fn refresh_period(&self, port: u32) -> SimTime {
        let dur = self.ports[port as usize].speed.serialize(self.pause_quanta() as u64 * 64);
        SimTime(dur.0 / 2).max(SimTime(1))
    }

    /// Sends XOFF out of `port` (toward its peer); keeps one refresh timer pending.
    pub(super) fn send_pause(&mut self, port: u32, prio: u8) {
        let quanta = self.pause_quanta();
        self.send_pfc(port, prio, quanta);
        let at = self.now + self.refresh_period(port);
        let p = &mut self.ports[port as usize];
        p.xoff_sent_at[prio as usize] = self.now;
        if !p.refresh_pending[prio as usize] {
            p.refresh_pending[prio as usize] = true;
            self.q.push(at, Ev::PauseRefresh { port, prio });
        }
    }

    /// Sends a PFC frame out of `port`. Like a real MAC, it cannot preempt the frame being
    /// serialized: it goes out right after it, ahead of any queued data, and takes its own
    /// 84 bytes of wire time (the next data frame waits for it). That wait is the "one MTU at
    /// the receiver" term of the headroom formula, so the engine needs the headroom the
    /// formula asks for.
    pub(super) fn send_pfc(&mut self, port: u32, prio: u8, quanta: u16) {
        let now = self.now;
        let p = &mut self.ports[port as usize];
        p.st.pfc_tx[prio as usize] += 1;
        if !p.up {
            return;
        }
        let start = p.busy_until.max(now);
        p.busy_until = start + ser_time(p, PFC_WIRE);
        let t = p.busy_until + p.delay;
        if self.ships(port) {
            self.ship_pfc(t, port, prio, quanta);
        } else {
            self.q.push(t, Ev::PfcArrive { from: port, prio, quanta });
        }
    }

    #[inline]
    pub(super) fn check_resume(&mut self, sw: u32, in_port: u32, prio: u8) {
        let ip = &self.ports[in_port as usize];
        if !ip.xoff[prio as usize] || ip.pg[prio as usize].hdrm > 0 {
            return;
        }
        let shared = self.shared_of(sw, in_port, prio);
        let s = &self.mmu.switches[sw as usize];
        let resume = match s.static_xoff {
            Some((_, xon)) => static_xon_due(shared, xon),
            None => dynamic_xon_due(shared, s.resume_offset, self.pfc_threshold(sw)),
        };
        if resume {
            let ip = &mut self.ports[in_port as usize];
            ip.xoff[prio as usize] = false;
            self.send_pfc(in_port, prio, 0);
        }
    }

    pub(super) fn on_pause_refresh(&mut self, port: u32, prio: u8) {
        let pi = prio as usize;
        let p = &mut self.ports[port as usize];
        p.refresh_pending[pi] = false;
        let still = if p.sw != NONE { p.xoff[pi] } else { self.host.nics[p.nic as usize].rx_xoff[pi] };
        if !still {
            return;
        }
        let due = self.ports[port as usize].xoff_sent_at[pi] + self.refresh_period(port);
        if self.now >= due {
            self.send_pause(port, prio);
        } else {
            self.ports[port as usize].refresh_pending[pi] = true;
            self.q.push(due, Ev::PauseRefresh { port, prio });
        }
    }

    pub(super) fn on_pfc(&mut self, from: u32, prio: u8, quanta: u16) {
        let target = self.ports[from as usize].peer;
        let now = self.now;
        self.notify(Observed::PfcReceived { time: now, port: PortId(target), priority: prio, pause: quanta > 0 });
        let t = &mut self.ports[target as usize];
        t.st.pfc_rx[prio as usize] += 1;
        if t.nic != NONE {
            // A NIC honours pauses only on priorities it has PFC enabled for.
            let prof = self.m.nic_of(NodeId(t.node));
            if prof.qos.pfc_mask & (1 << prio) == 0 {
                return;
            }
        }
        let pi = prio as usize;
        let was_paused = t.pause[pi].until > now;
        if quanta > 0 {
            let dur = t.speed.serialize(quanta as u64 * 64);
            t.pause_until(prio, now + dur, now);
            if !was_paused {
                t.paused_since[pi] = now;
            }
            if !t.expire_pending[pi] {
                t.expire_pending[pi] = true;
                self.q.push(now + dur, Ev::PauseExpire { port: target, prio });
            }
        } else if was_paused {
            t.st.paused_ps[pi] += (now - t.paused_since[pi]).0;
            t.paused_since[pi] = SimTime::MAX;
            t.pause_until(prio, now, now);
            self.kick(target);
        }
    }

    pub(super) fn on_pause_expire(&mut self, port: u32, prio: u8) {
        let now = self.now;
        let t = &mut self.ports[port as usize];
        let pi = prio as usize;
        t.expire_pending[pi] = false;
        if t.pause[pi].until > now {
            // Refreshed since this timer was set: wait for the new expiry.
            t.expire_pending[pi] = true;
            let at = t.pause[pi].until;
            self.q.push(at, Ev::PauseExpire { port, prio });
            return;
        }
        t.paused &= !(1 << prio);
        if t.paused_since[pi] != SimTime::MAX {
            t.st.paused_ps[pi] += (now - t.paused_since[pi]).0;
            t.paused_since[pi] = SimTime::MAX;
            self.kick(port);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn on_watchdog(&mut self) {
        let now = self.now;
        let wd = self.m.qos.watchdog.clone();
        for port in 0..self.ports.len() as u32 {
            for prio in 0..8u8 {
                if !self.m.qos.pfc_enabled(prio) {
                    continue;
                }
                let p = &self.ports[port as usize];
                let pi = prio as usize;
                if p.sw == NONE || p.pause[pi].wd_until > now || !self.owns_node(p.node) {
                    continue;
                }
                let paused = p.pause[pi].until > now && p.paused_since[pi] != SimTime::MAX;
                let has_queued =
                    (0..8).any(|q| self.queues.prio_mask[q] & (1 << prio) != 0 && !p.queues[q].ring.is_empty());
                if paused && has_queued && now.0 >= p.paused_since[pi].0 + wd.detection.0 {
                    self.ports[port as usize].st.storms[pi] += 1;
                    self.stats.storms += 1;
                    match wd.action {
                        WatchdogAction::Alert => {}
                        WatchdogAction::Forward | WatchdogAction::Drop => {
                            let drop = wd.action == WatchdogAction::Drop;
                            let p = &mut self.ports[port as usize];
                            p.pause[pi].wd_until = now + wd.restoration;
                            p.wd_drop[pi] = drop;
                            if drop {
                                self.flush_queues(port, Some(prio), DropReason::Watchdog);
                            } else {
                                self.kick(port);
                            }
                        }
                    }
                }
            }
        }
        if !self.done() || self.part.is_some() {
            // (A partition cannot tell that the whole run is done: it polls until the run
            // stops.)
            self.q.push(now + wd.poll, Ev::WatchdogPoll);
        }
    }

    /// Drops queued packets of a port (all, or those of one priority), releasing the buffer.
    #[cold]
    #[inline(never)]
    pub(super) fn flush_queues(&mut self, port: u32, prio: Option<u8>, reason: DropReason) {
        let sw = self.ports[port as usize].sw;
        for q in 0..8 {
            if let Some(pr) = prio {
                if self.queues.prio_mask[q] & (1 << pr) == 0 {
                    continue;
                }
            }
            self.ports[port as usize].nonempty &= !(1 << q);
            while let Some(pkt) = self.ports[port as usize].queues[q].ring.pop_front(&self.pkts) {
                let (size, in_port, in_prio) = {
                    let p = self.pkts.get(pkt);
                    (p.wire_bytes as u64, p.in_port, p.in_prio)
                };
                self.ports[port as usize].queues[q].bytes -= size;
                if sw != NONE {
                    self.release(sw, in_port, in_prio, size);
                }
                self.drop_pkt(port, q as u8, pkt, reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! PFC against thresholds from the configuration and pause times from 802.3's quantum
    //! (512 bit times).
    use super::super::test_support::{idle_sim as sim, model};
    use super::*;

    /// One switch, h0 at 100 Gb/s and h1 at 400 Gb/s; default classes (RoCE on priority 3,
    /// lossless); static XOFF 20,000 B / XON 10,000 B; XOFF frames carry 1,000 quanta; the
    /// watchdog (if `watchdog`) drops after 1 ms paused and restores for 2 ms.
    fn star(watchdog: bool) -> Model {
        let text = format!(
            r#"[fabric]
name = "pfc"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {{ name = "h0", kind = "host" }}, {{ name = "h1", kind = "host" }} ]
link = [ {{ a = "h0", b = "sw0", speed_gbps = 100, length_m = 2 }}, {{ a = "h1", b = "sw0", speed_gbps = 400, length_m = 2 }} ]
[qos.pfc]
xoff_bytes = 20000
xon_bytes = 10000
pause_quanta = 1000
[qos.pfc_watchdog]
detection_ms = 1
restoration_ms = 2
poll_ms = 1
enabled = {watchdog}
action = "drop"
"#
        );
        model("pfc.toml", &text)
    }

    /// The switch port facing the host of that port speed (Gb/s).
    fn switch_port(sim: &Sim, gbps: u64) -> u32 {
        sim.ports.iter().position(|p| p.sw != NONE && p.speed.0 == gbps * 1_000_000_000).unwrap() as u32
    }

    /// Drains the event queue, the clock following it as in the event loop: the PFC frames
    /// (sender port, quanta) and refresh timers (time).
    fn drain(sim: &mut Sim) -> (Vec<(u32, u16)>, Vec<SimTime>) {
        let (mut frames, mut refresh) = (Vec::new(), Vec::new());
        while let Some((t, ev)) = sim.q.pop() {
            sim.now = t;
            match ev {
                Ev::PfcArrive { from, prio, quanta } => {
                    assert_eq!(prio, 3);
                    frames.push((from, quanta));
                }
                Ev::PauseRefresh { prio, .. } => {
                    assert_eq!(prio, 3);
                    refresh.push(t);
                }
                _ => {}
            }
        }
        (frames, refresh)
    }

    #[test]
    fn xoff_exactly_when_shared_use_reaches_xoff_and_xon_when_it_falls_to_xon() {
        let m = star(false);
        let mut s = sim(&m);
        assert_eq!(s.q.len(), 0, "no flows, no watchdog: nothing scheduled");
        let ip = switch_port(&s, 100);
        let sw = s.ports[ip as usize].sw;
        assert_eq!(s.pfc_threshold(sw), 20_000, "static XOFF");
        let r = s.mmu.switches[sw as usize].reserve;
        assert_eq!(r, 4_096, "ns3-reference reserve");
        // Shared use is what the priority group holds above its reserve.
        s.ports[ip as usize].pg[3].ing = r + 19_999;
        s.check_pause(sw, ip, 3);
        assert!(!s.ports[ip as usize].xoff[3]);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 0, "1 byte below XOFF: no pause");
        s.ports[ip as usize].pg[3].ing = r + 20_000;
        s.check_pause(sw, ip, 3);
        assert!(s.ports[ip as usize].xoff[3]);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 1);
        s.check_pause(sw, ip, 3);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 1, "one XOFF, not one per packet");
        assert_eq!(drain(&mut s).0, vec![(ip, 1_000)], "XOFF upstream with the configured quanta");
        // Falling: 1 byte above XON keeps the pause, XON itself resumes.
        s.ports[ip as usize].pg[3].ing = r + 10_001;
        s.check_resume(sw, ip, 3);
        assert!(s.ports[ip as usize].xoff[3]);
        s.ports[ip as usize].pg[3].ing = r + 10_000;
        s.check_resume(sw, ip, 3);
        assert!(!s.ports[ip as usize].xoff[3]);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 2);
        assert_eq!(drain(&mut s).0, vec![(ip, 0)], "XON is a zero-quanta frame");
        // Headroom in use pauses whatever the shared use, and holds the pause.
        s.ports[ip as usize].pg[3] = IngressPg { ing: 0, hdrm: 1 };
        s.check_pause(sw, ip, 3);
        assert!(s.ports[ip as usize].xoff[3]);
        s.check_resume(sw, ip, 3);
        assert!(s.ports[ip as usize].xoff[3], "no XON while headroom holds bytes");
    }

    #[test]
    fn a_pause_lasts_quanta_times_512_bit_times_at_the_port_speed() {
        let m = star(false);
        let mut s = sim(&m);
        assert_eq!(s.q.len(), 0, "no flows, no watchdog: nothing scheduled");
        let p100 = switch_port(&s, 100);
        let p400 = switch_port(&s, 400);
        let t0 = SimTime(5_000_000);
        s.now = t0;
        // 1,000 quanta · 512 bits / 100 Gb/s = 5.12 µs.
        s.on_pfc(s.ports[p100 as usize].peer, 3, 1_000);
        let until = s.ports[p100 as usize].pause[3].until;
        assert_eq!(until, t0 + SimTime(5_120_000));
        assert!(s.is_paused(p100, 3));
        assert!(!s.is_paused(p100, 2), "only the paused priority");
        assert_eq!(s.ports[p100 as usize].st.pfc_rx[3], 1);
        // 65,535 quanta · 512 bits / 400 Gb/s = 83.8848 µs.
        s.on_pfc(s.ports[p400 as usize].peer, 3, 65_535);
        assert_eq!(s.ports[p400 as usize].pause[3].until, t0 + SimTime(83_884_800));
        // Refreshes go out at half the pause time.
        assert_eq!(s.refresh_period(p100), SimTime(2_560_000));
        // The expiry: paused 5.12 µs in all, no longer paused.
        let expiries: Vec<SimTime> = std::iter::from_fn(|| s.q.pop())
            .filter_map(|(t, ev)| matches!(ev, Ev::PauseExpire { port, .. } if port == p100).then_some(t))
            .collect();
        assert_eq!(expiries, vec![until]);
        s.now = SimTime(until.0 - 1);
        assert!(s.is_paused(p100, 3));
        s.now = until;
        assert!(!s.is_paused(p100, 3));
        s.on_pause_expire(p100, 3);
        assert_eq!(s.ports[p100 as usize].st.paused_ps[3], 5_120_000);
        assert_eq!(s.ports[p100 as usize].paused_since[3], SimTime::MAX);
    }

    #[test]
    fn xon_ends_a_pause_early_and_the_later_expiry_counts_nothing_more() {
        let m = star(false);
        let mut s = sim(&m);
        assert_eq!(s.q.len(), 0, "no flows, no watchdog: nothing scheduled");
        let p = switch_port(&s, 100);
        let from = s.ports[p as usize].peer;
        s.now = SimTime(5_000_000);
        s.on_pfc(from, 3, 1_000);
        s.now = SimTime(6_000_000);
        s.on_pfc(from, 3, 0);
        assert!(!s.is_paused(p, 3));
        assert_eq!(s.ports[p as usize].st.paused_ps[3], 1_000_000, "paused from 5 µs to 6 µs");
        s.now = SimTime(10_120_000);
        s.on_pause_expire(p, 3);
        assert_eq!(s.ports[p as usize].st.paused_ps[3], 1_000_000);
        // A refresh before expiry extends the pause: 1,000 quanta from 7 µs, to 12.12 µs.
        s.now = SimTime(7_000_000);
        s.on_pfc(from, 3, 1_000);
        s.now = SimTime(9_000_000);
        s.on_pfc(from, 3, 1_000);
        assert_eq!(s.ports[p as usize].pause[3].until, SimTime(14_120_000));
        s.now = SimTime(12_120_000);
        s.on_pause_expire(p, 3);
        assert!(s.is_paused(p, 3), "the first expiry is stale after a refresh");
        s.now = SimTime(14_120_000);
        s.on_pause_expire(p, 3);
        assert_eq!(s.ports[p as usize].st.paused_ps[3], 1_000_000 + 7_120_000);
    }

    #[test]
    fn xoff_is_refreshed_every_half_pause_while_congested_and_not_after_xon() {
        let m = star(false);
        let mut s = sim(&m);
        assert_eq!(s.q.len(), 0, "no flows, no watchdog: nothing scheduled");
        let ip = switch_port(&s, 100);
        let sw = s.ports[ip as usize].sw;
        let r = s.mmu.switches[sw as usize].reserve;
        s.ports[ip as usize].pg[3].ing = r + 25_000;
        s.check_pause(sw, ip, 3);
        // Half of 5.12 µs.
        let (frames, refresh) = drain(&mut s);
        assert_eq!((frames, refresh.clone()), (vec![(ip, 1_000)], vec![SimTime(2_560_000)]));
        s.now = refresh[0];
        s.on_pause_refresh(ip, 3);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 2);
        let (frames, refresh) = drain(&mut s);
        assert_eq!((frames, refresh.clone()), (vec![(ip, 1_000)], vec![SimTime(5_120_000)]));
        // Below XON before the next refresh: XON, then the refresh timer sends nothing.
        s.ports[ip as usize].pg[3].ing = r;
        s.check_resume(sw, ip, 3);
        s.now = refresh[0];
        s.on_pause_refresh(ip, 3);
        assert_eq!(s.ports[ip as usize].st.pfc_tx[3], 3, "XOFF, refresh, XON");
        assert_eq!(drain(&mut s), (vec![(ip, 0)], vec![]));
    }

    #[test]
    fn watchdog_drops_a_queue_paused_for_the_detection_time_and_ignores_pauses_while_restoring() {
        let m = star(true);
        let mut s = sim(&m);
        drain(&mut s);
        let out = switch_port(&s, 400);
        let ip = switch_port(&s, 100);
        let sw = s.ports[out as usize].sw;
        // One 1,000 B RoCE packet (priority 3, queue 3) from h0 queued toward h1, charged to
        // the reserve of h0's ingress.
        let pkt = s.pkts.alloc(Packet {
            enq_time: SimTime::ZERO,
            qp: 0,
            psn: 0,
            dst: 0,
            hash: 0,
            in_port: ip,
            next: NONE,
            next_gap: u32::MAX,
            wire_bytes: 1_000,
            payload: 1_000,
            kind: Kind::Data,
            class: 0,
            pcp: 3,
            ecn: 0,
            in_prio: 3,
        });
        s.ports[out as usize].queues[3].ring.push_back(&mut s.pkts, pkt);
        s.ports[out as usize].queues[3].bytes = 1_000;
        s.ports[out as usize].nonempty = 1 << 3;
        s.ports[ip as usize].pg[3].ing = 1_000;
        s.mmu.switches[sw as usize].used = 1_000;
        // Paused since 0, for longer than the detection time.
        s.ports[out as usize].pause_until(3, SimTime(10_000_000_000), s.now);
        s.ports[out as usize].paused_since[3] = SimTime::ZERO;
        // 1 ps short of 1 ms: no storm.
        s.now = SimTime(1_000_000_000 - 1);
        s.on_watchdog();
        assert_eq!(s.stats.storms, 0);
        assert_eq!(s.ports[out as usize].queues[3].bytes, 1_000);
        // At 1 ms: a storm; the queue is flushed, the buffer released, the pause ignored for
        // 2 ms.
        s.now = SimTime(1_000_000_000);
        s.on_watchdog();
        assert_eq!(s.stats.storms, 1);
        assert_eq!(s.ports[out as usize].st.storms[3], 1);
        assert_eq!(s.ports[out as usize].queues[3].bytes, 0);
        assert_eq!(s.ports[out as usize].st.drops[3][DropReason::Watchdog as usize], 1);
        assert_eq!(s.mmu.switches[sw as usize].used, 0);
        assert_eq!(s.ports[ip as usize].pg[3].ing, 0);
        assert_eq!(s.ports[out as usize].pause[3].wd_until, SimTime(3_000_000_000));
        assert!(!s.is_paused(out, 3), "paused by the peer, but the watchdog overrides");
        s.now = SimTime(3_000_000_000);
        assert!(s.is_paused(out, 3), "restoration over, the peer's pause holds again");
        // Nothing queued any more: no second storm.
        s.on_watchdog();
        assert_eq!(s.stats.storms, 1);
    }
}
