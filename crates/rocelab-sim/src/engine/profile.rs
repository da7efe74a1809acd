//! Which partition would run each event: the engine's side of `crate::partition`. A run with
//! a [`WindowProfile`] attached tells it every event it pops (one untaken branch per event
//! when none is attached), so the cost of a cut is measured on the real event stream.

use super::Sim;
use crate::event::Ev;
use crate::partition::{Owner, Partitioning, WindowProfile};

impl Sim<'_> {
    /// Counts every event of the rest of the run against `cut` (see `WindowProfile`).
    pub fn profile_partitions(&mut self, cut: Partitioning) {
        self.part_profile = Some(Box::new(WindowProfile::new(cut)));
    }

    /// The counts so far (the last window closed), if a profile was attached.
    pub fn take_partition_profile(&mut self) -> Option<WindowProfile> {
        let mut p = *self.part_profile.take()?;
        p.finish();
        Some(p)
    }

    #[cold]
    #[inline(never)]
    pub(super) fn count_partition_event(&mut self, ev: &Ev) {
        let owner = self.event_owner(ev);
        let now = self.now;
        if let Some(p) = self.part_profile.as_deref_mut() {
            p.count(now, owner);
        }
    }

    /// The node whose partition runs `ev`, and where a packet or frame crossing a link comes
    /// from; state of the whole run (workload, sampling, faults, routing epochs) is global.
    fn event_owner(&self, ev: &Ev) -> Owner {
        let port_node = |p: u32| self.m.ports[p as usize].node.0;
        let nic_node = |n: u32| self.host.nics[n as usize].node;
        let local = |node: u32| Owner::Node { node, from: None };
        match *ev {
            Ev::TxDone { port } | Ev::PauseExpire { port, .. } | Ev::PauseRefresh { port, .. } => {
                local(port_node(port))
            }
            Ev::WireArrive { port, peer, .. } => Owner::Node { node: port_node(peer), from: Some(port_node(port)) },
            Ev::PfcArrive { from, .. } => {
                let peer = self.m.ports[from as usize].peer.0;
                Owner::Node { node: port_node(peer), from: Some(port_node(from)) }
            }
            Ev::CreditArrive { port, .. } => {
                let peer = self.m.ports[port as usize].peer.0;
                Owner::Node { node: port_node(port), from: Some(port_node(peer)) }
            }
            Ev::NicWake { host, .. } => local(nic_node(host)),
            Ev::HostDrain { nic, .. } => local(nic_node(nic)),
            Ev::QpStart { qp } | Ev::RateIncrease { qp, .. } | Ev::RateReduce { qp } | Ev::Rto { qp, .. } => {
                local(nic_node(self.host.qps[qp as usize].src_nic))
            }
            Ev::DelayedAck { qp, .. } | Ev::CnpSend { qp } => local(nic_node(self.host.qps[qp as usize].dst_nic)),
            Ev::Delivered { .. }
            | Ev::Wake { .. }
            | Ev::RouteLearn { .. }
            | Ev::Sample
            | Ev::WatchdogPoll
            | Ev::Fault { .. }
            | Ev::FfLook
            | Ev::FfResume { .. } => Owner::Global,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{idle_sim, model};
    use crate::event::Ev;
    use crate::partition::{partition, Owner, PartitionBy};
    use rocelab_model::topology::Tier;

    fn fat_tree() -> rocelab_model::Model {
        model(
            "ft.toml",
            "[fabric]\nname = \"ft\"\n[topology.fat_tree]\nk = 4\nlink = { speed_gbps = 400, delay_ns = 1000 }\n",
        )
    }

    /// Cut into pods, an aggregation switch's ECMP group towards the cores spans partitions
    /// (the cut goes through it); a packet and a PFC frame crossing one of those links are
    /// owned by the far end and come from the near one, so the profile counts them as
    /// cross-partition messages; a fault is global (every partition stops at it).
    #[test]
    fn a_pause_and_a_packet_across_a_pod_boundary_are_cross_messages() {
        let m = fat_tree();
        let sim = idle_sim(&m);
        let cut = partition(&m, PartitionBy::Pod, 4).unwrap();
        let agg = m.nodes.iter().position(|n| n.tier == Tier::Spine).unwrap();
        let uplinks: Vec<u32> = m.nodes[agg]
            .ports()
            .filter(|&p| m.node(m.port(m.port(p).peer).node).tier == Tier::Core)
            .map(|p| p.0)
            .collect();
        assert_eq!(uplinks.len(), 2);
        let parts: Vec<u32> = uplinks.iter().map(|&p| cut.of_port(&m, m.ports[p as usize].peer.0)).collect();
        assert!(parts.iter().any(|&p| p != cut.of_node[agg]), "no core of the group in another partition");
        let up = uplinks[parts.iter().position(|&p| p != cut.of_node[agg]).unwrap()];
        let core = m.port(m.ports[up as usize].peer).node.0;
        let wire = Ev::WireArrive { port: up, pkt: 0, peer: m.ports[up as usize].peer.0 };
        assert_eq!(sim.event_owner(&wire), Owner::Node { node: core, from: Some(agg as u32) });
        let pause = Ev::PfcArrive { from: up, prio: 3, quanta: 0xffff };
        assert_eq!(sim.event_owner(&pause), Owner::Node { node: core, from: Some(agg as u32) });
        // The pause expiry it arms runs where the frame landed, with no sender.
        let expire = Ev::PauseExpire { port: m.ports[up as usize].peer.0, prio: 3 };
        assert_eq!(sim.event_owner(&expire), Owner::Node { node: core, from: None });
        assert_eq!(sim.event_owner(&Ev::Fault { idx: 0 }), Owner::Global);
        assert_eq!(sim.event_owner(&Ev::RouteLearn { sw: 0, epoch: 1 }), Owner::Global);
    }
}
