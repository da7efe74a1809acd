//! The router: forwarding tables, ECMP hashing and member choice (resilient on failure), the
//! routing state each switch forwards by after links go down or routes are withdrawn, and which
//! of a multi-homed host's ports a QP leaves on. Both engines own one and ask it for routes: the
//! packet engine per switch hop (`Router::choose`), the flow engine per path
//! (`Router::trace_path`). It owns what routing knows of each link (up, routes standing or
//! withdrawn); the engines tell it of link changes (`set_link_up`, `set_withdrawn`, then
//! `reconverge`) and schedule the switches' learning of them (`RouteLearn`).
//!
//! Besides per-flow ECMP it chooses members for the other load-balancing modes of
//! `[routing] load_balancing` (`rocelab_model::lb`): per packet the least-loaded member
//! (`least_loaded`, shared by RoCE adaptive routing and InfiniBand's), an oblivious per-packet
//! spray (`spray`), and flowlets (`flowlet`: per switch a hashed table of the flows' last
//! member and packet time, as CONGA's flowlet table). The engine supplies the loads.

use crate::rng::{mix64, Rng};
use crate::traffic::FlowSpec;
use rocelab_model::config::HashField;
use rocelab_model::lb::LoadBalancing;
use rocelab_model::routing::Routing;
use rocelab_model::{Diagnostic, Model, NodeId, PortId, Role, SimTime};

const NONE: u32 = u32::MAX;

/// How well a next hop leads to a destination, as routing ranks it: over links whose routes
/// stand (`PREFERRED`), only through a link whose routes were withdrawn and so are kept as a
/// last resort (`FALLBACK`, RFC 8326 graceful shutdown: the routes stay, depreferenced, until
/// traffic has moved), or not at all.
pub(crate) type RouteLevel = u8;
pub(crate) const UNREACHED: RouteLevel = 0;
pub(crate) const FALLBACK: RouteLevel = 1;
pub(crate) const PREFERRED: RouteLevel = 2;

/// A run of `Fib::ports`.
#[derive(Clone, Copy)]
struct Span {
    off: u32,
    len: u32,
}

/// `Span::off` of a cell whose switch is one of the group's attachment switches: the
/// candidates are then the ports facing the destination host itself.
const ATTACHED: u32 = u32::MAX;

/// The model's forwarding table flattened for the per-hop lookup: one cell per (engine switch,
/// destination group) naming a run of one port array, where the model's table takes a row
/// lookup, a distance check and an interned group behind a pointer. At fabric scale ECMP runs
/// once per packet per switch hop and those dependent loads were a quarter of the run. Static:
/// failures and withdrawals are judged against it by the routing views, not written into it.
struct Fib {
    groups: usize,
    /// `cells[sw * groups + g]`.
    cells: Vec<Span>,
    /// Per node: the switch ports facing it (hosts; empty for switches).
    host: Vec<Span>,
    ports: Vec<PortId>,
    /// The node of each entry of `ports` (static), beside it: the per-hop check that a member
    /// is the deciding switch's own then reads this small array, not the per-port link table.
    owner: Vec<u32>,
}

impl Fib {
    fn new(r: &Routing, port_node: impl Fn(PortId) -> u32, switch_nodes: impl Iterator<Item = u32>) -> Fib {
        let mut ports = Vec::new();
        let mut span_of = |set: &[PortId]| {
            let s = Span { off: ports.len() as u32, len: set.len() as u32 };
            ports.extend_from_slice(set);
            s
        };
        let group_spans: Vec<Span> = r.ecmp_groups.iter().map(|g| span_of(g)).collect();
        let host: Vec<Span> = r.host_facing.iter().map(|h| span_of(h)).collect();
        let groups = r.groups.len();
        let mut cells = Vec::new();
        for node in switch_nodes {
            let row = r.switch_row[node as usize] as usize;
            cells.extend((0..groups).map(|g| {
                let cell = row * groups + g;
                match (r.dist[cell], r.next_hop[cell]) {
                    (0, _) => Span { off: ATTACHED, len: 0 },
                    (_, NONE) => Span { off: 0, len: 0 },
                    (_, id) => group_spans[id as usize],
                }
            }));
        }
        let owner = ports.iter().map(|&p| port_node(p)).collect();
        Fib { groups, cells, host, ports, owner }
    }

    /// What `Routing::candidates` gives for the node of engine switch `sw`, toward host `dst`
    /// of destination group `group`.
    #[inline]
    fn candidates(&self, sw: u32, dst: u32, group: u32) -> &[PortId] {
        let s = self.span(sw, dst, group);
        &self.ports[s.off as usize..][..s.len as usize]
    }

    /// `candidates` and the node of each.
    #[inline]
    fn candidates_and_owners(&self, sw: u32, dst: u32, group: u32) -> (&[PortId], &[u32]) {
        let s = self.span(sw, dst, group);
        (&self.ports[s.off as usize..][..s.len as usize], &self.owner[s.off as usize..][..s.len as usize])
    }

    #[inline]
    fn span(&self, sw: u32, dst: u32, group: u32) -> Span {
        let s = self.cells[sw as usize * self.groups + group as usize];
        if s.off == ATTACHED {
            self.host[dst as usize]
        } else {
            s
        }
    }
}

/// `h mod n` (n > 0), with a mask where n is a power of two (most ECMP groups: the bits are
/// the same, the division is gone).
#[inline]
fn member(h: u64, n: usize) -> usize {
    let n = n as u64;
    (if n & (n - 1) == 0 { h & (n - 1) } else { h % n }) as usize
}

/// A distinct 32-bit hash per (flow, packet) for the per-packet modes.
#[inline]
fn packet_hash(hash: u32, psn: u32) -> u32 {
    (mix64(((hash as u64) << 32) | psn as u64) >> 32) as u32
}

/// The routing state one switch forwards by: its table (`None`: all links up and routed) and
/// whether it is the newest (only then does it also see which host links are down).
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    table: Option<&'a [RouteLevel]>,
    current: bool,
}

/// What routing knows of one end of a link (a model port): where it is, and whether it carries
/// traffic and routes. 12 bytes, so the per-hop check of a member stays in a few lines.
#[derive(Clone, Copy)]
struct Link {
    node: u32,
    peer: u32,
    /// The wire works.
    up: bool,
    /// ECMP may choose it: up and its routes not withdrawn (the hot copy of the other two).
    routed: bool,
    /// A `route-withdraw` fault holds the link's routes back.
    withdrawn: bool,
}

impl Link {
    /// What the link itself offers routing: its routes, or with them withdrawn only a last
    /// resort while it is up.
    #[inline]
    fn level(&self) -> RouteLevel {
        if self.routed {
            PREFERRED
        } else if self.up {
            FALLBACK
        } else {
            UNREACHED
        }
    }
}

/// A switch `sw` learns routing state `epoch` at `at` (`Router::reconverge` asks the engine to
/// schedule it; the engine then calls `Router::learn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RouteLearn {
    pub at: SimTime,
    pub sw: u32,
    pub epoch: u32,
}

/// Where a QP runs: its NICs at both ends, its UDP source port, its QP numbers (source,
/// destination) and the ECMP hash of its header fields (`Router::qp_route`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpRoute {
    pub src_nic: u32,
    pub dst_nic: u32,
    pub sport: u16,
    pub qpn: [u32; 2],
    pub hash: u32,
}

/// The first QP number a host hands out; later QPs count up from it, as a NIC numbers its
/// QPs in creation order (the low numbers are the special QPs 0 and 1 and the driver's own).
const FIRST_QPN: u32 = 0x100;

/// The hashed fields as the bit set `Router::hash_fields` holds (bit 0 source IP … bit 4
/// destination port, bit 5 destination QPN, bit 6 source QPN).
pub(crate) fn hash_field_mask(fields: &[HashField]) -> u8 {
    fields.iter().fold(0, |m, f| {
        m | 1
            << match f {
                HashField::SrcIp => 0,
                HashField::DstIp => 1,
                HashField::Protocol => 2,
                HashField::SrcPort => 3,
                HashField::DstPort => 4,
                HashField::DestQpn => 5,
                HashField::SrcQpn => 6,
            }
    })
}

/// The ECMP hash seed of switch `i` for a base seed: its own, or the same everywhere.
fn switch_seed(base: u64, i: usize, per_switch: bool) -> u64 {
    if per_switch {
        mix64(base ^ mix64(i as u64 + 1))
    } else {
        mix64(base)
    }
}

/// Entries of a switch's flowlet table (CONGA's has 64K; 4096 of 12 bytes per switch that
/// forwards flowlets is enough for the flows a twin runs).
const FLOWLET_SLOTS: usize = 4096;

/// One flowlet table entry: the member its flowlet took and when its last packet passed. As
/// in CONGA the entry has no tag: flows hashed to one entry share it (and its member) and
/// keep it alive together, so a collision never reorders a flow, it only delays a move.
#[derive(Clone, Copy)]
struct Flowlet {
    port: u32,
    last: SimTime,
}

/// An engine switch's ECMP hash seed and its node.
#[derive(Clone, Copy)]
struct SwitchHash {
    seed: u64,
    node: u32,
}

/// Routing of one fabric (see the module doc). Engine switches are the model's switch nodes
/// in node order, NICs the hosts' ports in port order: the numbering both engines use.
pub struct Router<'m> {
    m: &'m Model,
    fib: Fib,
    /// Per model port.
    links: Vec<Link>,
    /// Per node: its engine switch (`NONE` for a host).
    node_sw: Vec<u32>,
    /// Per engine switch: its node and its ECMP hash seed (read together, per hop).
    sw: Vec<SwitchHash>,
    /// Per node: its first NIC (`NONE` for a switch); per NIC, its port and host.
    node_nic: Vec<u32>,
    nic_port: Vec<u32>,
    nic_node: Vec<u32>,
    /// QPs created so far per host (a multi-port host takes its ports round-robin).
    qps_at: Vec<u32>,
    /// The header fields hashed, a bit set (`hash_field_mask`).
    hash_fields: u8,
    /// A→B and B→A hash alike (`[routing] symmetric_hash`).
    symmetric: bool,
    /// Routing states, one per link change (epoch): `views[e][row * groups + g]` = how switch
    /// `row` still reaches destination group `g` over the surviving equal-cost paths, a
    /// `RouteLevel` (routing reconverged). `None`: every link up and routed. A state no switch
    /// holds any more is emptied.
    views: Vec<Option<Vec<u8>>>,
    /// The routing state each switch has learned (index into `views`).
    sw_view: Vec<u32>,
    /// `views` below this index are emptied.
    views_freed: usize,
    /// Per switch hop, how long a link change takes to reach a switch.
    convergence_per_hop: SimTime,
    /// The stream of UDP source ports, one per QP in posting order.
    sport_rng: Rng,
    /// Per engine switch: its data plane forwards nothing (a warm reboot); its routes stand.
    frozen: Vec<bool>,
    /// `[routing] load_balancing`.
    lb: LoadBalancing,
    /// Idle time after which a flowlet may move (`flowlet` mode).
    flowlet_gap: SimTime,
    /// Per engine switch, its flowlet table (allocated at its first flowlet).
    flowlets: Vec<Vec<Flowlet>>,
}

impl<'m> Router<'m> {
    /// The routing of fabric `m` with every link up, its source ports drawn from `seed`'s
    /// stream.
    pub fn new(m: &'m Model, seed: u64) -> Result<Router<'m>, Vec<Diagnostic>> {
        let convergence_per_hop = match m.config.routing.convergence_us_per_hop {
            None => SimTime::ZERO,
            Some(us) if us.is_finite() && (0.0..1e9).contains(&us) => SimTime::from_secs_f64(us * 1e-6),
            Some(us) => {
                return Err(vec![Diagnostic::new(
                    "routing.convergence_us_per_hop",
                    format!("convergence_us_per_hop = {us} is not a time in µs"),
                    "e.g. 100 (µs per switch hop); 0 or leave it out: every switch learns at once",
                )])
            }
        };
        let lb = m.config.routing.load_balancing;
        let flowlet_gap = rocelab_model::lb::flowlet_gap(&m.config.routing).map_err(|d| vec![d])?;
        let per_switch = m.config.routing.per_switch_seed;
        let mut node_sw = vec![NONE; m.nodes.len()];
        let mut node_nic = vec![NONE; m.nodes.len()];
        let (mut sw, mut nic_port, mut nic_node) = (Vec::<SwitchHash>::new(), Vec::new(), Vec::new());
        for (i, n) in m.nodes.iter().enumerate() {
            match n.role {
                Role::Switch { .. } => {
                    node_sw[i] = sw.len() as u32;
                    sw.push(SwitchHash {
                        seed: switch_seed(m.config.routing.ecmp_seed, i, per_switch),
                        node: i as u32,
                    });
                }
                Role::Host { .. } => {
                    node_nic[i] = nic_port.len() as u32;
                    for p in n.ports() {
                        nic_port.push(p.0);
                        nic_node.push(i as u32);
                    }
                }
            }
        }
        let links = m
            .ports
            .iter()
            .map(|p| Link { node: p.node.0, peer: p.peer.0, up: true, routed: true, withdrawn: false })
            .collect();
        Ok(Router {
            m,
            fib: Fib::new(&m.routing, |p| m.port(p).node.0, sw.iter().map(|s| s.node)),
            links,
            sw_view: vec![0; sw.len()],
            node_sw,
            sw,
            node_nic,
            nic_port,
            nic_node,
            qps_at: vec![0; m.nodes.len()],
            hash_fields: hash_field_mask(&m.config.routing.ecmp_hash_fields),
            symmetric: m.config.routing.symmetric_hash,
            views: vec![None],
            views_freed: 0,
            convergence_per_hop,
            sport_rng: Rng::new(seed, 0x5150_0000),
            frozen: vec![false; m.nodes.len()],
            lb,
            flowlet_gap,
            flowlets: Vec::new(),
        })
    }

    /// The engine switch of node `node` (`u32::MAX` for a host).
    pub(crate) fn switch_of(&self, node: u32) -> u32 {
        self.node_sw[node as usize]
    }

    /// The first NIC of node `node` (`u32::MAX` for a switch).
    pub(crate) fn first_nic(&self, node: u32) -> u32 {
        self.node_nic[node as usize]
    }

    /// The model port of NIC `nic`.
    pub(crate) fn nic_port(&self, nic: u32) -> u32 {
        self.nic_port[nic as usize]
    }

    /// The NICs of `host` (one per port).
    pub(crate) fn nics_of(&self, host: NodeId) -> std::ops::Range<u32> {
        let first = self.node_nic[host.idx()];
        first..first + self.m.node(host).num_ports
    }

    /// The wire of port `port` works (as routing was told).
    pub(crate) fn is_up(&self, port: u32) -> bool {
        self.links[port as usize].up
    }

    /// The 5-tuple fields hashed now, a bit set (`hash_field_mask`).
    #[cfg(test)]
    pub(crate) fn hash_fields(&self) -> u8 {
        self.hash_fields
    }

    /// The hash of a QP's header fields as a switch computes it: source and destination host,
    /// UDP source port (the destination port is RoCEv2's 4791), QP numbers `qpn` (source,
    /// destination), each only if hashed. Symmetric hashing orders the two hosts and the two
    /// QPNs, so the QP the other way (same source port, as Linux derives it from the QPN
    /// pair) hashes the same.
    pub(crate) fn flow_hash(&self, src: u32, dst: u32, sport: u32, qpn: [u32; 2]) -> u32 {
        let f = self.hash_fields;
        let (src, dst, [sqpn, dqpn]) = if self.symmetric && src > dst {
            (dst, src, [qpn[1], qpn[0]])
        } else if self.symmetric && src == dst {
            (src, dst, [qpn[0].min(qpn[1]), qpn[0].max(qpn[1])])
        } else {
            (src, dst, qpn)
        };
        let mut h = 0x1234_5678_9abc_def0u64;
        if f & 1 != 0 {
            h = mix64(h ^ src as u64);
        }
        if f & 2 != 0 {
            h = mix64(h ^ ((dst as u64) << 20));
        }
        if f & 4 != 0 {
            h = mix64(h ^ 17);
        }
        if f & 8 != 0 {
            h = mix64(h ^ ((sport as u64) << 40));
        }
        if f & 16 != 0 {
            h = mix64(h ^ crate::engine::ROCE_UDP_PORT as u64);
        }
        // (The QPN fields are mixed in only when hashed, so the 5-tuple's hash stays what it
        // was without them.)
        if f & 32 != 0 {
            h = mix64(h ^ ((dqpn as u64) << 8) ^ 0xd0);
        }
        if f & 64 != 0 {
            h = mix64(h ^ ((sqpn as u64) << 8) ^ 0x50);
        }
        (h >> 32) as u32
    }

    /// The NIC (port) of `host` for its next QP: round-robin over the host's ports.
    pub(crate) fn host_nic(&mut self, host: NodeId) -> u32 {
        let n = &mut self.qps_at[host.idx()];
        let nic = self.node_nic[host.idx()] + *n % self.m.node(host).num_ports.max(1);
        *n += 1;
        self.live_nic(nic)
    }

    /// `nic`, or while its port is down the next NIC of the same host whose port is up (LAG
    /// tx affinity); `nic` itself when none is.
    pub(crate) fn live_nic(&self, nic: u32) -> u32 {
        let up = |n: u32| self.links[self.nic_port[n as usize] as usize].up;
        if up(nic) {
            return nic;
        }
        let all = self.nics_of(NodeId(self.nic_node[nic as usize]));
        let (first, ports) = (all.start, all.end - all.start);
        (1..ports).map(|k| first + (nic - first + k) % ports).find(|&n| up(n)).unwrap_or(nic)
    }

    /// The NICs, source port and ECMP hash QP `k` of message `f` gets: the host ports
    /// round-robin, the source port from the message or the run's stream. Draws in QP
    /// creation order, so an engine calling it for the same messages gets the same QPs.
    pub(crate) fn qp_route(&mut self, f: &FlowSpec, k: u32) -> QpRoute {
        // Each end numbers the QP in its own creation order (QPs counted per host, as the
        // port round-robin counts them).
        let sqpn = FIRST_QPN + self.qps_at[f.src.idx()];
        let src_nic = self.host_nic(f.src);
        let dqpn = FIRST_QPN + self.qps_at[f.dst.idx()];
        let dst_nic = self.host_nic(f.dst);
        let sport = match f.sport {
            Some(base) => crate::workload::sport_after(base, k) as u32,
            None => self.sport_rng.sport() as u32,
        };
        let qpn = [sqpn, dqpn];
        let hash = self.flow_hash(f.src.0, f.dst.0, sport, qpn);
        QpRoute { src_nic, dst_nic, sport: sport as u16, qpn, hash }
    }

    /// The equal-cost egress ports of switch `sw` toward host `dst`, before failures.
    #[inline]
    pub(crate) fn candidates(&self, sw: u32, dst: u32) -> &[PortId] {
        self.fib.candidates(sw, dst, self.m.routing.host_group[dst as usize])
    }

    /// The node of engine switch `sw`.
    #[inline]
    pub(crate) fn switch_node(&self, sw: u32) -> u32 {
        self.sw[sw as usize].node
    }

    /// No link has changed since the start: every switch forwards by the full table.
    #[inline]
    pub(crate) fn pristine(&self) -> bool {
        self.views.len() == 1
    }

    /// Member `c` of switch `node`'s table is its own and its routes stand (what a switch sees
    /// of its own links at once; all a pristine fabric needs to check).
    #[inline]
    pub(crate) fn own_and_routed(&self, c: PortId, node: u32) -> bool {
        let l = &self.links[c.idx()];
        l.routed && l.node == node
    }

    /// The routing state switch `sw` forwards by.
    #[inline]
    pub(crate) fn view(&self, sw: u32) -> View<'_> {
        let e = self.sw_view[sw as usize] as usize;
        View { table: self.views[e].as_deref(), current: e + 1 == self.views.len() }
    }

    /// The egress port switch `sw` forwards a packet for host `dst` with flow hash `hash` on
    /// (`u32::MAX`: no usable port). ECMP by the switch's seeded hash, resilient on failure,
    /// judged by the routing state the switch has learned.
    #[inline]
    pub(crate) fn choose(&self, sw: u32, dst: u32, hash: u32) -> u32 {
        let (cands, owners) = self.fib.candidates_and_owners(sw, dst, self.m.routing.host_group[dst as usize]);
        if cands.is_empty() {
            return NONE;
        }
        let s = self.sw[sw as usize];
        let (node, h) = (s.node, mix64(hash as u64 ^ s.seed));
        let k = member(h, cands.len());
        let c = cands[k];
        // With no link changed since the start every link is up and routed (a change always
        // reconverges, which adds a view): a member is usable if it is the switch's own, and
        // what `view` would say needs neither its two loads nor the link table.
        if self.pristine() && owners[k] == node {
            return c.0;
        }
        let view = self.view(sw);
        if self.usable(view, c, node, dst) {
            return c.0;
        }
        self.rehash(view, cands, node, dst, h)
    }

    /// `[routing] load_balancing`.
    #[inline]
    pub(crate) fn load_balancing(&self) -> LoadBalancing {
        self.lb
    }

    /// The member switch `sw` would pick by ECMP for `hash` among `n` (before failures).
    #[inline]
    fn ecmp_index(&self, sw: u32, hash: u32, n: usize) -> usize {
        member(mix64(hash as u64 ^ self.sw[sw as usize].seed), n)
    }

    /// Member `c` of switch `sw` (node `node`) may carry traffic for `dst` now, by what the
    /// switch knows.
    #[inline]
    fn member_usable(&self, sw: u32, c: PortId, node: u32, dst: u32) -> bool {
        if self.pristine() {
            self.own_and_routed(c, node)
        } else {
            self.usable(self.view(sw), c, node, dst)
        }
    }

    /// The usable member of switch `sw` toward `dst` with the least `load`, scanning `cands`
    /// from index `base` so that ties go to it (the static or ECMP choice); `u32::MAX` if no
    /// member is usable. Adaptive routing on both link layers: InfiniBand's from the
    /// destination LID's member, RoCE's from the flow's ECMP member.
    pub(crate) fn least_loaded(
        &self,
        sw: u32,
        cands: &[PortId],
        base: usize,
        dst: u32,
        mut load: impl FnMut(PortId) -> u64,
    ) -> u32 {
        let node = self.switch_node(sw);
        let n = cands.len();
        let mut best = (NONE, u64::MAX);
        for k in 0..n {
            let c = cands[(base + k) % n];
            if !self.member_usable(sw, c, node, dst) {
                continue;
            }
            let l = load(c);
            if l < best.1 {
                best = (c.0, l);
            }
        }
        best.0
    }

    /// `adaptive`: the least-loaded usable member toward `dst` by `load`, ties to the member
    /// packet `psn` of the flow would be sprayed on (so equally loaded members share a flow's
    /// packets: ties to one fixed member would keep a flow on its ECMP path whenever the local
    /// queues are empty, blind to a collision further on); with none usable, what `choose`
    /// falls back to.
    pub(crate) fn adaptive(&self, sw: u32, dst: u32, hash: u32, psn: u32, load: impl FnMut(PortId) -> u64) -> u32 {
        let cands = self.candidates(sw, dst);
        if cands.len() < 2 {
            return self.choose(sw, dst, hash);
        }
        let base = self.ecmp_index(sw, packet_hash(hash, psn), cands.len());
        match self.least_loaded(sw, cands, base, dst, load) {
            NONE => self.choose(sw, dst, hash),
            out => out,
        }
    }

    /// `spray`: the member drawn by the switch's seeded hash of the flow and the packet's
    /// sequence number, so consecutive packets of a flow spread uniformly over the members
    /// (deterministically: a run repeats), each member judged as `choose` judges it.
    #[inline]
    pub(crate) fn spray(&self, sw: u32, dst: u32, hash: u32, psn: u32) -> u32 {
        // `choose` does the per-switch seeding and the resilient fallback.
        self.choose(sw, dst, packet_hash(hash, psn))
    }

    /// `flowlet`: the flow keeps the member its last packet took unless it has been idle for
    /// longer than the flowlet gap (or that member is no longer usable); a new flowlet takes
    /// the least-loaded member by `load`, ties to its ECMP member. The table is hashed by the
    /// flow and destination (4096 entries per switch).
    pub(crate) fn flowlet(
        &mut self,
        sw: u32,
        dst: u32,
        hash: u32,
        now: SimTime,
        load: impl FnMut(PortId) -> u64,
    ) -> u32 {
        if self.candidates(sw, dst).len() < 2 {
            return self.choose(sw, dst, hash);
        }
        if self.flowlets.is_empty() {
            self.flowlets = vec![Vec::new(); self.sw.len()];
        }
        let slot = (mix64(hash as u64 ^ dst as u64) as usize) % FLOWLET_SLOTS;
        let node = self.switch_node(sw);
        let gap = self.flowlet_gap;
        if let Some(e) = self.flowlets[sw as usize].get(slot).copied() {
            if e.port != NONE && now.0.saturating_sub(e.last.0) <= gap.0 {
                // A live flowlet: its member, or for a flow toward another destination group
                // sharing the entry (its member not among this flow's), this flow's own ECMP
                // member; either way the entry stays alive while any of its flows sends, so it
                // is re-chosen only once all of them have been idle for the gap.
                let own = self.candidates(sw, dst).iter().any(|c| c.0 == e.port);
                self.flowlets[sw as usize][slot].last = now;
                if own && self.member_usable(sw, PortId(e.port), node, dst) {
                    return e.port;
                }
                if !own {
                    return self.choose(sw, dst, hash);
                }
            }
        }
        let cands = self.candidates(sw, dst);
        let mut out = self.least_loaded(sw, cands, self.ecmp_index(sw, hash, cands.len()), dst, load);
        if out == NONE {
            out = self.choose(sw, dst, hash);
        }
        let table = &mut self.flowlets[sw as usize];
        if table.is_empty() {
            table.resize(FLOWLET_SLOTS, Flowlet { port: NONE, last: SimTime::ZERO });
        }
        table[slot] = Flowlet { port: out, last: now };
        out
    }

    /// A local port is usable if its routes stand (a switch sees its own links at once) and, by
    /// what the switch has learned, its peer still reaches `dst` over routes that stand.
    #[inline]
    pub(crate) fn usable(&self, view: View, c: PortId, node: u32, dst: u32) -> bool {
        let cp = &self.links[c.idx()];
        cp.routed && cp.node == node && self.next_hop_reaches(view, cp.peer, dst) == PREFERRED
    }

    /// How member `c` leads to `dst`: the worse of its own link and what lies beyond it.
    fn member_level(&self, view: View, c: PortId, node: u32, dst: u32) -> RouteLevel {
        let cp = &self.links[c.idx()];
        if cp.node != node {
            return UNREACHED;
        }
        cp.level().min(self.next_hop_reaches(view, cp.peer, dst))
    }

    /// Resilient hashing, as switch ASICs do it: only the flows hashed to a dead (or, at a
    /// multi-homed host's switch, a foreign, or a withdrawn) member move, spread over the usable
    /// members by a second hash; every other flow keeps its path. With no preferred member
    /// left, the last-resort ones carry the traffic.
    #[cold]
    pub(crate) fn rehash(&self, view: View, cands: &[PortId], node: u32, dst: u32, h: u64) -> u32 {
        let levels = || cands.iter().map(|c| (c, self.member_level(view, *c, node, dst)));
        let best = levels().map(|(_, l)| l).max().unwrap_or(UNREACHED);
        if best == UNREACHED {
            return NONE;
        }
        let live = levels().filter(|(_, l)| *l == best).count() as u64;
        let k = (mix64(h) % live) as usize;
        levels().filter(|(_, l)| *l == best).nth(k).map_or(NONE, |(c, _)| c.0)
    }

    /// After a failure or a withdrawal, how a next hop still reaches the destination, as far as
    /// the deciding switch knows.
    #[inline]
    fn next_hop_reaches(&self, view: View, peer_port: u32, dst: u32) -> RouteLevel {
        let Some(reach) = view.table else { return PREFERRED };
        let r = &self.m.routing;
        let node = self.links[peer_port as usize].node as usize;
        let row = r.switch_row[node];
        if row == NONE {
            return PREFERRED;
        }
        let cell = row as usize * r.groups.len() + r.host_group[dst as usize] as usize;
        if r.dist[cell] == 0 && view.current {
            // The next switch is one of `dst`'s own: it must still have a live link to it (a
            // dual-homed host whose link there is down is reached through its other switch).
            let attached = r.host_facing[dst as usize].iter().any(|p| {
                let hp = &self.links[p.idx()];
                hp.up && hp.node as usize == node
            });
            return if attached { PREFERRED } else { UNREACHED };
        }
        reach[cell]
    }

    /// The links (egress ports, in order) a packet of a QP leaving NIC `src_nic` (or, while its
    /// port is down, the host's next live one) for host `dst` with flow hash `hash` crosses,
    /// each switch choosing as `choose` does for the packet, into `out` (cleared first).
    /// False when no path stands (a dead end, or a loop longer than `max_hops`).
    pub(crate) fn trace_path(&self, src_nic: u32, dst: u32, hash: u32, max_hops: usize, out: &mut Vec<u32>) -> bool {
        out.clear();
        let mut port = self.nic_port[self.live_nic(src_nic) as usize];
        loop {
            let p = &self.links[port as usize];
            if !p.up || out.len() == max_hops {
                return false;
            }
            out.push(port);
            let next = self.links[p.peer as usize].node;
            if next == dst {
                return true;
            }
            let sw = self.node_sw[next as usize];
            if sw == NONE || self.frozen[sw as usize] {
                // (A frozen switch, in a warm reboot, forwards nothing: no path stands.)
                return false;
            }
            port = self.choose(sw, dst, hash);
            if port == NONE {
                return false;
            }
        }
    }

    /// The wire of port `port` goes down or comes back (its routes with it, unless withdrawn);
    /// true if that changed it. Routing changes only at `reconverge`.
    pub(crate) fn set_link_up(&mut self, port: u32, up: bool) -> bool {
        let l = &mut self.links[port as usize];
        if l.up == up {
            return false;
        }
        l.up = up;
        l.routed = up && !l.withdrawn;
        true
    }

    /// Switch `node`'s data plane stops (a warm reboot: links and routes stay) or forwards
    /// again.
    pub(crate) fn set_frozen(&mut self, node: NodeId, frozen: bool) {
        let sw = self.node_sw[node.idx()];
        if sw != NONE {
            self.frozen[sw as usize] = frozen;
        }
    }

    /// Engine switch `sw` forwards nothing now (`set_frozen`).
    #[inline]
    pub(crate) fn is_frozen(&self, sw: u32) -> bool {
        self.frozen[sw as usize]
    }

    /// The routes of port `port`'s link are withdrawn, or stand again; the wire carries on.
    pub(crate) fn set_withdrawn(&mut self, port: u32, withdrawn: bool) {
        let l = &mut self.links[port as usize];
        l.withdrawn = withdrawn;
        l.routed = l.up && !withdrawn;
    }

    /// A switch (or every switch) takes a new ECMP hash seed.
    pub(crate) fn reseed(&mut self, switch: Option<NodeId>, seed: u64) {
        let per_switch = self.m.config.routing.per_switch_seed;
        for s in &mut self.sw {
            if switch.is_none_or(|n| n.0 == s.node) {
                // Keyed by node index, as at build time.
                s.seed = switch_seed(seed, s.node as usize, per_switch);
            }
        }
    }

    /// Every switch hashes the fields of `mask` from now on (flows' hashes are the caller's to
    /// recompute with `flow_hash`).
    pub(crate) fn set_hash_fields(&mut self, mask: u8) {
        self.hash_fields = mask;
    }

    /// Switch `sw` learns routing state `epoch` (unless it already knows a newer one); states
    /// no switch holds any more are emptied.
    #[cold]
    #[inline(never)]
    pub(crate) fn learn(&mut self, sw: u32, epoch: u32) {
        let v = &mut self.sw_view[sw as usize];
        *v = (*v).max(epoch);
        let oldest = self.sw_view.iter().copied().min().unwrap_or(0) as usize;
        for t in &mut self.views[self.views_freed..oldest] {
            *t = Some(Vec::new());
        }
        self.views_freed = self.views_freed.max(oldest);
    }

    /// After a link change between ports `origin` at `now`: the switches at its ends learn the
    /// new routing state at once, each further switch `convergence_per_hop` later per switch
    /// hop, as a withdrawal travels hop by hop (those learnings go to `learns`, for the engine
    /// to schedule). Until then a switch forwards as before, into the failure.
    #[cold]
    #[inline(never)]
    fn spread_route_change(&mut self, origin: [u32; 2], now: SimTime, learns: &mut Vec<RouteLearn>) {
        let epoch = (self.views.len() - 1) as u32;
        if self.convergence_per_hop == SimTime::ZERO {
            self.sw_view.iter_mut().for_each(|v| *v = epoch);
            self.learn(0, epoch);
            return;
        }
        // Switch hops from the change, over links that are up.
        let mut hops = vec![u32::MAX; self.sw.len()];
        let mut q = std::collections::VecDeque::new();
        for p in origin {
            let sw = self.node_sw[self.links[p as usize].node as usize];
            if sw != NONE {
                hops[sw as usize] = 0;
                q.push_back(sw as usize);
            }
        }
        let m = self.m;
        while let Some(i) = q.pop_front() {
            for p in m.node(NodeId(self.sw[i].node)).ports() {
                let link = &self.links[p.idx()];
                let j = self.node_sw[self.links[link.peer as usize].node as usize];
                if link.up && j != NONE && hops[j as usize] == u32::MAX {
                    hops[j as usize] = hops[i] + 1;
                    q.push_back(j as usize);
                }
            }
        }
        for (i, &h) in hops.iter().enumerate() {
            match h {
                0 => self.sw_view[i] = self.sw_view[i].max(epoch),
                u32::MAX => {}
                h => {
                    let at = now + SimTime(self.convergence_per_hop.0 * h as u64);
                    learns.push(RouteLearn { at, sw: i as u32, epoch });
                }
            }
        }
    }

    /// Recomputes how every switch still reaches each destination group (`RouteLevel`), in
    /// order of distance: a switch reaches a group as well as its best next hop does, no better
    /// than the link to it allows. Runs after the link between ports `origin` changed at `now`,
    /// and spreads the news (`learns`: what the engine schedules).
    #[cold]
    #[inline(never)]
    pub(crate) fn reconverge(&mut self, origin: [u32; 2], now: SimTime, learns: &mut Vec<RouteLearn>) {
        if self.links.iter().all(|p| p.routed) {
            self.views.push(None);
            self.spread_route_change(origin, now, learns);
            return;
        }
        let r = &self.m.routing;
        let ng = r.groups.len();
        let rows = r.switch_row.iter().filter(|x| **x != NONE).count();
        let max_d = r.dist.iter().filter(|d| **d != rocelab_model::routing::UNREACHABLE).max().copied().unwrap_or(0);
        let mut reach = vec![UNREACHED; rows * ng];
        // An attachment switch reaches a group while one of its links to a host of the group
        // is up (host links carry no routes to withdraw).
        for (h, ports) in r.host_facing.iter().enumerate() {
            if ports.is_empty() {
                continue;
            }
            let g = r.host_group[h] as usize;
            for p in ports {
                let sp = &self.links[p.idx()];
                let row = r.switch_row[sp.node as usize];
                if sp.up && row != NONE {
                    reach[row as usize * ng + g] = PREFERRED;
                }
            }
        }
        let switches: Vec<(usize, u32)> =
            r.switch_row.iter().enumerate().filter(|(_, row)| **row != NONE).map(|(n, row)| (n, *row)).collect();
        for d in 1..=max_d {
            for &(node, row) in &switches {
                for g in 0..ng {
                    let cell = row as usize * ng + g;
                    if r.dist[cell] != d {
                        continue;
                    }
                    let hops = match r.next_hop[cell] {
                        NONE => &[][..],
                        id => &r.ecmp_groups[id as usize][..],
                    };
                    reach[cell] = hops
                        .iter()
                        .map(|p| {
                            let port = &self.links[p.idx()];
                            let prow = r.switch_row[self.links[port.peer as usize].node as usize];
                            if port.node as usize != node || prow == NONE {
                                return UNREACHED;
                            }
                            port.level().min(reach[prow as usize * ng + g])
                        })
                        .max()
                        .unwrap_or(UNREACHED);
                }
            }
        }
        self.views.push(Some(reach));
        self.spread_route_change(origin, now, learns);
    }

    /// A fault's effect on routing and hashing, with every switch learning of it at once (the
    /// flow engine's faults; the packet engine interleaves these steps with what the fault does
    /// to its wires and queues). Returns the ports whose wire changed state. Host stalls change
    /// nothing here.
    #[cold]
    pub(crate) fn apply(&mut self, action: crate::engine::FaultAction, now: SimTime) -> [Option<u32>; 2] {
        use crate::engine::FaultAction;
        let mut changed = [None; 2];
        let origin = match action {
            FaultAction::Link { ports: (a, b), up } => {
                for (k, p) in [a, b].into_iter().enumerate() {
                    if self.set_link_up(p, up) {
                        changed[k] = Some(p);
                    }
                }
                [a, b]
            }
            FaultAction::Route { ports: (a, b), withdrawn } => {
                self.set_withdrawn(a, withdrawn);
                self.set_withdrawn(b, withdrawn);
                [a, b]
            }
            FaultAction::Member { port, removed } => {
                // One switch's groups only: its own end of the link.
                self.set_withdrawn(port, removed);
                [port, self.links[port as usize].peer]
            }
            FaultAction::Freeze { switch, frozen } => {
                self.set_frozen(switch, frozen);
                return changed;
            }
            FaultAction::Reseed { switch, seed } => {
                self.reseed(switch, seed);
                return changed;
            }
            FaultAction::HashFields { mask } => {
                self.set_hash_fields(mask);
                return changed;
            }
            FaultAction::Host { .. }
            | FaultAction::Drain { .. }
            | FaultAction::NicProfile { .. }
            | FaultAction::Qps { .. } => return changed,
        };
        let mut learns = Vec::new();
        self.reconverge(origin, now, &mut learns);
        for l in learns {
            self.learn(l.sw, l.epoch);
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    //! ECMP hashing and member choice against counts worked out by hand.
    use super::*;
    use crate::engine::test_support::model;
    use std::collections::HashSet;

    /// 2 leaves, 4 spines, one uplink from each leaf to each spine (4 equal-cost members),
    /// 2 hosts per leaf; `routing` is the `[routing]` table's body.
    fn fabric(routing: &str) -> Model {
        let text = format!(
            r#"[fabric]
name = "ls"
[topology.leaf_spine]
leaves = 2
spines = 4
hosts_per_leaf = 2
uplinks_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = 100, length_m = 30 }}
leaf_model = "spectrum-2"
spine_model = "spectrum-2"
[routing]
{routing}
"#
        );
        model("ls.toml", &text)
    }

    fn node(m: &Model, name: &str) -> u32 {
        m.node_by_name(name).unwrap_or_else(|| panic!("no {name}")).0
    }

    fn sim(m: &Model) -> Router<'_> {
        Router::new(m, 1).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn sw(r: &Router, node: u32) -> u32 {
        r.switch_of(node)
    }

    /// Link between ports `a` and `b` changes as a fault changes it, every switch learning at
    /// once.
    fn reconverge(r: &mut Router, ab: [u32; 2]) {
        let mut learns = Vec::new();
        r.reconverge(ab, SimTime::ZERO, &mut learns);
        assert!(learns.is_empty(), "no convergence delay");
    }

    /// 10,000 flows host0 → host2 (leaf0 to leaf1) differing in UDP source port.
    fn hashes(sim: &Router, src: u32, dst: u32) -> Vec<u32> {
        (0..10_000u32).map(|i| sim.flow_hash(src, dst, 49_152 + i, [0x100, 0x100])).collect()
    }

    #[test]
    fn four_members_each_take_a_quarter_of_10000_flows() {
        let m = fabric("");
        let sim = sim(&m);
        let (src, dst) = (node(&m, "host0"), node(&m, "host2"));
        let leaf0 = sw(&sim, node(&m, "leaf0"));
        let cands = m.routing.candidates(NodeId(node(&m, "leaf0")), NodeId(dst)).to_vec();
        assert_eq!(cands.len(), 4, "one uplink to each of 4 spines");
        let hs = hashes(&sim, src, dst);
        assert!(hs.iter().collect::<HashSet<_>>().len() >= 9_990, "source ports give distinct hashes");
        let mut count = [0u32; 4];
        for &h in &hs {
            let out = sim.choose(leaf0, dst, h);
            let k = cands.iter().position(|c| c.0 == out).expect("a candidate");
            count[k] += 1;
        }
        // 10,000 / 4 = 2,500 each, ±5 % = ±125 (binomial σ ≈ 43).
        for (k, &c) in count.iter().enumerate() {
            assert!((2_375..=2_625).contains(&c), "member {k}: {c} of 10000 ({count:?})");
        }
        assert_eq!(count.iter().sum::<u32>(), 10_000);
    }

    #[test]
    fn a_dead_member_moves_only_its_flows_and_spreads_them_over_the_rest() {
        let m = fabric("");
        let mut sim = sim(&m);
        let (src, dst) = (node(&m, "host0"), node(&m, "host2"));
        let leaf0 = sw(&sim, node(&m, "leaf0"));
        let cands = m.routing.candidates(NodeId(node(&m, "leaf0")), NodeId(dst)).to_vec();
        let hs = hashes(&sim, src, dst);
        let before: Vec<u32> = hs.iter().map(|&h| sim.choose(leaf0, dst, h)).collect();
        // Take the link leaf0 – (the spine behind member 1) down, as a link-down fault does.
        let dead = cands[1].0;
        let peer = m.port(PortId(dead)).peer.0;
        for p in [dead, peer] {
            assert!(sim.set_link_up(p, false));
        }
        reconverge(&mut sim, [dead, peer]);
        let mut moved = [0u32; 4];
        let mut on_dead = 0;
        for (i, &h) in hs.iter().enumerate() {
            let after = sim.choose(leaf0, dst, h);
            assert_ne!(after, dead, "flow {i} still on the dead member");
            assert_ne!(after, NONE, "flow {i} has no path");
            if before[i] == dead {
                on_dead += 1;
                moved[cands.iter().position(|c| c.0 == after).unwrap()] += 1;
            } else {
                assert_eq!(after, before[i], "flow {i} was not on the dead member and moved");
            }
        }
        assert!((2_375..=2_625).contains(&on_dead), "{on_dead} flows were on member 1");
        // The moved flows spread over the 3 live members: on_dead / 3 each, ±10 % (σ ≈ 24).
        assert_eq!(moved[1], 0);
        let third = on_dead as f64 / 3.0;
        for k in [0, 2, 3] {
            let c = moved[k] as f64;
            assert!((c - third).abs() <= 0.10 * third, "member {k} took {c} of {on_dead} moved flows ({moved:?})");
        }
    }

    #[test]
    fn a_withdrawn_member_is_avoided_while_others_stand_and_kept_as_the_last_resort() {
        let m = fabric("");
        let mut sim = sim(&m);
        let (src, dst) = (node(&m, "host0"), node(&m, "host2"));
        let (leaf0, spine1) = (sw(&sim, node(&m, "leaf0")), sw(&sim, node(&m, "spine1")));
        let cands = m.routing.candidates(NodeId(node(&m, "leaf0")), NodeId(dst)).to_vec();
        // Withdraw the routes of the link leaf0 – (the spine behind member 1), as a
        // route-withdraw fault does: the link stays up.
        let (w, peer) = (cands[1].0, m.port(cands[1]).peer.0);
        for p in [w, peer] {
            sim.set_withdrawn(p, true);
        }
        reconverge(&mut sim, [w, peer]);
        let hs = hashes(&sim, src, dst);
        assert!(hs.iter().all(|&h| sim.choose(leaf0, dst, h) != w), "leaf0 has 3 members whose routes stand");
        // The spine behind it reaches host0 only over the withdrawn link: it keeps using it
        // (RFC 8326: routes withdrawn gracefully stay as the last resort), so nothing queued
        // there or on its way is black-holed.
        let spine = m.port(PortId(peer)).node.0;
        assert_eq!(sw(&sim, spine), spine1, "member 1 leads to spine1");
        let back = sim.flow_hash(dst, src, 50_000, [0x100, 0x100]);
        assert_eq!(sim.choose(spine1, src, back), peer);
        // With the link down instead, the spine has no way to host0 at all.
        for p in [w, peer] {
            assert!(sim.set_link_up(p, false));
        }
        reconverge(&mut sim, [w, peer]);
        assert_eq!(sim.choose(spine1, src, back), NONE);
    }

    #[test]
    fn removing_the_source_port_field_makes_flows_differing_only_in_it_collide() {
        let full = fabric("");
        let no_sport = fabric(r#"ecmp_hash_fields = ["src-ip", "dst-ip", "protocol", "dst-port"]"#);
        let (sf, sn) = (sim(&full), sim(&no_sport));
        assert_eq!(sf.hash_fields(), 0b11111);
        assert_eq!(sn.hash_fields(), 0b10111, "src-port is bit 3");
        let (src, dst) = (node(&full, "host0"), node(&full, "host2"));
        let with: HashSet<u32> = (0..1_000u32).map(|i| sf.flow_hash(src, dst, 49_152 + i, [0x100, 0x100])).collect();
        let without: HashSet<u32> = (0..1_000u32).map(|i| sn.flow_hash(src, dst, 49_152 + i, [0x100, 0x100])).collect();
        // 1,000 source ports: (nearly) 1,000 hashes with the field, exactly 1 without it.
        assert!(with.len() >= 999, "{} distinct hashes", with.len());
        assert_eq!(without.len(), 1);
        // So every such flow takes the same member at leaf0.
        let leaf0 = sw(&sn, node(&no_sport, "leaf0"));
        let outs: HashSet<u32> = without.iter().map(|&h| sn.choose(leaf0, dst, h)).collect();
        assert_eq!(outs.len(), 1);
        // The fields still hashed still matter: another source or destination, another hash.
        let h = sn.flow_hash(src, dst, 50_000, [0x100, 0x100]);
        assert_ne!(h, sn.flow_hash(node(&full, "host1"), dst, 50_000, [0x100, 0x100]));
        assert_ne!(h, sn.flow_hash(src, node(&full, "host3"), 50_000, [0x100, 0x100]));
    }
    /// Meta's Enhanced ECMP: a UDF puts the BTH destination QPN into the hash. 1,000 QPs
    /// between the same two hosts on the same source port differ only in that QPN.
    #[test]
    fn changing_only_the_destination_qpn_moves_a_flow_under_dest_qpn_hashing_and_not_without_it() {
        let five = fabric("");
        let eecmp =
            fabric(r#"ecmp_hash_fields = ["src-ip", "dst-ip", "protocol", "src-port", "dst-port", "dest-qpn"]"#);
        let (r5, re) = (sim(&five), sim(&eecmp));
        assert_eq!(re.hash_fields(), 0b10_0000 | 0b11111, "dest-qpn is bit 5");
        let (src, dst) = (node(&five, "host0"), node(&five, "host2"));
        let leaf0 = sw(&re, node(&eecmp, "leaf0"));
        let qps = |r: &Router| -> Vec<u32> {
            (0..1_000u32).map(|q| r.flow_hash(src, dst, 50_000, [0x100, 0x100 + q])).collect()
        };
        let (h5, he) = (qps(&r5), qps(&re));
        // Without the field the QPN is invisible: one hash, one member for all 1,000.
        assert_eq!(h5.iter().collect::<HashSet<_>>().len(), 1);
        assert_eq!(h5.iter().map(|&h| r5.choose(leaf0, dst, h)).collect::<HashSet<_>>().len(), 1);
        // With it, (nearly) 1,000 hashes; each step of the QPN moves the flow to another of the
        // 4 members with probability 3/4: 749.25 of 999 steps, ±5 % (σ ≈ 14).
        assert!(he.iter().collect::<HashSet<_>>().len() >= 999);
        let members: Vec<u32> = he.iter().map(|&h| re.choose(leaf0, dst, h)).collect();
        let moved = members.windows(2).filter(|w| w[0] != w[1]).count();
        assert!((712..=787).contains(&moved), "{moved} of 999 QPN steps changed the member");
        assert_eq!(members.iter().collect::<HashSet<_>>().len(), 4, "every member is used");
        // The source QPN is not in that field set: changing it alone changes nothing.
        assert_eq!(re.flow_hash(src, dst, 50_000, [0x101, 0x100]), re.flow_hash(src, dst, 50_000, [0x100, 0x100]));
        // Adding the field does not change the 5-tuple's part: without QPNs hashed both agree.
        assert_eq!(r5.flow_hash(src, dst, 50_000, [7, 9]), sim(&fabric("")).flow_hash(src, dst, 50_000, [1, 2]));
    }

    /// Symmetric hashing: the QP from B back to A (its QPNs the other way round, the same
    /// source port) hashes as A→B does; with one seed for every switch (the fabric's member
    /// lists in the same spine order) it crosses the same spine. Asymmetric, a quarter match.
    #[test]
    fn symmetric_hashing_sends_the_reverse_qp_through_the_same_spine() {
        let same_spine_share = |routing: &str| -> (f64, bool) {
            let m = fabric(routing);
            let r = sim(&m);
            let (a, b) = (node(&m, "host0"), node(&m, "host2"));
            let (na, nb) = (r.first_nic(a), r.first_nic(b));
            let spine_of = |path: &[u32]| m.port(PortId(path[1])).peer;
            let mut same = 0;
            let mut all_hashes_equal = true;
            let (mut fw, mut bw) = (Vec::new(), Vec::new());
            for i in 0..2_000u32 {
                let (sport, qpn) = (49_152 + i, [0x100 + i, 0x900 + i]);
                let h = r.flow_hash(a, b, sport, qpn);
                let back = r.flow_hash(b, a, sport, [qpn[1], qpn[0]]);
                all_hashes_equal &= h == back;
                assert!(r.trace_path(na, b, h, 8, &mut fw) && r.trace_path(nb, a, back, 8, &mut bw));
                if m.port(spine_of(&fw)).node == m.port(spine_of(&bw)).node {
                    same += 1;
                }
            }
            (same as f64 / 2_000.0, all_hashes_equal)
        };
        let fields =
            r#"ecmp_hash_fields = ["src-ip", "dst-ip", "protocol", "src-port", "dst-port", "dest-qpn", "src-qpn"]"#;
        let (sym, sym_eq) = same_spine_share(&format!("{fields}\nper_switch_seed = false\nsymmetric_hash = true"));
        assert!(sym_eq, "symmetric: every reverse QP hashes as its forward one");
        assert_eq!(sym, 1.0, "symmetric: every reverse path crosses the forward path's spine");
        let (asym, asym_eq) = same_spine_share(&format!("{fields}\nper_switch_seed = false"));
        assert!(!asym_eq);
        // 4 spines, independent hashes: 1/4 ± 0.05 (σ ≈ 0.01).
        assert!((0.20..=0.30).contains(&asym), "asymmetric: {asym} of reverse paths share the spine");
    }

    /// Flowlet switching: a flow keeps its member while its packets come closer together
    /// than the gap, whatever the loads say; after a longer idle gap it takes the
    /// least-loaded member.
    #[test]
    fn a_flowlet_moves_only_after_an_idle_gap_longer_than_the_threshold() {
        let m = fabric("load_balancing = \"flowlet\"\nflowlet_gap_us = 50");
        let mut r = sim(&m);
        let dst = node(&m, "host2");
        let leaf0 = sw(&r, node(&m, "leaf0"));
        let cands: Vec<u32> = r.candidates(leaf0, dst).iter().map(|c| c.0).collect();
        // Every member but `free` is loaded.
        let only = |free: u32| move |c: PortId| if c.0 == free { 0 } else { 100_000 };
        let h = 0xdead_beef;
        let us = SimTime::from_us;
        assert_eq!(r.flowlet(leaf0, dst, h, us(0), only(cands[2])), cands[2]);
        // Packets every 40 µs for 1 ms (< 50 µs apart): it stays, though member 0 is now free.
        for k in 1..=25 {
            assert_eq!(r.flowlet(leaf0, dst, h, us(40 * k), only(cands[0])), cands[2], "moved at {} µs", 40 * k);
        }
        // 60 µs of silence: a new flowlet, on the free member.
        assert_eq!(r.flowlet(leaf0, dst, h, us(1_060), only(cands[0])), cands[0]);
        assert_eq!(r.flowlet(leaf0, dst, h, us(1_070), only(cands[3])), cands[0]);
        // Another flow has its own entry: it starts on the member free for it.
        assert_eq!(r.flowlet(leaf0, dst, h ^ 1, us(1_075), only(cands[1])), cands[1]);
        assert_eq!(r.flowlet(leaf0, dst, h, us(1_080), only(cands[3])), cands[0]);
        // Exactly the gap is not idle enough (the timeout must be exceeded).
        assert_eq!(r.flowlet(leaf0, dst, h, us(1_130), only(cands[3])), cands[0]);
        assert_eq!(r.flowlet(leaf0, dst, h, us(1_181), only(cands[3])), cands[3]);
    }

    #[test]
    fn a_traced_path_follows_each_switch_choice_and_apply_moves_only_paths_over_the_dead_link() {
        let m = fabric("");
        let mut r = sim(&m);
        let (src, dst) = (node(&m, "host0"), node(&m, "host2"));
        let nic = r.first_nic(src);
        let paths = |r: &Router| -> Vec<Vec<u32>> {
            hashes(r, src, dst)
                .iter()
                .map(|&h| {
                    let mut out = Vec::new();
                    assert!(r.trace_path(nic, dst, h, 12, &mut out), "a path stands");
                    out
                })
                .collect()
        };
        let before = paths(&r);
        for (p, &h) in before.iter().zip(&hashes(&r, src, dst)) {
            // host0 -> leaf0 -> spine -> leaf1 -> host2: 4 links, the second one leaf0's choice.
            assert_eq!(p.len(), 4);
            assert_eq!(p[0], m.node(NodeId(src)).first_port);
            assert_eq!(p[1], r.choose(sw(&r, node(&m, "leaf0")), dst, h));
            assert_eq!(m.port(PortId(p[3])).peer.0, m.node(NodeId(dst)).first_port);
        }
        // The link leaf0 - spine behind member 2 goes down, as the flow engine applies a fault.
        let cands = m.routing.candidates(NodeId(node(&m, "leaf0")), NodeId(dst)).to_vec();
        let (a, b) = (cands[2].0, m.port(cands[2]).peer.0);
        let changed = r.apply(crate::engine::FaultAction::Link { ports: (a, b), up: false }, SimTime::ZERO);
        assert_eq!(changed, [Some(a), Some(b)]);
        assert!(!r.is_up(a) && !r.is_up(b));
        let after = paths(&r);
        let mut moved = 0;
        for (p, q) in before.iter().zip(&after) {
            assert!(!q.contains(&a), "a path still crosses the dead link");
            if p.contains(&a) {
                moved += 1;
            } else {
                assert_eq!(p, q, "a path off the dead link moved");
            }
        }
        // A quarter of 10,000 ±5 %.
        assert!((2_375..=2_625).contains(&moved), "{moved} paths moved");
        // Applying it again changes nothing.
        let again = r.apply(crate::engine::FaultAction::Link { ports: (a, b), up: false }, SimTime::ZERO);
        assert_eq!(again, [None, None]);
    }
}
