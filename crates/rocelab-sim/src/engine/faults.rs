//! Timed faults as they happen: links down and up (with host-port failover), route
//! withdrawals, switch reboots (cold: every link down, routes back after the ports; warm: the
//! data plane frozen, links and routes kept), host stalls and slow drains, a NIC's new
//! settings, ECMP reseeds and hash changes.
//!
//! `resolve_faults` turns the loader's resolution of the `[[fault]]` tables (`intent::Fault`:
//! names, links and times already checked and bounded at load, with their located errors) into
//! these actions; it checks nothing again.

use super::*;
use rocelab_model::config::FaultKind;
use rocelab_model::events::RebootMode;
use rocelab_model::intent;

/// Bytes of headers a frame carries beyond its MTU of payload, at most (RoCEv2 over Ethernet
/// with VLAN, as the wire counts it), for the drain's XON hysteresis.
const HEADER_ROOM: u64 = 128;

/// How long an application takes to set up a new RC connection once its NIC is back (RDMA
/// CM: address and route resolution, then the REQ/REP/RTU exchange, and the QP's creation
/// and moves to RTS): 10 ms. KRCORE (Wei et al., USENIX ATC 2022, arXiv 2201.11578) puts a
/// verbs connection at hundreds to thousands of times its own 10 µs, 1 to 10 ms; the upper
/// end, since a fleet reconnecting after a reset queues on its CM agents.
pub const RECONNECT: SimTime = SimTime(10_000_000_000);

/// What an application resends after reconnecting: from the start of the work request that
/// holds the first unacknowledged byte, its work requests being 512 KiB (NCCL's default: a
/// 4 MiB buffer per channel, `NCCL_BUFFSIZE`, sent in `NCCL_STEPS` = 8 slots, each one RDMA
/// write). The engine's message is one QP's whole payload; this is its unit of completion.
pub const RESEND_UNIT_BYTES: u64 = 512 << 10;

/// The timed actions of the fabric file's `[[fault]]` tables, in time order (faults at the
/// same time in file order). A model that loaded has them resolved already, so this cannot
/// fail; the `Result` is kept for the callers that chain it with other checks.
pub fn resolve_faults(m: &Model) -> Result<Vec<Fault>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    for f in &m.intent.faults {
        actions(m, f, &mut out);
    }
    // Faults at the same time happen in file order (the sort is stable).
    out.sort_by_key(|f| f.at);
    Ok(out)
}

/// The actions one resolved `[[fault]]` table expands to.
fn actions(m: &Model, f: &intent::Fault, out: &mut Vec<Fault>) {
    let at = f.at;
    let mut push = |at: SimTime, action: FaultAction| out.push(Fault { at, action });
    let link = f.link.map(|(a, b)| (a.0, b.0));
    match (f.kind, link, f.node) {
        (FaultKind::EcmpReseed, _, switch) => {
            push(at, FaultAction::Reseed { switch, seed: f.seed.unwrap_or_default() });
        }
        (FaultKind::EcmpHashFields, _, _) => {
            push(at, FaultAction::HashFields { mask: hash_field_mask(&f.fields) });
        }
        (FaultKind::LinkDown | FaultKind::LinkUp, Some(ports), _) => {
            push(at, FaultAction::Link { ports, up: f.kind == FaultKind::LinkUp });
        }
        (FaultKind::LinkFlap, Some(ports), _) => {
            let period = f.period.unwrap_or(SimTime(2));
            for k in 0..f.count as u64 {
                let down = at + SimTime(k * period.0);
                push(down, FaultAction::Link { ports, up: false });
                push(down + SimTime(period.0 / 2), FaultAction::Link { ports, up: true });
            }
        }
        (FaultKind::RouteWithdraw | FaultKind::RouteRestore, Some(ports), _) => {
            push(at, FaultAction::Route { ports, withdrawn: f.kind == FaultKind::RouteWithdraw });
        }
        (FaultKind::EcmpMemberRemove | FaultKind::EcmpMemberAdd, Some((port, _)), _) => {
            push(at, FaultAction::Member { port, removed: f.kind == FaultKind::EcmpMemberRemove });
        }
        (FaultKind::SwitchReboot, _, Some(sw)) => {
            let back = at + f.duration.unwrap_or(SimTime::ZERO);
            match f.mode.unwrap_or_default() {
                RebootMode::Warm => {
                    push(at, FaultAction::Freeze { switch: sw, frozen: true });
                    push(back, FaultAction::Freeze { switch: sw, frozen: false });
                }
                RebootMode::Cold => {
                    // Every port goes down. The host links come back with the ports; a link to
                    // another switch carries traffic again only once the switch advertises its
                    // routes (`routes_after` later): until then nothing is routed over it in
                    // either direction, which for the data plane is the link still down.
                    for pa in m.node(sw).ports() {
                        let ports = (pa.0, m.port(pa).peer.0);
                        let fabric = !m.node(m.port(m.port(pa).peer).node).is_host();
                        push(at, FaultAction::Link { ports, up: false });
                        let up = if fabric { back + f.routes_after } else { back };
                        push(up, FaultAction::Link { ports, up: true });
                    }
                }
            }
        }
        (FaultKind::HostStall, _, Some(host)) => match f.drain {
            Some(bps) => push(at, FaultAction::Drain { host, bps: bps.0 }),
            None => push(at, FaultAction::Host { host, stall: true }),
        },
        (FaultKind::HostResume, _, Some(host)) => push(at, FaultAction::Host { host, stall: false }),
        (FaultKind::NicReset, _, Some(host)) => {
            // The links go down with the reset and come back with the firmware, which brings
            // its settings before the first packet.
            let back = at + f.duration.unwrap_or(SimTime::ZERO);
            let ports: Vec<(u32, u32)> = m.node(host).ports().map(|pa| (pa.0, m.port(pa).peer.0)).collect();
            for &ports in &ports {
                push(at, FaultAction::Link { ports, up: false });
            }
            // The reset destroys the host's RDMA QPs (their state lives in the NIC); the
            // applications reconnect once the link is back and resend from their first
            // unacknowledged work request.
            push(at, FaultAction::Qps { host, up: false });
            if let Some(profile) = f.profile {
                push(back, FaultAction::NicProfile { host, profile: profile as u32 });
            }
            for &ports in &ports {
                push(back, FaultAction::Link { ports, up: true });
            }
            push(back + RECONNECT, FaultAction::Qps { host, up: true });
        }
        // (The loader gives every kind the link or node it needs.)
        _ => {}
    }
}

impl FaultAction {
    /// Every switch hashes `fields` from now on (the `ecmp-hash-fields` fault's action).
    pub fn hash_fields(fields: &[rocelab_model::config::HashField]) -> FaultAction {
        FaultAction::HashFields { mask: hash_field_mask(fields) }
    }
}

impl Sim<'_> {
    /// Adds a fault during a run, at `fault.at` or now if that has passed: a fault whose time
    /// depends on the run itself (the checklist's faults strike once the load has settled,
    /// which only the run can tell). Faults at one time happen in the order they were added,
    /// after the events already due then. Returns when it happens.
    pub fn schedule_fault(&mut self, fault: Fault) -> SimTime {
        // Not before the next event already due either: the queue cannot take an event before
        // the one it has settled on, and nothing happens in between.
        let front = self.q.peek_time(|_| {}).unwrap_or(self.now);
        let at = fault.at.max(self.now).max(front);
        let idx = self.faults.len() as u32;
        self.faults.push(Fault { at, ..fault });
        self.q.push(at, Ev::Fault { idx });
        self.faults_due += 1;
        at
    }

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
                    // (In a partitioned run every partition applies the fault to its copy of the
                    // fabric; only the port's own partition counts it and acts for it. The
                    // other end's partition holds what is on the cable toward it.)
                    let own = self.owns_port(p);
                    let port = &mut self.ports[p as usize];
                    port.up = up;
                    if own {
                        port.st.link_state_changes += 1;
                    }
                    if let Some(part) = self.part.as_mut().filter(|_| !up) {
                        part.last_down[p as usize] = self.now;
                    }
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
                        if nic != NONE && own {
                            self.nic_failover(nic);
                        }
                    } else if own {
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
                    let nic = &mut self.host.nics[n as usize];
                    nic.stalled = false;
                    // A slow drain ends too: its pending step is stale.
                    nic.drain_bps = 0;
                    nic.drain_pending = false;
                    nic.drain_gen = nic.drain_gen.wrapping_add(1);
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
            FaultAction::Member { port, removed } => {
                // Only switch `port` belongs to changes its groups: its egress is depreferenced
                // (as a withdrawal does, kept as a last resort) and the switches further away
                // learn what that changes hop by hop.
                self.router.set_withdrawn(port, removed);
                let peer = self.ports[port as usize].peer;
                self.reconverge([port, peer]);
            }
            FaultAction::Freeze { switch, frozen } => {
                self.router.set_frozen(switch, frozen);
                if frozen {
                    // The data plane stops: what is queued is lost (what is already on the
                    // cables still arrives); links, PFC state and routes are left alone.
                    for p in self.m.node(switch).ports() {
                        self.flush_queues(p.0, None, DropReason::LinkDown);
                    }
                } else if self.owns_node(switch.0) {
                    for p in self.m.node(switch).ports() {
                        self.kick(p.0);
                    }
                }
            }
            FaultAction::Drain { host, bps } => {
                for n in self.router.nics_of(host) {
                    let nic = &mut self.host.nics[n as usize];
                    nic.stalled = true;
                    nic.drain_bps = bps;
                    nic.drain_gen = nic.drain_gen.wrapping_add(1);
                    nic.drain_pending = false;
                    self.drain_next(n);
                }
            }
            FaultAction::NicProfile { host, profile } => self.set_nic_profile(host, profile as usize),
            FaultAction::Qps { host, up: false } => self.qps_destroy(host),
            FaultAction::Qps { host, up: true } => self.qps_reconnect(host),
            FaultAction::HashFields { mask } => {
                // The hash is the QP's, carried by its packets: recompute it from the stored
                // source port. Packets already in flight keep the old one (as packets already
                // past a switch keep the path it chose).
                self.router.set_hash_fields(mask);
                for q in &mut self.host.qps {
                    q.hash = self.router.flow_hash(q.src, q.dst, q.sport as u32, q.qpn);
                }
            }
        }
    }

    /// A packet reached a switch whose data plane is frozen (a warm reboot): lost at its
    /// ingress port `port`, counted as a link-down drop.
    #[cold]
    #[inline(never)]
    pub(super) fn frozen_drop(&mut self, port: u32, pkt: u32) {
        let q = self.queues.classes[self.pkts.get(pkt).class as usize].queue;
        self.drop_pkt(port, q, pkt, DropReason::LinkDown);
    }

    /// A slowly draining NIC starts on its head packet, if it has one and is not busy: it
    /// takes the payload at `drain_bps`, so a host bound by PCIe or memory delivers exactly
    /// that rate while its buffer holds anything.
    pub(super) fn drain_next(&mut self, n: u32) {
        let nic = &mut self.host.nics[n as usize];
        if nic.drain_bps == 0 || nic.drain_pending {
            return;
        }
        let Some(&pkt) = nic.rx_q.front() else { return };
        let payload = self.pkts.get(pkt).payload.max(1) as u128;
        let ps = (payload * 8 * 1_000_000_000_000).div_ceil(nic.drain_bps as u128);
        nic.drain_pending = true;
        let gen = nic.drain_gen;
        self.q.push(self.now + SimTime(ps.min(u64::MAX as u128) as u64), Ev::HostDrain { nic: n, gen });
    }

    /// A slowly draining NIC has taken its head packet: it is received, and the buffer it
    /// held frees; once the buffer is two frames below XOFF the NIC sends XON (a hysteresis
    /// of two frames, as a switch's resume offset, so the link is not paused and resumed per
    /// packet).
    #[cold]
    pub(super) fn on_host_drain(&mut self, n: u32, gen: u32) {
        let nic = &mut self.host.nics[n as usize];
        if nic.drain_gen != gen || !nic.drain_pending {
            return;
        }
        nic.drain_pending = false;
        let Some(pkt) = nic.rx_q.pop_front() else { return };
        let size = self.pkts.get(pkt).wire_bytes as u64;
        let nic = &mut self.host.nics[n as usize];
        nic.rx_bytes = nic.rx_bytes.saturating_sub(size);
        let (port, rx_bytes) = (nic.port, nic.rx_bytes);
        self.host_released(port, pkt);
        self.host_receive(n, pkt);
        let prof = &self.m.nics[self.host.nics[n as usize].profile];
        let xon = prof.rx_xoff_bytes.saturating_sub(2 * (prof.mtu as u64 + HEADER_ROOM));
        // (No pause on InfiniBand: `rx_xoff` is never set there.)
        if rx_bytes <= xon {
            for prio in 0..8u8 {
                if self.host.nics[n as usize].rx_xoff[prio as usize] {
                    self.host.nics[n as usize].rx_xoff[prio as usize] = false;
                    self.send_pfc(port, prio, 0);
                }
            }
        }
        self.drain_next(n);
    }

    /// A host's NICs take NIC profile `profile` (the settings a firmware update brings): the
    /// tables every later step reads, and the congestion control of its RDMA QPs, started
    /// afresh at line rate under the new profile as a QP re-created after the reset would be.
    /// QPs without one (on a priority without a reaction point) and TCP-like ones keep theirs.
    #[cold]
    pub(super) fn set_nic_profile(&mut self, host: NodeId, profile: usize) {
        let nics = self.router.nics_of(host);
        for n in nics.clone() {
            self.host.nics[n as usize].profile = profile;
        }
        for qi in 0..self.host.qps.len() {
            let q = &self.host.qps[qi];
            if !nics.contains(&q.src_nic) || q.sender_done.is_some() {
                continue;
            }
            self.restart_cc(qi);
        }
    }

    /// QP `qi`'s RDMA congestion control started afresh at line rate under its NIC's profile,
    /// as on a QP created anew; QPs without one and TCP-like ones keep theirs.
    fn restart_cc(&mut self, qi: usize) {
        let q = &self.host.qps[qi];
        let rdma = matches!(q.cc, Some(Cc::Paper(_) | Cc::Mlx5(_) | Cc::Hpcc(_) | Cc::Timely(_) | Cc::DctcpRate(_)));
        if !rdma {
            return;
        }
        let profile = self.host.nics[q.src_nic as usize].profile;
        let prof = &self.m.nics[profile];
        let line = self.ports[self.host.nics[q.src_nic as usize].port as usize].speed.0 as f64;
        let (src_nic, dst, hash, mtu) = (q.src_nic, q.dst, q.hash, q.mtu);
        let path_rtt = || self.path_rtt(src_nic, dst, hash, mtu + self.hdr.data);
        let cc = Cc::choose(QpKind::Rdma, prof, &self.host.cc_params[profile], line, mtu, path_rtt);
        self.host.qps[qi].cc = cc;
    }

    /// The RDMA QPs whose one end is `host`'s NIC and whose message is under way, as a NIC
    /// reset leaves them: their state (on the NIC) is gone, at both ends (the peer's QP is
    /// torn down with the connection). TCP-like QPs are the host kernel's and survive; UET's
    /// are left to their own transport, which has no connection to set up again (its packet
    /// delivery contexts open with their first packet, UEC 1.0's PDS) and resends what was
    /// never acknowledged on its timeout.
    fn reset_qps(&self, host: NodeId) -> Vec<usize> {
        let nics = self.router.nics_of(host);
        (0..self.host.qps.len())
            .filter(|&qi| {
                let q = &self.host.qps[qi];
                let tcp = matches!(q.cc, Some(Cc::Cubic(_) | Cc::Dctcp(_) | Cc::DctcpIb(_)));
                (nics.contains(&q.src_nic) || nics.contains(&q.dst_nic))
                    && !tcp
                    && q.uet.is_none()
                    && !q.retired
                    && !q.st.failed
                    && q.sender_done.is_none()
            })
            .collect()
    }

    /// A NIC reset destroys `host`'s RDMA QPs under way: each stops sending (it leaves its
    /// NIC's send list) and its transport timer is cancelled, so nothing is retried until the
    /// application reconnects ([`Self::qps_reconnect`]). Packets already in the fabric still
    /// arrive; whatever they change is rewound at the reconnection. A QP not yet started is
    /// left alone (it connects when it starts).
    #[cold]
    pub(super) fn qps_destroy(&mut self, host: NodeId) {
        for qi in self.reset_qps(host) {
            let src_nic = self.host.qps[qi].src_nic;
            let list = &mut self.host.nics[src_nic as usize].active;
            let Some(pos) = list.iter().position(|x| *x == qi as u32) else { continue };
            list.remove(pos);
            let q = &mut self.host.qps[qi];
            q.torn_down = true;
            q.rto_gen = q.rto_gen.wrapping_add(1);
            q.rto_armed = false;
        }
    }

    /// The applications of `host`'s destroyed QPs have reconnected ([`RECONNECT`] after the
    /// NIC is back): each QP starts again from the start of the work request holding its
    /// first unacknowledged byte ([`RESEND_UNIT_BYTES`]), at both ends, with its congestion
    /// control afresh. A message its receiver completed meanwhile (the last ACKs lost with
    /// the link) is done.
    #[cold]
    pub(super) fn qps_reconnect(&mut self, host: NodeId) {
        let now = self.now;
        for qi in self.reset_qps(host) {
            if !self.host.qps[qi].torn_down {
                continue;
            }
            self.host.qps[qi].torn_down = false;
            if self.host.qps[qi].finish.is_some() {
                let q = &mut self.host.qps[qi];
                if let Some(cc) = &mut q.cc {
                    cc.on_done();
                }
                q.sender_done = Some(now);
                self.qps_left -= 1;
                self.active_qps -= 1;
                continue;
            }
            let q = &mut self.host.qps[qi];
            let unit = (RESEND_UNIT_BYTES / q.mtu as u64).max(1) as u32;
            let from = q.snd_una / unit * unit;
            // The receiver takes the work request again: what it held past `from` is not
            // counted twice.
            q.st.bytes_delivered = q.st.bytes_delivered.min(from as u64 * q.mtu as u64);
            (q.rcv_nxt, q.nak_for, q.since_ack, q.ooo_held) = (from, NONE, 0, 0);
            q.ooo.clear();
            (q.snd_una, q.snd_nxt, q.rtx, q.rtx_end, q.rtt_psn) = (from, from, NONE, NONE, NONE);
            (q.timeouts_in_row, q.last_progress) = (0, now);
            self.restart_cc(qi);
            let nic = self.router.live_nic(self.host.qps[qi].src_nic);
            self.host.qps[qi].src_nic = nic;
            self.host.nics[nic as usize].active.push(qi as u32);
            self.nic_try_send(nic);
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

#[cfg(test)]
mod tests {
    use super::super::test_support::star;
    use super::*;

    #[test]
    fn a_nic_reset_brings_its_new_profile_to_the_nic_and_its_qps() {
        // h0 runs DCQCN; its NIC resets at 10 µs for 20 µs and comes back as `new-fw`, with
        // HPCC: from then on the NIC reads the new tables and its RDMA QP runs HPCC, started
        // afresh at line rate, as a QP re-created after the reset would be.
        let m = star(
            2,
            "",
            "[nic_profiles.new-fw]\nmtu = 4096\ncongestion_control = \"hpcc\"\n\
             [[traffic]]\npattern = \"flow\"\nsrc = \"h0\"\ndst = \"h1\"\nsize_bytes = 2000000\n\
             [[fault]]\nkind = \"nic-reset\"\nat_us = 10\na = \"h0\"\nduration_us = 20\nprofile = \"new-fw\"\n",
        );
        let new = m.nics.iter().position(|n| n.name == "new-fw").unwrap();
        let mut sim = crate::build(&m, SimOptions::default()).unwrap();
        sim.run_until(SimTime::from_secs_f64(29e-6));
        assert!(
            matches!(sim.host.qps[0].cc, Some(Cc::Paper(_) | Cc::Mlx5(_))),
            "DCQCN before: {:?}",
            sim.host.qps[0].cc
        );
        assert_ne!(sim.host.nics[0].profile, new);
        sim.run_until(SimTime::from_secs_f64(31e-6));
        assert_eq!(sim.host.nics[0].profile, new);
        assert!(matches!(sim.host.qps[0].cc, Some(Cc::Hpcc(_))), "HPCC after: {:?}", sim.host.qps[0].cc);
        sim.run(&mut |_| {});
        assert!(sim.host.qps[0].finish.is_some(), "the flow completes after the reset");
    }

    /// h0 streams 2 MB to h1 at 100 Gb/s; `reset` (h0 or h1) has its NIC reset at 50 µs for
    /// 20 µs.
    fn reset_fabric(reset: &str) -> Model {
        star(
            2,
            "",
            &format!(
                "[[traffic]]\npattern = \"flow\"\nsrc = \"h0\"\ndst = \"h1\"\nsize_bytes = 2000000\n\
                 [[fault]]\nkind = \"nic-reset\"\nat_us = 50\na = \"{reset}\"\nduration_us = 20\n"
            ),
        )
    }

    #[test]
    fn a_nic_reset_destroys_the_qps_and_the_application_resends_its_unacknowledged_work_request_after_reconnecting() {
        for reset in ["h0", "h1"] {
            let m = reset_fabric(reset);
            let mut sim = crate::build(&m, SimOptions::default()).unwrap();
            sim.run_until(SimTime::from_secs_f64(50e-6));
            let una = sim.host.qps[0].snd_una;
            // 50 µs at 100 Gb/s: about 600 KB acknowledged, in the second 512 KiB work request.
            assert!((120..200).contains(&una), "{reset}: snd_una {una}");
            sim.run_until(SimTime::from_secs_f64(51e-6));
            assert!(sim.host.qps[0].torn_down, "{reset}: the QP is destroyed with the NIC's state");
            let sent = sim.stats.data_sent;
            // Nothing is sent or retried while the link is down and the application has not
            // reconnected: the NIC is back at 70 µs, the connection at 70 µs + RECONNECT.
            let reconnect = SimTime::from_secs_f64(70e-6) + RECONNECT;
            sim.run_until(reconnect - SimTime(1));
            assert_eq!(sim.stats.data_sent, sent, "{reset}: no retry before the reconnection");
            assert_eq!(sim.host.qps[0].st.timeouts, 0, "{reset}");
            sim.run(&mut |_| {});
            let q = &sim.host.qps[0];
            // Resent from the start of the work request holding the first unacknowledged byte
            // (packet 128 = 512 KiB / 4096 B): the rest, 2,000,000 − 524,288 B, in packets of
            // 4,096 B payload and 82 B of headers, at 100 Gb/s is 120.4 µs, plus a few µs of
            // round trip.
            let finish = q.finish.expect("the message completes after the reconnection");
            let wire = (2_000_000f64 - 524_288.0) * (4096.0 + 82.0) / 4096.0;
            let after = (finish.0 - reconnect.0) as f64 * 1e-6;
            let ideal = wire * 8.0 / 100e9 * 1e6;
            assert!(after >= ideal && after < ideal + 5.0, "{reset}: {after} µs after reconnecting, ideal {ideal}");
            // Counted once, at the receiver, whatever was received twice.
            assert_eq!(q.st.bytes_delivered, 2_000_000, "{reset}");
            assert!(q.st.retransmitted_packets as u32 >= una - 128, "{reset}: {}", q.st.retransmitted_packets);
            assert!(!q.st.failed, "{reset}");
        }
    }
}
