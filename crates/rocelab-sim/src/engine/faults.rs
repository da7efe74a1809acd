//! Timed faults as they happen: links down and up (with host-port failover), route
//! withdrawals, host stalls, ECMP reseeds and hash changes. Resolving `[[fault]]` tables into these actions is `resolve_faults`.

use super::*;

impl Sim<'_> {
    #[cold]
    #[inline(never)]
    pub(super) fn on_fault(&mut self, idx: usize) {
        self.faults_due -= 1;
        match self.faults[idx].action {
            FaultAction::Link { ports: (a, b), up } => {
                for p in [a, b] {
                    if !self.router.set_link_up(p, up) {
                        continue;
                    }
                    let port = &mut self.ports[p as usize];
                    port.up = up;
                    port.st.link_state_changes += 1;
                    if !up {
                        // Packets on the cable are lost; queued packets are flushed.
                        let mut pkt = std::mem::replace(&mut self.ports[p as usize].wire_head, NONE);
                        self.ports[p as usize].wire_tail = NONE;
                        while pkt != NONE {
                            let next = self.pkts.get(pkt).next;
                            let q = self.queues.classes[self.pkts.get(pkt).class as usize].queue;
                            self.lost_on_wire(p, pkt);
                            self.drop_pkt(p, q, pkt, DropReason::LinkDown);
                            pkt = next;
                        }
                        self.flush_queues(p, None, DropReason::LinkDown);
                        let nic = self.ports[p as usize].nic;
                        if nic != NONE {
                            self.nic_failover(nic);
                        }
                    } else {
                        self.kick(p);
                        // A host port is back: QPs stranded on its host's dead ports move here.
                        let nic = self.ports[p as usize].nic;
                        if nic != NONE {
                            let host = NodeId(self.host.nics[nic as usize].node);
                            for n in self.router.nics_of(host) {
                                if !self.ports[self.host.nics[n as usize].port as usize].up {
                                    self.nic_failover(n);
                                }
                            }
                        }
                    }
                }
                self.reconverge([a, b]);
            }
            FaultAction::Route { ports: (a, b), withdrawn } => {
                // Only routing changes: the wire, its queues and PFC carry on, so what is
                // already queued on the link drains and nothing is lost.
                for p in [a, b] {
                    self.router.set_withdrawn(p, withdrawn);
                }
                self.reconverge([a, b]);
            }
            FaultAction::Host { host, stall: true } => {
                for n in self.router.nics_of(host) {
                    self.host.nics[n as usize].stalled = true;
                }
            }
            FaultAction::Host { host, stall: false } => {
                for n in self.router.nics_of(host) {
                    self.host.nics[n as usize].stalled = false;
                    let port = self.host.nics[n as usize].port;
                    while let Some(pkt) = self.host.nics[n as usize].rx_q.pop_front() {
                        self.host_released(port, pkt);
                        self.host_receive(n, pkt);
                    }
                    self.host.nics[n as usize].rx_bytes = 0;
                    // (No pause on InfiniBand: nothing to lift there.)
                    for prio in 0..8u8 {
                        if self.host.nics[n as usize].rx_xoff[prio as usize] {
                            self.host.nics[n as usize].rx_xoff[prio as usize] = false;
                            self.send_pfc(port, prio, 0);
                        }
                    }
                }
            }
            FaultAction::Reseed { switch, seed } => {
                self.router.reseed(switch, seed);
            }
            FaultAction::HashFields { mask } => {
                // The hash is the QP's, carried by its packets: recompute it from the stored
                // source port. Packets already in flight keep the old one (as packets already
                // past a switch keep the path it chose).
                self.router.set_hash_fields(mask);
                for q in &mut self.host.qps {
                    q.hash = self.router.flow_hash(q.src, q.dst, q.sport as u32);
                }
            }
        }
    }

    /// A host port went down: its QPs, as senders and as receivers, and its queued ACKs and
    /// CNPs move to another port of the host that is up, as mlx5 RoCE LAG moves a QP's tx
    /// affinity when a port fails. A host with no other live port keeps them (they wait for
    /// the link to return).
    #[cold]
    #[inline(never)]
    pub(super) fn nic_failover(&mut self, dead: u32) {
        let live = self.router.live_nic(dead);
        if live == dead {
            return;
        }
        let moved = std::mem::take(&mut self.host.nics[dead as usize].active);
        for &qi in &moved {
            self.host.qps[qi as usize].src_nic = live;
        }
        self.host.nics[live as usize].active.extend(moved);
        for q in &mut self.host.qps {
            if q.dst_nic == dead {
                q.dst_nic = live;
            }
        }
        let (cnps, acks) = {
            let d = &mut self.host.nics[dead as usize];
            (std::mem::take(&mut d.cnp_q), std::mem::take(&mut d.ack_q))
        };
        let l = &mut self.host.nics[live as usize];
        l.cnp_q.extend(cnps);
        l.ack_q.extend(acks);
        self.nic_try_send(live);
    }
}
