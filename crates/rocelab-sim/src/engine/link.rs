//! The link layer, chosen once per fabric when the engine is built (`Sim::link`): RoCEv2 over
//! lossless Ethernet (PFC pauses and headroom, ECN marks answered by CNPs, DSCP/PCP classes)
//! or InfiniBand (credits per VL, VL arbitration, SL→VL, FECN answered by BECN, LID routing;
//! `engine::ib`).
//!
//! The mechanisms never ask which layer they run on. What differs is resolved here, once:
//! at construction (a class's priority and queue, the MMU's reserve and headroom, ECN
//! thresholds, header overheads, whether INT is stamped, the PFC watchdog) and at a QP's
//! creation (its priority, class, congestion control kind, ECT); on the data path through the
//! hooks below, each one `match` on the layer held once, called where a packet is admitted,
//! picked, put on the wire, freed or received. The match is on a value that never changes
//! during a run, so the branch predicts perfectly; a new link layer is one variant and one arm
//! per hook.

use super::*;
use rocelab_model::infiniband::IbCc;

/// The fabric's link layer and its state.
pub(super) enum LinkLayer {
    /// RoCEv2 over Ethernet.
    Roce,
    /// InfiniBand: arbitration tables, routing mode, LIDs, IB congestion control.
    Ib(Box<ib::IbState>),
}

impl LinkLayer {
    /// The link layer `m` names (`[fabric] link_layer`), its tables checked.
    pub(super) fn of(m: &Model) -> Result<LinkLayer, Vec<Diagnostic>> {
        Ok(match &m.ib {
            Some(ib) => LinkLayer::Ib(Box::new(ib::IbState::new(m, ib)?)),
            None => LinkLayer::Roce,
        })
    }

    /// InfiniBand's state, for code only InfiniBand's hooks reach.
    #[inline]
    pub(super) fn ib(&self) -> &ib::IbState {
        match self {
            LinkLayer::Ib(s) => s,
            LinkLayer::Roce => unreachable!("an InfiniBand path ran on a RoCE fabric"),
        }
    }

    /// Per-(port, priority group) reserved bytes of a switch whose model reserves
    /// `reserve_bytes`: none on InfiniBand, where all of a VL's input buffer is credit-managed.
    pub(super) fn reserve_bytes(&self, reserve_bytes: u64) -> u64 {
        match self {
            LinkLayer::Roce => reserve_bytes,
            LinkLayer::Ib(_) => 0,
        }
    }

    /// PFC headroom of a port (none on InfiniBand: nothing in flight can overflow a buffer
    /// the credits cover).
    pub(super) fn headroom_bytes(&self, m: &Model, port: PortId) -> u64 {
        match self {
            LinkLayer::Roce => m.headroom_in_force(port),
            LinkLayer::Ib(_) => 0,
        }
    }

    /// The per-packet header bytes: InfiniBand's, or RoCEv2's as the run counts them
    /// (`[simulation] header_overhead`).
    pub(super) fn overheads(&self, m: &Model) -> ib::Overheads {
        match (self, m.config.simulation.header_overhead.unwrap_or_default()) {
            (LinkLayer::Ib(_), _) => ib::Overheads::INFINIBAND,
            (LinkLayer::Roce, rocelab_model::cc::HeaderOverhead::Roce) => ib::Overheads::ROCE,
            (LinkLayer::Roce, rocelab_model::cc::HeaderOverhead::Ns3) => ib::Overheads::NS3,
        }
    }

    /// Switches stamp INT on data packets: some NIC runs HPCC (a RoCE algorithm).
    pub(super) fn stamps_int(&self, m: &Model) -> bool {
        matches!(self, LinkLayer::Roce) && m.nics.iter().any(|n| n.congestion_control == CongestionControl::Hpcc)
    }

    /// The PFC watchdog runs: it is on and some priority is lossless (RoCE only).
    pub(super) fn runs_pfc_watchdog(&self, m: &Model) -> bool {
        matches!(self, LinkLayer::Roce) && m.qos.watchdog.enabled && m.qos.pfc_mask != 0
    }

    /// Per port, its credits and VL arbiter (empty on RoCE, so a RoCE port keeps its layout).
    pub(super) fn ports(&self, n: usize) -> Vec<ib::IbPort> {
        match self {
            LinkLayer::Roce => Vec::new(),
            LinkLayer::Ib(s) => vec![ib::IbPort::new(s.initial_credits); n],
        }
    }

    /// InfiniBand congestion control's tables, if it is on.
    pub(super) fn ib_cc(&self) -> Option<&IbCc> {
        match self {
            LinkLayer::Roce => None,
            LinkLayer::Ib(s) => s.cc.as_ref(),
        }
    }

    /// Receivers keep packets that arrive ahead of the next expected one (InfiniBand RC over
    /// adaptive routing) instead of answering the gap with a NAK and go-back-N.
    #[inline]
    pub(super) fn keeps_out_of_order(&self) -> bool {
        matches!(self, LinkLayer::Ib(s) if s.adaptive)
    }

    /// A QP's wire identity for a message of class `class` from a NIC of profile `prof`:
    /// its priority (PCP; the VL on InfiniBand), the class switches file it under, its
    /// congestion control kind and whether its packets are ECN-capable where the algorithm
    /// asks (`ect_if`: what the RoCE transport would mark).
    pub(super) fn qp_identity(&self, m: &Model, f: &FlowSpec, classes: &[ClassQueue]) -> QpIdentity {
        let prof = m.nic_of(f.src);
        match self {
            LinkLayer::Ib(s) => QpIdentity {
                // The class's SL (its `priority`) picks the VL; no DSCP, no PCP.
                pcp: classes[f.class].queue,
                class: f.class as u8,
                kind: if f.transport.is_tcp() {
                    QpKind::Tcp { ib_cc: s.cc.is_some() }
                } else {
                    QpKind::Ib { cc: s.cc.is_some() }
                },
                ect: false,
            },
            LinkLayer::Roce => {
                // The NIC stamps the class's DSCP and maps it to a priority with its own table.
                let dscp = if f.class == m.qos.rdma_class() {
                    prof.qos.roce_dscp
                } else {
                    m.qos.classes[f.class].dscp.first().copied().unwrap_or(0)
                };
                let pcp = prof.qos.dscp_to_priority[dscp as usize];
                let class = match m.qos.trust {
                    rocelab_model::config::Trust::Dscp => m.qos.dscp_to_class[dscp as usize],
                    rocelab_model::config::Trust::Pcp => m.qos.priority_to_class[pcp as usize],
                };
                let kind = if f.transport.is_tcp() {
                    QpKind::Tcp { ib_cc: false }
                } else if prof.qos.ecn_rp_mask & (1 << pcp) != 0 {
                    QpKind::Rdma
                } else {
                    QpKind::RdmaUnmanaged
                };
                QpIdentity { pcp, class, kind, ect: true }
            }
        }
    }
}

/// What `LinkLayer::qp_identity` resolves for a QP.
pub(super) struct QpIdentity {
    pub pcp: u8,
    pub class: u8,
    pub kind: QpKind,
    /// The link layer carries ECN marks (RoCE); the transport then decides.
    pub ect: bool,
}

/// The data-path hooks: where the two link layers differ on a packet's way.
impl Sim<'_> {
    /// True while `port` may not send `bytes` on VL/priority `vl`: paused by PFC (RoCE), or
    /// short of credits (InfiniBand).
    #[inline]
    pub(super) fn tx_blocked(&self, port: u32, vl: u8, bytes: u32) -> bool {
        match self.link {
            LinkLayer::Roce => self.is_paused(port, vl),
            LinkLayer::Ib(_) => self.ib_ports[port as usize].credits[vl as usize & 7] < bytes,
        }
    }

    /// A packet arrives at switch `sw` on `in_port`: MMU admission and PFC (RoCE), or the
    /// credit-guaranteed input buffer (InfiniBand); then routed and queued at egress.
    #[inline]
    pub(super) fn switch_arrive(&mut self, sw: u32, in_port: u32, pkt: u32) {
        match self.link {
            LinkLayer::Roce => self.switch_arrive_eth(sw, in_port, pkt),
            LinkLayer::Ib(_) => self.switch_arrive_ib(sw, in_port, pkt),
        }
    }

    /// A packet reaches NIC `nic`.
    #[inline]
    pub(super) fn host_arrive(&mut self, nic: u32, pkt: u32) {
        match self.link {
            LinkLayer::Roce => self.host_arrive_eth(nic, pkt),
            LinkLayer::Ib(_) => self.host_arrive_ib(nic, pkt),
        }
    }

    /// The queue `port` sends from next: strict then DWRR skipping paused priorities (RoCE),
    /// or the VL arbiter over VLs whose credits cover their head (InfiniBand).
    #[inline]
    pub(super) fn pick(&mut self, port: u32) -> Option<usize> {
        match self.link {
            LinkLayer::Roce => self.pick_queue(port),
            LinkLayer::Ib(_) => self.pick_vl(port),
        }
    }

    /// Packet `pkt` (`size` wire bytes) left switch egress queue `q` of `port`, which held
    /// `qlen` bytes: InfiniBand marks FECN and charges the arbiter (RoCE marked ECN already).
    #[inline]
    pub(super) fn dequeued(&mut self, port: u32, q: usize, pkt: u32, qlen: u64, size: u64) {
        if let LinkLayer::Ib(_) = self.link {
            self.ib_mark_fecn(port, q, pkt, qlen);
            self.arb_sent(port, size as u32);
        }
    }

    /// `bytes` of VL/priority `vl` go onto `port`'s wire: InfiniBand spends their credits.
    #[inline]
    pub(super) fn on_wire(&mut self, port: u32, vl: u8, bytes: u32) {
        if let LinkLayer::Ib(_) = self.link {
            self.spend_credits(port, vl, bytes);
        }
    }

    /// A switch freed `size` bytes it had taken in on `in_port` for priority/VL `prio`: on
    /// InfiniBand (no reserve, no headroom, no lossless class: all of it was shared) they go
    /// back upstream as credits.
    #[inline]
    pub(super) fn released(&mut self, in_port: u32, prio: u8, size: u64) {
        if let LinkLayer::Ib(_) = self.link {
            self.return_credits(in_port, prio, size as u32);
        }
    }

    /// A stalled host took packet `pkt` it held in its receive buffer off `port`: on
    /// InfiniBand that frees its input buffer, so the credits go back.
    pub(super) fn host_released(&mut self, port: u32, pkt: u32) {
        if let LinkLayer::Ib(_) = self.link {
            let p = self.pkts.get(pkt);
            let (size, vl) = (p.wire_bytes as u32, p.pcp);
            self.return_credits(port, vl, size);
        }
    }

    /// Packet `pkt` was lost on `port`'s cable (the link went down): on InfiniBand the
    /// receiver never got it and the link's flow control re-initializes when it comes back
    /// (IBTA Vol. 1 §7.9.4), so its credits are the sender's again.
    pub(super) fn lost_on_wire(&mut self, port: u32, pkt: u32) {
        if let LinkLayer::Ib(_) = self.link {
            let k = self.pkts.get(pkt);
            let (vl, bytes) = (k.pcp as usize & 7, k.wire_bytes as u32);
            self.ib_ports[port as usize].credits[vl] += bytes;
        }
    }

    /// A CE-marked data packet of QP `qi` reached its receiver on NIC `nic`: a RoCE
    /// notification point answers with a CNP (at most one per interval), a TCP-like receiver
    /// echoes it; InfiniBand answers every FECN with a BECN.
    #[inline]
    pub(super) fn ce_received(&mut self, nic: u32, qi: u32, pcp: u8) {
        self.host.nics[nic as usize].st.ecn_marked_rx += 1;
        match self.link {
            LinkLayer::Roce => self.ce_received_eth(nic, qi, pcp),
            LinkLayer::Ib(_) => self.send_cnp(qi),
        }
    }

    /// The class and priority of a congestion notification for QP `q` sent by NIC `nic`: the
    /// NIC's CNP class and priority on RoCE, the QP's own VL for a BECN on InfiniBand.
    pub(super) fn cnp_class(&self, qi: u32, nic: u32) -> (u8, u8) {
        let q = &self.host.qps[qi as usize];
        match self.link {
            LinkLayer::Ib(_) => (q.class, q.pcp),
            LinkLayer::Roce => {
                let prof = &self.m.nics[self.host.nics[nic as usize].profile];
                let class = match self.m.qos.trust {
                    rocelab_model::config::Trust::Dscp => self.m.qos.dscp_to_class[prof.qos.cnp_dscp as usize],
                    rocelab_model::config::Trust::Pcp => self.m.qos.priority_to_class[prof.qos.cnp_priority as usize],
                };
                (class, prof.qos.cnp_priority)
            }
        }
    }
}
