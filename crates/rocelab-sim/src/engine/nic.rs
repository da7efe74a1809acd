//! The NIC: per-QP sending (CNPs first, then ACK/NAKs, then data round-robin among QPs, paced
//! by the DCQCN rate), the receiver (in-order delivery, ACK/NAK, CNP generation), DCQCN timers,
//! transport timeouts and go-back-N, and which of a host's ports a QP uses.

use super::*;

impl Sim<'_> {
    /// The NIC (port) of `host` for its next QP: round-robin over the host's ports.
    pub(super) fn host_nic(&mut self, host: NodeId) -> u32 {
        let n = &mut self.qps_at[host.idx()];
        let nic = self.node_nic[host.idx()] + *n % self.m.node(host).num_ports.max(1);
        *n += 1;
        self.live_nic(nic)
    }

    /// `nic`, or while its port is down the next NIC of the same host whose port is up (LAG
    /// tx affinity); `nic` itself when none is.
    pub(super) fn live_nic(&self, nic: u32) -> u32 {
        let up = |n: u32| self.ports[self.nics[n as usize].port as usize].up;
        if up(nic) {
            return nic;
        }
        let host = NodeId(self.nics[nic as usize].node);
        let all = self.nics_of(host);
        let (first, ports) = (all.start, all.end - all.start);
        (1..ports).map(|k| first + (nic - first + k) % ports).find(|&n| up(n)).unwrap_or(nic)
    }

    /// The NICs of `host` (one per port).
    pub(super) fn nics_of(&self, host: NodeId) -> std::ops::Range<u32> {
        let first = self.node_nic[host.idx()];
        first..first + self.m.node(host).num_ports
    }

    #[inline]
    pub(super) fn nic_try_send(&mut self, nic: u32) {
        let now = self.now;
        let port = self.nics[nic as usize].port;
        if !self.ports[port as usize].up || self.busy(port) {
            return;
        }
        // Control packets first: CNPs (strict), then ACK/NAKs.
        for which in 0..2 {
            let head = {
                let n = &self.nics[nic as usize];
                if which == 0 {
                    n.cnp_q.front().copied()
                } else {
                    n.ack_q.front().copied()
                }
            };
            if let Some(pkt) = head {
                if !self.is_paused(port, self.pkts.get(pkt).pcp) {
                    let n = &mut self.nics[nic as usize];
                    if which == 0 {
                        n.cnp_q.pop_front();
                    } else {
                        n.ack_q.pop_front();
                    }
                    self.put_on_wire(port, pkt);
                    return;
                }
            }
        }
        let n_active = self.nics[nic as usize].active.len();
        let mut earliest = SimTime::MAX;
        let start = self.nics[nic as usize].rr;
        for i in 0..n_active {
            let idx = (start + i) % n_active;
            let qi = self.nics[nic as usize].active[idx];
            let (pcp, has_data, next) = {
                let q = &self.qps[qi as usize];
                (q.pcp, q.snd_nxt < q.npkts && q.window_open(), q.pacer.next_send)
            };
            if !has_data || self.is_paused(port, pcp) {
                continue;
            }
            if next > now {
                earliest = earliest.min(next);
                continue;
            }
            self.nics[nic as usize].rr = (idx + 1) % n_active;
            self.send_data(nic, qi);
            return;
        }
        if earliest != SimTime::MAX {
            self.wake_nic_at(nic, earliest);
        }
    }

    /// Makes sure the NIC looks for work again at `at` (one pending wake-up per NIC).
    #[inline]
    pub(super) fn wake_nic_at(&mut self, nic: u32, at: SimTime) {
        let n = &mut self.nics[nic as usize];
        if at < n.wake_at {
            n.wake_at = at;
            n.wake_gen = n.wake_gen.wrapping_add(1);
            let gen = n.wake_gen;
            self.q.push(at, Ev::NicWake { host: nic, gen });
        }
    }

    #[inline]
    pub(super) fn send_data(&mut self, nic: u32, qi: u32) {
        let now = self.now;
        let port = self.nics[nic as usize].port;
        let prof = self.nics[nic as usize].profile;
        let q = &mut self.qps[qi as usize];
        let psn = q.snd_nxt;
        let payload = if psn + 1 == q.npkts { (q.size - psn as u64 * q.mtu as u64) as u32 } else { q.mtu };
        let wire = payload + DATA_OVERHEAD;
        if psn < q.st.max_sent_psn_plus1 {
            q.st.retransmitted_packets += 1;
            self.stats.retransmitted += 1;
        } else {
            q.st.max_sent_psn_plus1 = psn + 1;
        }
        q.snd_nxt += 1;
        let pkt = Packet {
            qp: qi,
            psn,
            wire_bytes: wire as u16,
            payload: payload as u16,
            kind: Kind::Data,
            class: q.class,
            pcp: q.pcp,
            ecn: if q.ect { ECT0 } else { NOT_ECT },
            dst: q.dst,
            hash: q.hash,
            in_port: NONE,
            next: NONE,
            next_gap: u32::MAX,
            in_prio: 0,
            enq_time: now,
        };
        // Pace by the QP's current rate (DCQCN), never faster than the port.
        // (Without congestion control the port alone paces the QP.)
        if let Some(cc) = &mut q.cc {
            cc.on_sent(wire as u64, &self.dcqcn[prof]);
            q.pacer.sent(now, wire, cc.rate_bps(), cc.line_rate_bps());
        }
        if !q.rto_armed {
            if let Some(rto) = self.m.nics[prof].retransmit_timeout {
                q.rto_armed = true;
                q.rto_gen = q.rto_gen.wrapping_add(1);
                q.last_progress = now;
                let gen = q.rto_gen;
                self.q.push(now + rto, Ev::Rto { qp: qi, gen });
            }
        }
        self.stats.data_sent += 1;
        self.stats.sent += 1;
        let id = self.pkts.alloc(pkt);
        self.put_on_wire(port, id);
    }

    #[inline]
    pub(super) fn host_arrive(&mut self, nic: u32, pkt: u32) {
        let n = &mut self.nics[nic as usize];
        if n.stalled && self.pkts.get(pkt).kind == Kind::Data {
            let size = self.pkts.get(pkt).wire_bytes as u64;
            let prof = &self.m.nics[n.profile];
            if n.rx_bytes + size > prof.rx_buffer_bytes {
                n.st.rx_discards += 1;
                let port = n.port;
                self.drop_pkt(port, self.classes[self.pkts.get(pkt).class as usize].queue, pkt, DropReason::Buffer);
                return;
            }
            n.rx_bytes += size;
            n.rx_q.push_back(pkt);
            let prio = self.pkts.get(pkt).pcp;
            if n.rx_bytes >= prof.rx_xoff_bytes && !n.rx_xoff[prio as usize] && prof.qos.pfc_mask & (1 << prio) != 0 {
                n.rx_xoff[prio as usize] = true;
                let port = n.port;
                self.send_pause(port, prio);
            }
            return;
        }
        self.host_receive(nic, pkt);
    }

    #[inline]
    pub(super) fn host_receive(&mut self, nic: u32, pkt: u32) {
        let now = self.now;
        let p = *self.pkts.get(pkt);
        self.pkts.free(pkt);
        self.stats.delivered += 1;
        let qi = p.qp;
        match p.kind {
            Kind::Data => {
                self.stats.data_delivered += 1;
                let prof_i = self.nics[nic as usize].profile;
                let prof = &self.m.nics[prof_i];
                // Notification point: CE-marked packet -> CNP, at most one per interval per QP.
                if p.ecn == CE {
                    self.nics[nic as usize].st.ecn_marked_rx += 1;
                    if prof.qos.ecn_np_mask & (1 << p.pcp) != 0 {
                        let q = &mut self.qps[qi as usize];
                        let iv = self.dcqcn[prof_i].cnp_interval;
                        if q.last_cnp.is_none_or(|t| now >= t + iv) {
                            q.last_cnp = Some(now);
                            let delay = self.dcqcn[prof_i].cnp_delay;
                            if delay == SimTime::ZERO {
                                self.send_cnp(qi);
                            } else {
                                self.q.push(now + delay, Ev::CnpSend { qp: qi });
                            }
                        }
                    }
                }
                let ack_iv = self.opts.ack_interval.max(1);
                let mut message_done = None;
                let q = &mut self.qps[qi as usize];
                if p.psn == q.rcv_nxt {
                    q.rcv_nxt += 1;
                    q.nak_for = NONE;
                    q.st.bytes_delivered += p.payload as u64;
                    self.stats.payload_delivered += p.payload as u64;
                    q.since_ack += 1;
                    let last = q.rcv_nxt == q.npkts;
                    if last && q.finish.is_none() {
                        q.finish = Some(now);
                        let fl = q.flow as usize;
                        // (Zero already when another QP of the flow gave up: reported then.)
                        if self.flow_rx_left[fl] > 0 {
                            self.flow_rx_left[fl] -= 1;
                            if self.flow_rx_left[fl] == 0 && !self.flow_failed[fl] {
                                message_done = Some(fl as u32);
                            }
                        }
                    }
                    if last || q.since_ack >= ack_iv {
                        q.since_ack = 0;
                        let psn = q.rcv_nxt - 1;
                        self.send_ctrl(qi, Kind::Ack, psn);
                    }
                } else if p.psn > q.rcv_nxt {
                    q.st.out_of_sequence += 1;
                    if q.nak_for != q.rcv_nxt {
                        q.nak_for = q.rcv_nxt;
                        let psn = q.rcv_nxt;
                        self.send_ctrl(qi, Kind::Nak, psn);
                    }
                } else {
                    q.st.duplicate += 1;
                    let psn = q.rcv_nxt - 1;
                    self.send_ctrl(qi, Kind::Ack, psn);
                }
                if let Some(flow) = message_done {
                    self.notify(Observed::MessageDone { time: now, flow });
                    if self.deliveries_wanted {
                        self.deliveries_due += 1;
                        self.q.push(now, Ev::Delivered { flow });
                    }
                }
            }
            Kind::Ack | Kind::Nak => {
                let q = &mut self.qps[qi as usize];
                let new_una = if p.kind == Kind::Ack { p.psn + 1 } else { p.psn };
                if new_una > q.snd_una {
                    q.snd_una = new_una;
                    q.last_progress = now;
                    q.timeouts_in_row = 0;
                }
                // An ACK delayed past a timeout can acknowledge more than was resent.
                q.snd_nxt = q.snd_nxt.max(q.snd_una);
                if p.kind == Kind::Nak {
                    q.st.naks += 1;
                    // (A stale NAK for a PSN already acknowledged rewinds nothing.)
                    if q.snd_nxt > p.psn && p.psn >= q.snd_una {
                        q.snd_nxt = p.psn;
                    }
                }
                let src_nic = q.src_nic;
                if q.snd_una >= q.npkts && q.sender_done.is_none() {
                    q.sender_done = Some(now);
                    q.rto_gen = q.rto_gen.wrapping_add(1);
                    self.qps_left -= 1;
                    self.active_qps -= 1;
                    let list = &mut self.nics[src_nic as usize].active;
                    if let Some(pos) = list.iter().position(|x| *x == qi) {
                        list.remove(pos);
                    }
                }
                // Kick the QP's own NIC: on a multi-port host the ACK may arrive on another port.
                self.nic_try_send(src_nic);
            }
            Kind::Cnp => {
                self.nics[nic as usize].st.cnp_received += 1;
                let prof = self.nics[nic as usize].profile;
                let q = &mut self.qps[qi as usize];
                q.st.cnps += 1;
                if let Some(cc) = &mut q.cc {
                    let todo = cc.on_cnp(now, &self.dcqcn[prof]);
                    let gen = cc.increase_gen();
                    self.apply_todo(qi, todo, gen);
                }
            }
        }
    }

    /// After a DCQCN step: re-time the QP's pending send at its new rate (up or down), wake
    /// its NIC if that send moved earlier, and arm the timer the step asks for.
    pub(super) fn apply_todo(&mut self, qp: u32, todo: Todo, gen: u32) {
        let q = &mut self.qps[qp as usize];
        if let Some(cc) = &q.cc {
            if let Some(at) = q.pacer.retime(cc.rate_bps(), cc.line_rate_bps()) {
                let (nic, at) = (q.src_nic, at.max(self.now));
                self.wake_nic_at(nic, at);
            }
        }
        match todo {
            Todo::Nothing => {}
            Todo::ArmIncrease(t) => self.q.push(t, Ev::RateIncrease { qp, gen }),
            Todo::ArmReduce(t) => self.q.push(t, Ev::RateReduce { qp }),
        }
    }

    pub(super) fn on_rate_increase(&mut self, qi: u32, gen: u32) {
        let now = self.now;
        let prof = self.nics[self.qps[qi as usize].src_nic as usize].profile;
        let q = &mut self.qps[qi as usize];
        if q.sender_done.is_some() {
            return;
        }
        if let Some(cc) = &mut q.cc {
            if cc.increase_gen() != gen {
                return;
            }
            let todo = cc.on_increase_timer(now, &self.dcqcn[prof]);
            let g = cc.increase_gen();
            self.apply_todo(qi, todo, g);
        }
    }

    pub(super) fn on_rate_reduce(&mut self, qi: u32) {
        let now = self.now;
        let prof = self.nics[self.qps[qi as usize].src_nic as usize].profile;
        let q = &mut self.qps[qi as usize];
        if let Some(cc) = &mut q.cc {
            let todo = cc.on_reduce_check(now, &self.dcqcn[prof]);
            let g = cc.increase_gen();
            self.apply_todo(qi, todo, g);
        }
    }

    pub(super) fn on_rto(&mut self, qi: u32, gen: u32) {
        let now = self.now;
        let prof = self.nics[self.qps[qi as usize].src_nic as usize].profile;
        let nic = &self.m.nics[prof];
        let (rto, retry_cnt) = (nic.retransmit_timeout.expect("armed only with a timeout"), nic.retry_cnt);
        let q = &mut self.qps[qi as usize];
        if q.rto_gen != gen || q.sender_done.is_some() {
            return;
        }
        if q.snd_una >= q.snd_nxt && q.snd_nxt >= q.npkts {
            q.rto_armed = false;
            return;
        }
        if q.snd_una >= q.snd_nxt {
            // Nothing outstanding (paced or paused): wait.
            q.last_progress = now;
        }
        if now >= q.last_progress + rto {
            q.st.timeouts += 1;
            q.timeouts_in_row += 1;
            if q.timeouts_in_row > retry_cnt as u32 {
                // Like an RC QP whose retry count is exhausted: the QP goes to the error state.
                q.st.failed = true;
                q.sender_done = Some(now);
                self.qps_left -= 1;
                self.active_qps -= 1;
                let (src_nic, fl) = (q.src_nic, q.flow as usize);
                // The workload hears once that the message will not arrive.
                if !self.flow_failed[fl] && self.flow_rx_left[fl] > 0 {
                    self.flow_failed[fl] = true;
                    self.flow_rx_left[fl] = 0;
                    if self.deliveries_wanted {
                        self.deliveries_due += 1;
                        self.q.push(now, Ev::Delivered { flow: fl as u32 });
                    }
                }
                let list = &mut self.nics[src_nic as usize].active;
                if let Some(pos) = list.iter().position(|x| *x == qi) {
                    list.remove(pos);
                }
                return;
            }
            q.snd_nxt = q.snd_una;
            q.last_progress = now;
            self.q.push(now + rto, Ev::Rto { qp: qi, gen });
            let nic = q.src_nic;
            self.nic_try_send(nic);
        } else {
            let at = q.last_progress + rto;
            self.q.push(at, Ev::Rto { qp: qi, gen });
        }
    }

    /// A control packet (ACK/NAK/CNP) from the receiver of QP `qi` back to its sender.
    pub(super) fn ctrl_packet(&self, qi: u32, kind: Kind, psn: u32, class: u8, pcp: u8, wire: u32) -> Packet {
        let q = &self.qps[qi as usize];
        Packet {
            qp: qi,
            psn,
            wire_bytes: wire as u16,
            payload: 0,
            kind,
            class,
            pcp,
            ecn: NOT_ECT,
            dst: q.src,
            hash: q.hash,
            in_port: NONE,
            next: NONE,
            next_gap: u32::MAX,
            in_prio: 0,
            enq_time: self.now,
        }
    }

    #[inline]
    pub(super) fn send_ctrl(&mut self, qi: u32, kind: Kind, psn: u32) {
        let q = &self.qps[qi as usize];
        let (nic, class, pcp) = (q.dst_nic, q.class, q.pcp);
        let pkt = self.ctrl_packet(qi, kind, psn, class, pcp, ACK_WIRE);
        self.stats.sent += 1;
        let id = self.pkts.alloc(pkt);
        self.nics[nic as usize].ack_q.push_back(id);
        self.nic_try_send(nic);
    }

    pub(super) fn send_cnp(&mut self, qi: u32) {
        let nic = self.qps[qi as usize].dst_nic;
        let prof = &self.m.nics[self.nics[nic as usize].profile];
        let cnp_class = match self.m.qos.trust {
            rocelab_model::config::Trust::Dscp => self.m.qos.dscp_to_class[prof.qos.cnp_dscp as usize],
            rocelab_model::config::Trust::Pcp => self.m.qos.priority_to_class[prof.qos.cnp_priority as usize],
        };
        let pkt = self.ctrl_packet(qi, Kind::Cnp, 0, cnp_class, prof.qos.cnp_priority, CNP_WIRE);
        self.stats.sent += 1;
        self.nics[nic as usize].st.cnp_sent += 1;
        let flow = self.qps[qi as usize].flow;
        self.notify(Observed::CnpSent { time: self.now, flow });
        let id = self.pkts.alloc(pkt);
        self.nics[nic as usize].cnp_q.push_back(id);
        self.nic_try_send(nic);
    }
}
