//! PFC (802.1Qbb): XOFF when a priority group crosses its threshold, refreshes while it stays
//! congested, XON below the resume offset; pause state on the egress side; the PFC watchdog;
//! flushing a port's queues.

use super::*;

impl Sim<'_> {
    #[inline]
    pub(super) fn check_pause(&mut self, sw: u32, in_port: u32, prio: u8) {
        let ip = &self.ports[in_port as usize];
        if ip.xoff[prio as usize] {
            return;
        }
        let thr = self.pfc_threshold(sw);
        if ip.pg[prio as usize].hdrm > 0 || self.shared_of(sw, in_port, prio) >= thr {
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
        self.q.push(t, Ev::PfcArrive { from: port, prio, quanta });
    }

    #[inline]
    pub(super) fn check_resume(&mut self, sw: u32, in_port: u32, prio: u8) {
        let ip = &self.ports[in_port as usize];
        if !ip.xoff[prio as usize] || ip.pg[prio as usize].hdrm > 0 {
            return;
        }
        let shared = self.shared_of(sw, in_port, prio);
        let s = &self.switches[sw as usize];
        let resume = match s.static_xoff {
            Some((_, xon)) => shared <= xon,
            None => shared == 0 || shared + s.resume_offset <= self.pfc_threshold(sw),
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
        let still = if p.sw != NONE { p.xoff[pi] } else { self.nics[p.nic as usize].rx_xoff[pi] };
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
            t.pause[pi].until = now + dur;
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
            t.pause[pi].until = now;
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
                if p.sw == NONE || p.pause[pi].wd_until > now {
                    continue;
                }
                let paused = p.pause[pi].until > now && p.paused_since[pi] != SimTime::MAX;
                let has_queued =
                    (0..8).any(|q| self.queue_prio_mask[q] & (1 << prio) != 0 && !p.queues[q].ring.is_empty());
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
        if !self.done() {
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
                if self.queue_prio_mask[q] & (1 << pr) == 0 {
                    continue;
                }
            }
            self.ports[port as usize].nonempty &= !(1 << q);
            while let Some(pkt) = self.ports[port as usize].queues[q].ring.pop_front() {
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
