//! The validated fabric: `Config -> Model`.
//!
//! `Model::from_config` checks everything a verb relies on (ids resolve, values are in range,
//! names are unique, DSCP values map to one class, rails divide) and returns every problem it
//! finds at once, each with the key path it came from. What a `Model` holds is resolved:
//! ports have a speed, delay and MTU; every host has a NIC profile with all DCQCN knobs filled
//! from its variant's defaults; every switch has a full switch model; routing is computed.
//! Lint-level mistakes (legal but unwise settings) are *not* rejected here: `rocelab lint`
//! reports them, and the engine runs them so their effect can be seen.

use crate::config::*;
use crate::diag::Diagnostic;
use crate::presets::{self, SwitchPreset};
use crate::routing::Routing;
use crate::topology::{self, Graph, Tier};
use crate::units::{BitsPerSec, SimTime};

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);
        impl $name {
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A host (NIC endpoint) or switch.
    NodeId
);
id_type!(
    /// One end of a link; ports of a node are contiguous.
    PortId
);
id_type!(LinkId);

#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    /// A NIC endpoint. `gpu_node` and `rail` place it in a GPU server.
    Host {
        nic: usize,
        gpu_node: Option<u32>,
        rail: Option<u32>,
    },
    Switch {
        model: usize,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub tier: Tier,
    pub role: Role,
    pub first_port: u32,
    pub num_ports: u32,
}

impl Node {
    pub fn is_host(&self) -> bool {
        matches!(self.role, Role::Host { .. })
    }
    pub fn first_port_id(&self) -> PortId {
        PortId(self.first_port)
    }
    pub fn ports(&self) -> impl Iterator<Item = PortId> {
        (self.first_port..self.first_port + self.num_ports).map(PortId)
    }
    pub fn rail(&self) -> Option<u32> {
        match self.role {
            Role::Host { rail, .. } => rail,
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Port {
    pub node: NodeId,
    /// Index of this port on its node (`swp0`, `swp1`, ... in reports).
    pub index: u32,
    pub peer: PortId,
    pub link: LinkId,
    pub speed: BitsPerSec,
    pub delay: SimTime,
    pub length_m: f64,
    pub mtu: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub a: PortId,
    pub b: PortId,
    /// Key path of the spec this link came from (for diagnostics).
    pub origin: String,
}

/// A switch model with every value resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchModel {
    pub name: String,
    pub params: SwitchPreset,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TrafficClass {
    pub name: String,
    pub dscp: Vec<u8>,
    pub priority: u8,
    pub queue: u8,
    pub lossless: bool,
    pub scheduler: SchedulerKind,
    pub weight: u32,
    pub carries: Vec<TrafficKind>,
    pub ecn: Option<EcnConfig>,
    /// (speed in Gb/s, thresholds) sorted by speed.
    pub ecn_per_speed: Vec<(f64, EcnConfig)>,
}

impl TrafficClass {
    /// ECN thresholds that apply on a port of this speed.
    pub fn ecn_for_speed(&self, speed_gbps: f64) -> Option<EcnConfig> {
        self.ecn_per_speed.iter().find(|(s, _)| (s - speed_gbps).abs() < 1e-6).map(|(_, e)| *e).or(self.ecn)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Watchdog {
    pub enabled: bool,
    pub detection: SimTime,
    pub restoration: SimTime,
    pub poll: SimTime,
    pub action: WatchdogAction,
}

/// Switch-side QoS, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Qos {
    pub trust: Trust,
    pub classes: Vec<TrafficClass>,
    /// DSCP -> class index; unmapped DSCPs fall to `default_class`.
    pub dscp_to_class: [u8; 64],
    /// Priority -> class index (the first class with that priority).
    pub priority_to_class: [u8; 8],
    pub default_class: usize,
    pub cnp_class: usize,
    /// Bit p set: PFC enabled on priority p.
    pub pfc_mask: u8,
    pub pfc: PfcConfig,
    pub watchdog: Watchdog,
}

impl Qos {
    pub fn pfc_enabled(&self, priority: u8) -> bool {
        priority < 8 && self.pfc_mask & (1 << priority) != 0
    }
    pub fn class_by_name(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.name == name)
    }
    /// The class RDMA data uses by default: the first that carries RDMA, else the first
    /// lossless class, else class 0.
    pub fn rdma_class(&self) -> usize {
        self.classes
            .iter()
            .position(|c| c.carries.contains(&TrafficKind::Rdma))
            .or_else(|| self.classes.iter().position(|c| c.lossless))
            .unwrap_or(0)
    }
}

/// DCQCN with every knob resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Dcqcn {
    pub variant: DcqcnVariant,
    pub g: f64,
    pub alpha_timer: SimTime,
    pub increase_timer: SimTime,
    pub byte_counter_bytes: u64,
    pub fast_recovery_steps: u32,
    pub rate_ai: BitsPerSec,
    pub rate_hai: BitsPerSec,
    pub min_rate: BitsPerSec,
    pub rate_reduce_period: SimTime,
    pub initial_alpha: f64,
    /// Rt ← Rc on every cut (`clamp_tgt_rate`).
    pub clamp_target_rate: bool,
    /// Rt ← Rc on a cut when the increase timer raised the rate since the last cut
    /// (`clamp_tgt_rate_after_time_inc`).
    pub clamp_target_rate_after_time_inc: bool,
    /// One cut removes at most this share of the rate: 1 − `rpg_min_dec_fac` / 100, since a
    /// cut keeps at least `rpg_min_dec_fac` % of the rate (NVIDIA's DCQCN parameters: "setting
    /// min_dec_fac = 25 will bound a reduction of current_rate to values above
    /// 25 %·current_rate"; 100 prevents reductions).
    pub max_cut_fraction: f64,
    /// Rate set on a QP's first CNP (`rate_to_set_on_first_cnp`); 0: keep the current rate.
    pub rate_on_first_cnp: BitsPerSec,
    pub cnp_interval: SimTime,
    pub cnp_delay: SimTime,
}

/// Host-side QoS as the NIC is configured (may disagree with the switch: lint checks).
#[derive(Clone, Debug, PartialEq)]
pub struct HostQos {
    pub trust: Trust,
    pub dscp_to_priority: [u8; 64],
    pub pfc_mask: u8,
    pub ecn_np_mask: u8,
    pub ecn_rp_mask: u8,
    pub roce_dscp: u8,
    pub cnp_dscp: u8,
    pub cnp_priority: u8,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NicProfile {
    pub name: String,
    /// `None`: the speed of the host's link.
    pub speed: Option<BitsPerSec>,
    pub mtu: u32,
    pub firmware: String,
    pub congestion_control: CongestionControl,
    pub dcqcn: Dcqcn,
    /// The other algorithms' tables (`crate::cc`); only `congestion_control`'s is used.
    pub hpcc: crate::cc::Hpcc,
    pub timely: crate::cc::Timely,
    pub dctcp: crate::cc::DctcpRate,
    pub qos: HostQos,
    pub rx_buffer_bytes: u64,
    pub rx_xoff_bytes: u64,
    /// The local ACK timeout: go back N after this long without progress; `None`: never
    /// (NAK recovery only).
    pub retransmit_timeout: Option<SimTime>,
    /// Consecutive timeouts retried before the QP goes to the error state.
    pub retry_cnt: u8,
    /// Per-QP in-flight window, bytes; 0: none (ConnectX's DCQCN is rate-based only).
    pub window_bytes: u64,
    /// Scale the window with the QP's current rate over its line rate (HPCC's `VAR_WIN`).
    pub window_scales_with_rate: bool,
    /// The window of the host's TCP without ECN (`tcp_congestion_control`).
    pub tcp_congestion_control: crate::tcp::TcpCongestionControl,
    /// `[nic] ooo_window_packets` as written (`crate::lb::ooo_window` resolves it with the
    /// fabric's load balancing).
    pub ooo_window_packets: Option<u32>,
    /// The transport of its RDMA messages (`[nic] transport`) and the UET knobs.
    pub transport: crate::uet::Transport,
    pub uet: crate::uet::Uet,
    /// Key path of the profile (`nic` or `nic_profiles.NAME`).
    pub path: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GpuNode {
    pub gpus: u32,
    pub intra_node: String,
    pub intra_node_gbytes_per_s: f64,
    pub gpu: String,
}

/// A rail: the NICs with the same index across GPU nodes, and the leaves they attach to.
#[derive(Clone, Debug, PartialEq)]
pub struct Rail {
    pub index: u32,
    pub hosts: Vec<NodeId>,
    pub leaves: Vec<NodeId>,
}

#[derive(Clone, Debug)]
pub struct Model {
    pub name: String,
    pub kind: &'static str,
    /// FNV-1a of the fabric file text, recorded in every output.
    pub fabric_hash: u64,
    pub nodes: Vec<Node>,
    pub ports: Vec<Port>,
    pub links: Vec<Link>,
    pub switch_models: Vec<SwitchModel>,
    pub qos: Qos,
    /// The egress queues as the engines run them (class → priority and queue, strict order,
    /// DWRR quanta, pause masks, ECN by port speed), resolved from `qos` and the link layer.
    pub queues: crate::queues::Queues,
    pub nics: Vec<NicProfile>,
    pub gpu_node: GpuNode,
    pub rails: Vec<Rail>,
    pub routing: Routing,
    pub pod_oversubscription: Option<f64>,
    /// The planes of a dual-ToR or multi-plane rail-optimized fabric (empty otherwise).
    pub planes: Vec<crate::planes::Plane>,
    /// The InfiniBand link layer's settings; `None` on a RoCE fabric.
    pub ib: Option<crate::infiniband::Ib>,
    /// The file's `[[traffic]]`, `[[fault]]` and `[[workload]]` tables, resolved at load.
    pub intent: crate::intent::Intent,
    /// The file as written, for verbs that need more than the model (lint, simulate).
    pub config: Config,
}

impl Model {
    /// True on an InfiniBand fabric (`[fabric] link_layer = "infiniband"`).
    pub fn is_ib(&self) -> bool {
        self.ib.is_some()
    }
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.idx()]
    }
    pub fn port(&self, id: PortId) -> &Port {
        &self.ports[id.idx()]
    }
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(|i| NodeId(i as u32))
    }
    pub fn hosts(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.iter().enumerate().filter(|(_, n)| n.is_host()).map(|(i, _)| NodeId(i as u32))
    }
    pub fn switches(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.iter().enumerate().filter(|(_, n)| !n.is_host()).map(|(i, _)| NodeId(i as u32))
    }
    /// The NIC profile of a host (panics on a switch id: callers iterate hosts).
    pub fn nic_of(&self, host: NodeId) -> &NicProfile {
        match self.node(host).role {
            Role::Host { nic, .. } => &self.nics[nic],
            Role::Switch { .. } => panic!("nic_of called on switch {}", self.node(host).name),
        }
    }
    pub fn switch_model_of(&self, sw: NodeId) -> Option<&SwitchModel> {
        match self.node(sw).role {
            Role::Switch { model } => Some(&self.switch_models[model]),
            Role::Host { .. } => None,
        }
    }
    /// A readable port name: `leaf3:swp7`, `node2-nic0:p0`.
    pub fn port_name(&self, p: PortId) -> String {
        let port = self.port(p);
        let n = self.node(port.node);
        if n.is_host() {
            format!("{}:p{}", n.name, port.index)
        } else {
            format!("{}:swp{}", n.name, port.index)
        }
    }
    /// The effective NIC speed of a host: its profile's, capped by its link.
    pub fn host_speed(&self, host: NodeId) -> BitsPerSec {
        let link = self.nodes[host.idx()].ports().map(|p| self.port(p).speed).max().unwrap_or_default();
        match self.nic_of(host).speed {
            Some(s) if s < link => s,
            _ => link,
        }
    }

    /// PFC headroom one lossless priority of a switch port needs (SONiC's model, from the
    /// port's speed, cable and MTU, the switch model's cell and pipeline figures, and the peer
    /// response time); `None` for host ports. The one formula lint and the engine share.
    pub fn required_headroom(&self, port: PortId) -> Option<presets::Headroom> {
        let p = self.port(port);
        let sm = self.switch_model_of(p.node)?;
        let sp = &sm.params;
        let speed_gbps = p.speed.gbps();
        let lossless_mtu = self.nics.iter().map(|n| n.mtu as u64).max().unwrap_or(4096);
        Some(presets::headroom(presets::HeadroomInputs {
            speed_gbps,
            cable_m: p.length_m,
            port_mtu: p.mtu as u64,
            lossless_mtu,
            cell_bytes: sp.cell_bytes as u64,
            pipeline_latency_bytes: sp.pipeline_latency_bytes,
            mac_phy_delay_bytes: sp.mac_phy_delay_bytes,
            gearbox_delay_bytes: sp.gearbox_delay_bytes,
            peer_response_quanta: self
                .qos
                .pfc
                .peer_response_quanta
                .unwrap_or_else(|| presets::peer_response_quanta(speed_gbps)),
            small_packet_percentage: 100,
        }))
    }

    /// Headroom configured for one lossless priority of a switch port: `qos.pfc.headroom_bytes`
    /// when set, else what `required_headroom` computes; 0 for host ports.
    pub fn headroom_in_force(&self, port: PortId) -> u64 {
        match self.required_headroom(port) {
            None => 0,
            Some(h) => self.qos.pfc.headroom_bytes.unwrap_or(h.size_bytes),
        }
    }

    /// Validates a config; `text` is hashed as the fabric identity.
    pub fn from_config(config: Config, text: &str) -> Result<Model, Vec<Diagnostic>> {
        Self::from_config_observed(config, text, &|_| {})
    }

    /// `from_config`, naming each stage to `stage` as it starts (for a progress display: a
    /// million-host fabric takes a while to build and route).
    pub fn from_config_observed(config: Config, text: &str, stage: crate::Stage) -> Result<Model, Vec<Diagnostic>> {
        let mut errs = Vec::new();
        stage("building the topology");
        let graph = topology::build(&config.topology, &mut errs);
        stage("checking switch models and QoS");
        let switch_models = resolve_switch_models(&config, graph.as_ref(), &mut errs);
        // (A UET fabric left on the default classes runs its RDMA class lossy.)
        crate::uet::check_link_layer(&config, &mut errs);
        let uet_qos = crate::uet::lossy_default_qos(&config);
        let qos = resolve_qos(uet_qos.as_ref().unwrap_or(&config.qos), &mut errs);
        check_simulation(&config.simulation, &mut errs);
        let ib = crate::infiniband::resolve(&config, &mut errs);
        let gpu_node = resolve_gpu_node(&config);
        let (graph, qos) = match (graph, qos) {
            (Some(g), Some(q)) if errs.is_empty() => (g, q),
            _ => return Err(errs),
        };
        let max_host_speed = graph
            .links
            .iter()
            .filter(|l| graph.nodes[l.a as usize].tier == Tier::Host || graph.nodes[l.b as usize].tier == Tier::Host)
            .map(|l| l.speed)
            .max()
            .unwrap_or(BitsPerSec::from_gbps(100));
        let mut nics = vec![resolve_nic("default", "nic", &config.nic, &qos, max_host_speed, &mut errs)];
        for (name, p) in &config.nic_profiles {
            nics.push(resolve_nic(name, &format!("nic_profiles.{name}"), p, &qos, max_host_speed, &mut errs));
        }
        for (i, a) in config.nic_assign.iter().enumerate() {
            if !config.nic_profiles.contains_key(&a.profile) {
                errs.push(Diagnostic::new(
                    format!("nic_assign[{i}].profile"),
                    format!("NIC profile `{}` is not defined", a.profile),
                    "define it as [nic_profiles.NAME], or fix the name",
                ));
            }
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        let model_index = |name: &Option<String>| -> usize {
            let n = name.as_deref().unwrap_or(presets::DEFAULT_SWITCH_PRESET);
            switch_models.iter().position(|m| m.name == n).expect("resolved above")
        };
        // Lay out nodes with contiguous ports.
        let n = graph.nodes.len();
        let mut degree = vec![0u32; n];
        for l in &graph.links {
            degree[l.a as usize] += 1;
            degree[l.b as usize] += 1;
        }
        let mut nodes = Vec::with_capacity(n);
        let mut next_port = 0u32;
        for (i, g) in graph.nodes.iter().enumerate() {
            let role = if g.tier == Tier::Host {
                let nic = config
                    .nic_assign
                    .iter()
                    .rev()
                    .find(|a| a.hosts.iter().any(|pat| glob_match(pat, &g.name)))
                    .and_then(|a| nics.iter().position(|p| p.name == a.profile))
                    .unwrap_or(0);
                Role::Host { nic, gpu_node: g.gpu_node, rail: g.rail }
            } else {
                Role::Switch { model: model_index(&g.model) }
            };
            nodes.push(Node { name: g.name.clone(), tier: g.tier, role, first_port: next_port, num_ports: degree[i] });
            next_port += degree[i];
        }
        let mut fill = vec![0u32; n];
        let mut ports = vec![
            Port {
                node: NodeId(0),
                index: 0,
                peer: PortId(0),
                link: LinkId(0),
                speed: BitsPerSec(0),
                delay: SimTime::ZERO,
                length_m: 0.0,
                mtu: 0
            };
            next_port as usize
        ];
        let mut links = Vec::with_capacity(graph.links.len());
        for (li, l) in graph.links.iter().enumerate() {
            let mut alloc = |node: u32| {
                let idx = nodes[node as usize].first_port + fill[node as usize];
                fill[node as usize] += 1;
                PortId(idx)
            };
            let (pa, pb) = (alloc(l.a), alloc(l.b));
            for (p, q, node) in [(pa, pb, l.a), (pb, pa, l.b)] {
                ports[p.idx()] = Port {
                    node: NodeId(node),
                    index: p.0 - nodes[node as usize].first_port,
                    peer: q,
                    link: LinkId(li as u32),
                    speed: l.speed,
                    delay: l.delay,
                    length_m: l.length_m,
                    mtu: l.mtu,
                };
            }
            links.push(Link { a: pa, b: pb, origin: l.origin.clone() });
        }
        // Hosts must attach to the fabric.
        for (i, nd) in nodes.iter().enumerate() {
            if nd.num_ports == 0 {
                errs.push(Diagnostic::new(
                    "topology",
                    format!("{} `{}` has no links", if nd.is_host() { "host" } else { "switch" }, graph.nodes[i].name),
                    "connect it, or remove it",
                ));
            }
        }
        let cells = crate::routing::table_cells(&nodes, &ports);
        if cells > crate::routing::MAX_TABLE_CELLS {
            errs.push(Diagnostic::new(
                "topology",
                format!(
                    "routing tables would need {cells} cells (switches x destination leaves), more than \
                     rocelab's limit of {}",
                    crate::routing::MAX_TABLE_CELLS
                ),
                "check the counts; a 100k-GPU rail-optimized fabric needs about 15 million",
            ));
            return Err(errs);
        }
        let rails = collect_rails(&nodes, &ports);
        stage("computing ECMP routes");
        let routing = Routing::compute(&nodes, &ports);
        stage("checking the routes");
        if let Err(d) = routing.check_connected(&nodes) {
            errs.push(d);
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        let queues = crate::queues::Queues::resolve(&qos, ib.as_ref());
        let mut model = Model {
            name: if config.fabric.name.is_empty() { graph.kind.to_string() } else { config.fabric.name.clone() },
            kind: graph.kind,
            fabric_hash: crate::fnv1a64(text.as_bytes()),
            nodes,
            ports,
            links,
            switch_models,
            qos,
            queues,
            nics,
            gpu_node,
            rails,
            routing,
            pod_oversubscription: graph.pod_oversubscription,
            planes: crate::planes::collect(&graph.nodes),
            ib,
            intent: crate::intent::Intent::default(),
            config,
        };
        // Run intent last: it names hosts, switches and links of the built fabric.
        stage("checking traffic, faults and workloads");
        model.intent = crate::intent::resolve(&model, &mut errs);
        crate::scenario::check(&model.config.scenario, &mut errs);
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(model)
    }
}

fn collect_rails(nodes: &[Node], ports: &[Port]) -> Vec<Rail> {
    let mut rails: Vec<Rail> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if let Some(r) = n.rail() {
            while rails.len() <= r as usize {
                let index = rails.len() as u32;
                rails.push(Rail { index, hosts: vec![], leaves: vec![] });
            }
            let rail = &mut rails[r as usize];
            rail.hosts.push(NodeId(i as u32));
            for p in n.ports() {
                let leaf = ports[ports[p.idx()].peer.idx()].node;
                if !rail.leaves.contains(&leaf) {
                    rail.leaves.push(leaf);
                }
            }
        }
    }
    for r in &mut rails {
        r.leaves.sort();
    }
    rails
}

/// `*` matches any run of characters, `?` one character.
pub fn glob_match(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

fn alpha_ok(v: f64) -> bool {
    v > 0.0 && (v.is_finite() || v == f64::INFINITY)
}

fn resolve_switch_models(config: &Config, graph: Option<&Graph>, errs: &mut Vec<Diagnostic>) -> Vec<SwitchModel> {
    let mut out: Vec<SwitchModel> =
        presets::SWITCH_PRESETS.iter().map(|p| SwitchModel { name: p.name.to_string(), params: p.clone() }).collect();
    for (name, c) in &config.switch_models {
        let path = format!("switch_models.{name}");
        let base_name = c.preset.as_deref().unwrap_or(presets::DEFAULT_SWITCH_PRESET);
        let Some(base) = presets::switch_preset(base_name) else {
            let names: Vec<&str> = presets::SWITCH_PRESETS.iter().map(|p| p.name).collect();
            errs.push(Diagnostic::new(
                format!("{path}.preset"),
                format!("unknown switch preset `{base_name}`"),
                format!("use one of: {}", names.join(", ")),
            ));
            continue;
        };
        let mut p = base.clone();
        let mut any_override = false;
        macro_rules! set {
            ($f:ident) => {
                if let Some(v) = c.$f {
                    p.$f = v;
                    any_override = true;
                }
            };
        }
        set!(buffer_bytes);
        set!(cell_bytes);
        set!(ports);
        set!(ingress_lossless_alpha);
        set!(ingress_lossy_alpha);
        set!(egress_lossless_alpha);
        set!(egress_lossy_alpha);
        set!(reserve_bytes);
        set!(resume_offset_bytes);
        set!(pipeline_latency_bytes);
        set!(mac_phy_delay_bytes);
        set!(gearbox_delay_bytes);
        if p.buffer_bytes == 0 {
            errs.push(Diagnostic::new(
                format!("{path}.buffer_bytes"),
                "switch buffer must be larger than 0",
                "e.g. 64000000 for a 64 MB ASIC",
            ));
        }
        if p.cell_bytes == 0 {
            errs.push(Diagnostic::new(
                format!("{path}.cell_bytes"),
                "cell size must be at least 1 byte",
                "Spectrum cells are 144 B",
            ));
        }
        for (f, v) in [
            ("ingress_lossless_alpha", p.ingress_lossless_alpha),
            ("ingress_lossy_alpha", p.ingress_lossy_alpha),
            ("egress_lossless_alpha", p.egress_lossless_alpha),
            ("egress_lossy_alpha", p.egress_lossy_alpha),
        ] {
            if !alpha_ok(v) {
                errs.push(Diagnostic::new(
                    format!("{path}.{f}"),
                    format!("dynamic-threshold alpha must be > 0, got {v}"),
                    "α = 2^n for SAI n in -7..6, e.g. 0.125, 1, 8; use a large value for no limit",
                ));
            }
        }
        p.approximate = p.approximate && !any_override;
        let params = SwitchPreset { name: base.name, ..p };
        if let Some(existing) = out.iter_mut().find(|m| m.name == *name) {
            existing.params = params;
        } else {
            out.push(SwitchModel { name: name.clone(), params });
        }
    }
    if let Some(g) = graph {
        let mut reported = std::collections::BTreeSet::new();
        for n in &g.nodes {
            if let Some(m) = &n.model {
                if !out.iter().any(|s| &s.name == m) && reported.insert(m.clone()) {
                    let names: Vec<String> = out.iter().map(|s| s.name.clone()).collect();
                    errs.push(Diagnostic::new(
                        model_ref_path(&config.topology, m),
                        format!("switch model `{m}` (used by `{}`) is neither a preset nor declared", n.name),
                        format!("declare [switch_models.{m}] with `preset = ...`, or use one of: {}", names.join(", ")),
                    ));
                }
            }
        }
        // Port counts: a switch cannot have more links than its model has ports.
        let mut degree = vec![0u32; g.nodes.len()];
        for l in &g.links {
            degree[l.a as usize] += 1;
            degree[l.b as usize] += 1;
        }
        let mut worst: std::collections::BTreeMap<String, (u32, String)> = Default::default();
        for (i, nd) in g.nodes.iter().enumerate() {
            if nd.tier == Tier::Host {
                continue;
            }
            let mname = nd.model.clone().unwrap_or_else(|| presets::DEFAULT_SWITCH_PRESET.to_string());
            if let Some(m) = out.iter().find(|s| s.name == mname) {
                if degree[i] > m.params.ports {
                    let e = worst.entry(mname.clone()).or_insert((0, String::new()));
                    if degree[i] > e.0 {
                        *e = (degree[i], nd.name.clone());
                    }
                }
            }
        }
        for (mname, (deg, node)) in worst {
            let ports = out.iter().find(|s| s.name == mname).map(|s| s.params.ports).unwrap_or(0);
            errs.push(Diagnostic::new(
                if config.switch_models.contains_key(&mname) {
                    format!("switch_models.{mname}.ports")
                } else {
                    model_ref_path(&config.topology, &mname)
                },
                format!("switch `{node}` needs {deg} ports but model `{mname}` has {ports}"),
                format!("use a larger model, or declare [switch_models.{mname}] with `ports = {deg}`"),
            ));
        }
    }
    out
}

/// The key that names switch model `name` (for diagnostics), or the topology table if none does
/// (the default preset).
fn model_ref_path(t: &TopologyConfig, name: &str) -> String {
    let is = |m: &Option<String>| m.as_deref() == Some(name);
    if let Some(c) = &t.leaf_spine {
        for (k, m) in [("leaf_model", &c.leaf_model), ("spine_model", &c.spine_model)] {
            if is(m) {
                return format!("topology.leaf_spine.{k}");
            }
        }
    }
    if let Some(c) = &t.fat_tree {
        if is(&c.switch_model) {
            return "topology.fat_tree.switch_model".into();
        }
    }
    if let Some(c) = &t.rail_optimized {
        for (k, m) in [("leaf_model", &c.leaf_model), ("spine_model", &c.spine_model), ("core_model", &c.core_model)] {
            if is(m) {
                return format!("topology.rail_optimized.{k}");
            }
        }
    }
    if let Some(c) = &t.explicit {
        if let Some(i) = c.node.iter().position(|n| is(&n.model)) {
            return format!("topology.explicit.node[{i}].model");
        }
    }
    let kinds = [
        ("leaf_spine", t.leaf_spine.is_some()),
        ("fat_tree", t.fat_tree.is_some()),
        ("rail_optimized", t.rail_optimized.is_some()),
        ("explicit", t.explicit.is_some()),
    ];
    kinds.iter().find(|k| k.1).map(|k| format!("topology.{}", k.0)).unwrap_or_else(|| "topology".into())
}

fn check_priority(v: u8, path: String, errs: &mut Vec<Diagnostic>) {
    if v > 7 {
        errs.push(Diagnostic::new(path, format!("priority {v} is outside 0..=7"), "802.1p priorities are 0 to 7"));
    }
}

fn resolve_qos(q: &QosConfig, errs: &mut Vec<Diagnostic>) -> Option<Qos> {
    let e0 = errs.len();
    if q.classes.is_empty() {
        errs.push(Diagnostic::new(
            "qos",
            "no traffic classes",
            "declare [[qos.class]] tables or leave [qos] out for the defaults",
        ));
        return None;
    }
    let mut classes = Vec::new();
    let mut dscp_owner: [Option<usize>; 64] = [None; 64];
    for (i, c) in q.classes.iter().enumerate() {
        let p = format!("qos.class[{i}]");
        if c.name.is_empty() {
            errs.push(Diagnostic::new(format!("{p}.name"), "class name is empty", "name it, e.g. `roce`"));
        }
        if q.classes[..i].iter().any(|o| o.name == c.name) {
            errs.push(Diagnostic::new(
                format!("{p}.name"),
                format!("class `{}` is declared twice", c.name),
                "class names must be unique",
            ));
        }
        check_priority(c.priority, format!("{p}.priority"), errs);
        let queue = c.queue.unwrap_or(c.priority);
        if queue > 7 {
            errs.push(Diagnostic::new(
                format!("{p}.queue"),
                format!("queue {queue} is outside 0..=7"),
                "egress queues are 0 to 7",
            ));
        }
        for (j, &d) in c.dscp.iter().enumerate() {
            if d > 63 {
                errs.push(Diagnostic::new(
                    format!("{p}.dscp[{j}]"),
                    format!("DSCP {d} is outside 0..=63"),
                    "DSCP is a 6-bit field",
                ));
                continue;
            }
            if let Some(o) = dscp_owner[d as usize] {
                if o != i {
                    errs.push(Diagnostic::new(
                        format!("{p}.dscp[{j}]"),
                        format!("DSCP {d} is already mapped to class `{}`", q.classes[o].name),
                        "a DSCP value can belong to one class only",
                    ));
                }
            }
            dscp_owner[d as usize] = Some(i);
        }
        let check_ecn = |e: &EcnConfig, ep: String, errs: &mut Vec<Diagnostic>| {
            if e.kmin_bytes > e.kmax_bytes {
                errs.push(Diagnostic::new(
                    format!("{ep}.kmin_bytes"),
                    format!("ECN Kmin ({} B) is above Kmax ({} B)", e.kmin_bytes, e.kmax_bytes),
                    "Kmin must be <= Kmax: marking starts at Kmin and reaches Pmax at Kmax",
                ));
            }
            if !(e.pmax.is_finite() && (0.0..=1.0).contains(&e.pmax)) {
                errs.push(Diagnostic::new(
                    format!("{ep}.pmax"),
                    format!("Pmax {} is not a probability", e.pmax),
                    "Pmax is the marking probability at Kmax, in (0, 1]: 0.1 is 10 %",
                ));
            }
        };
        if let Some(e) = &c.ecn {
            check_ecn(e, format!("{p}.ecn"), errs);
        }
        let mut per_speed = Vec::new();
        for (k, e) in &c.ecn_per_speed {
            let ep = format!("{p}.ecn_per_speed.{k}");
            match k.parse::<f64>() {
                Ok(s) if s > 0.0 && s.is_finite() => per_speed.push((s, *e)),
                _ => errs.push(Diagnostic::new(
                    ep.clone(),
                    format!("`{k}` is not a port speed in Gb/s"),
                    "key by speed, e.g. ecn_per_speed.\"400\"",
                )),
            }
            check_ecn(e, ep, errs);
        }
        per_speed.sort_by(|a, b| a.0.total_cmp(&b.0));
        if c.scheduler == SchedulerKind::Dwrr && c.weight == 0 {
            errs.push(Diagnostic::new(
                format!("{p}.weight"),
                "a DWRR class needs a weight above 0",
                "e.g. `weight = 50`, or `scheduler = \"strict\"`",
            ));
        }
        classes.push(TrafficClass {
            name: c.name.clone(),
            dscp: c.dscp.clone(),
            priority: c.priority,
            queue,
            lossless: c.lossless,
            scheduler: c.scheduler,
            weight: c.weight,
            carries: c.carries.clone(),
            ecn: c.ecn,
            ecn_per_speed: per_speed,
        });
    }
    let cnp_class = classes.iter().position(|c| c.name == q.cnp_class);
    if cnp_class.is_none() {
        errs.push(Diagnostic::new(
            "qos.cnp_class",
            format!("CNP class `{}` is not one of the declared classes", q.cnp_class),
            "declare a class for CNPs (strict priority, e.g. DSCP 48 -> priority 6) and name it here",
        ));
    }
    let pfc_mask = match &q.pfc.priorities {
        Some(ps) => {
            let mut m = 0u8;
            for (j, &pr) in ps.iter().enumerate() {
                check_priority(pr, format!("qos.pfc.priorities[{j}]"), errs);
                if pr < 8 {
                    m |= 1 << pr;
                }
            }
            m
        }
        None => classes.iter().filter(|c| c.lossless && c.priority < 8).fold(0, |m, c| m | (1 << c.priority)),
    };
    if let (Some(xoff), Some(xon)) = (q.pfc.xoff_bytes, q.pfc.xon_bytes) {
        if xon > xoff {
            errs.push(Diagnostic::new(
                "qos.pfc.xon_bytes",
                format!("XON ({xon} B) is above XOFF ({xoff} B)"),
                "resume (XON) must be at or below pause (XOFF)",
            ));
        }
    }
    if q.pfc.pause_quanta == Some(0) {
        errs.push(Diagnostic::new(
            "qos.pfc.pause_quanta",
            "an XOFF frame with 0 quanta is a resume",
            "use 65535 (the default) or another positive value",
        ));
    }
    check_shared_queues(q, &classes, errs);
    let w = &q.pfc_watchdog;
    for (f, v) in [("detection_ms", w.detection_ms), ("restoration_ms", w.restoration_ms), ("poll_ms", w.poll_ms)] {
        if !(v.is_finite() && v > 0.0 && v <= 3_600_000.0) {
            errs.push(Diagnostic::new(
                format!("qos.pfc_watchdog.{f}"),
                format!("{f} must be a positive time in ms, got {v}"),
                "SONiC defaults: 200 ms",
            ));
        }
    }
    if errs.len() > e0 {
        return None;
    }
    let default_class = classes.iter().position(|c| c.priority == 0).unwrap_or(0);
    let mut dscp_to_class = [default_class as u8; 64];
    for (d, o) in dscp_owner.iter().enumerate() {
        if let Some(c) = o {
            dscp_to_class[d] = *c as u8;
        }
    }
    let mut priority_to_class = [default_class as u8; 8];
    for (i, c) in classes.iter().enumerate().rev() {
        priority_to_class[c.priority as usize] = i as u8;
    }
    Some(Qos {
        trust: q.trust,
        dscp_to_class,
        priority_to_class,
        default_class,
        cnp_class: cnp_class?,
        pfc_mask,
        pfc: q.pfc.clone(),
        watchdog: Watchdog {
            enabled: w.enabled,
            detection: SimTime::from_secs_f64(w.detection_ms / 1e3),
            restoration: SimTime::from_secs_f64(w.restoration_ms / 1e3),
            poll: SimTime::from_secs_f64(w.poll_ms / 1e3),
            action: w.action,
        },
        classes,
    })
}

/// An egress queue has one scheduler, one DWRR weight and one ECN profile: two classes that
/// share a queue (the same `queue`, or the same priority with `queue` left out) must agree on
/// them, or the engine would take the first class's and silently ignore the other's.
fn check_shared_queues(q: &QosConfig, classes: &[TrafficClass], errs: &mut Vec<Diagnostic>) {
    let sched = |c: &TrafficClass| match c.scheduler {
        SchedulerKind::Strict => "strict",
        SchedulerKind::Dwrr => "dwrr",
    };
    let ecn = |c: &TrafficClass| -> String {
        let one = |e: &EcnConfig| format!("Kmin {} B / Kmax {} B / Pmax {}", e.kmin_bytes, e.kmax_bytes, e.pmax);
        let mut s = c.ecn.as_ref().map_or("no ECN".to_string(), one);
        for (speed, e) in &c.ecn_per_speed {
            s += &format!(", at {speed}G {}", one(e));
        }
        s
    };
    for (j, b) in classes.iter().enumerate() {
        let Some(a) = classes[..j].iter().find(|a| a.queue == b.queue) else { continue };
        let mut diff = Vec::new();
        if a.scheduler != b.scheduler {
            diff.push(format!("scheduler {} vs {}", sched(a), sched(b)));
        } else if a.scheduler == SchedulerKind::Dwrr && a.weight != b.weight {
            diff.push(format!("weight {} vs {}", a.weight, b.weight));
        }
        if a.ecn != b.ecn || a.ecn_per_speed != b.ecn_per_speed {
            diff.push(format!("ECN {} vs {}", ecn(a), ecn(b)));
        }
        if diff.is_empty() {
            continue;
        }
        let key = if q.classes[j].queue.is_some() { "queue" } else { "priority" };
        errs.push(Diagnostic::new(
            format!("qos.class[{j}].{key}"),
            format!(
                "classes `{}` and `{}` share egress queue {} but set it up differently: {}",
                a.name,
                b.name,
                b.queue,
                diff.join("; ")
            ),
            format!(
                "a queue has one scheduler, weight and ECN profile: give `{}` a queue of its own (`queue = N`, 0-7), or the same settings as `{}`",
                b.name, a.name
            ),
        ));
    }
}

fn mask(list: &Option<Vec<u8>>, default: u8, path: &str, errs: &mut Vec<Diagnostic>) -> u8 {
    match list {
        None => default,
        Some(ps) => {
            let mut m = 0;
            for (j, &pr) in ps.iter().enumerate() {
                check_priority(pr, format!("{path}[{j}]"), errs);
                if pr < 8 {
                    m |= 1 << pr;
                }
            }
            m
        }
    }
}

fn resolve_nic(
    name: &str,
    path: &str,
    c: &NicConfig,
    qos: &Qos,
    host_speed: BitsPerSec,
    errs: &mut Vec<Diagnostic>,
) -> NicProfile {
    let speed = c.speed_gbps.map(|s| {
        if !(s.is_finite() && s > 0.0) {
            errs.push(Diagnostic::new(
                format!("{path}.speed_gbps"),
                format!("NIC speed must be positive, got {s}"),
                "e.g. 400",
            ));
        }
        BitsPerSec::from_gbps_f64(s.max(0.001))
    });
    let mtu = c.mtu.unwrap_or(4096);
    // RoCE inherits InfiniBand's path MTUs (256 to 4096 bytes of payload); a 9000-byte Ethernet
    // MTU is the port's, not RoCE's. Sizes in between model other simulators' payloads (ns-3's
    // 1000, htsim's 4000).
    if !(256..=4096).contains(&mtu) {
        errs.push(Diagnostic::new(
            format!("{path}.mtu"),
            format!("RoCE MTU {mtu} is outside 256..=4096 bytes (RoCE path MTUs are 256, 512, 1024, 2048 and 4096)"),
            "use 4096 (with 9000-byte or larger Ethernet MTUs on the ports, the usual setting), 2048 or 1024; the Ethernet MTU belongs on the links (`mtu` of a link)",
        ));
    }
    let d = &c.dcqcn;
    let variant = d.variant.unwrap_or_default();
    let link_gbps = speed.unwrap_or(host_speed).gbps();
    let base = match variant {
        DcqcnVariant::Paper => presets::dcqcn_paper(link_gbps),
        DcqcnVariant::Mlx5 => presets::dcqcn_mlx5(),
    };
    let dp = format!("{path}.dcqcn");
    let time = |v: Option<f64>, dflt: f64, f: &str, errs: &mut Vec<Diagnostic>| -> SimTime {
        let v = v.unwrap_or(dflt);
        if !(v.is_finite() && (0.0..1e9).contains(&v)) {
            errs.push(Diagnostic::new(
                format!("{dp}.{f}"),
                format!("{f} must be a non-negative time in µs, got {v}"),
                "see docs/fabric-file.md for defaults",
            ));
            return SimTime::ZERO;
        }
        SimTime::from_secs_f64(v * 1e-6)
    };
    let alpha_timer = time(d.alpha_timer_us, base.alpha_timer_us, "alpha_timer_us", errs);
    let increase_timer = time(d.increase_timer_us, base.increase_timer_us, "increase_timer_us", errs);
    let rate_reduce_period = time(d.rate_reduce_period_us, base.rate_reduce_period_us, "rate_reduce_period_us", errs);
    let cnp_interval = time(d.cnp_interval_us, base.cnp_interval_us, "cnp_interval_us", errs);
    let cnp_delay = time(d.cnp_delay_us, base.cnp_delay_us, "cnp_delay_us", errs);
    let rate = |v: Option<f64>, dflt: f64, f: &str, errs: &mut Vec<Diagnostic>| -> BitsPerSec {
        let v = v.unwrap_or(dflt);
        if !(v.is_finite() && (0.0..=10_000_000.0).contains(&v)) {
            errs.push(Diagnostic::new(
                format!("{dp}.{f}"),
                format!("{f} must be a rate in Mb/s, got {v}"),
                "e.g. rate_ai_mbps = 5",
            ));
            return BitsPerSec(0);
        }
        BitsPerSec((v * 1e6).round() as u64)
    };
    let rate_ai = rate(d.rate_ai_mbps, base.rate_ai_mbps, "rate_ai_mbps", errs);
    let rate_hai = rate(d.rate_hai_mbps, base.rate_hai_mbps, "rate_hai_mbps", errs);
    let min_rate = rate(d.min_rate_mbps, base.min_rate_mbps, "min_rate_mbps", errs);
    if min_rate.0 == 0 && d.min_rate_mbps.is_some() {
        errs.push(Diagnostic::new(
            format!("{dp}.min_rate_mbps"),
            "the DCQCN rate floor must be above 0 Mb/s".to_string(),
            "ConnectX's rpg_min_rate defaults to 1 Mb/s",
        ));
    }
    let rate_on_first_cnp = rate(d.rate_on_first_cnp_mbps, base.rate_on_first_cnp_mbps, "rate_on_first_cnp_mbps", errs);
    let min_dec_fac = d.min_dec_fac_percent.unwrap_or(base.min_dec_fac_percent);
    if !(min_dec_fac > 0.0 && min_dec_fac <= 100.0) {
        errs.push(Diagnostic::new(
            format!("{dp}.min_dec_fac_percent"),
            format!("min_dec_fac_percent is the least share of the rate a cut keeps, in (0, 100] %, got {min_dec_fac}"),
            "ConnectX's rpg_min_dec_fac defaults to 50",
        ));
    }
    let g = d.g.unwrap_or(base.g);
    if !(g > 0.0 && g <= 1.0) {
        errs.push(Diagnostic::new(
            format!("{dp}.g"),
            format!("the α gain g must be in (0, 1], got {g}"),
            "the paper uses 1/256 = 0.00390625",
        ));
    }
    let initial_alpha = d.initial_alpha.unwrap_or(base.initial_alpha);
    if !(0.0..=1.0).contains(&initial_alpha) {
        errs.push(Diagnostic::new(
            format!("{dp}.initial_alpha"),
            format!("α must be in [0, 1], got {initial_alpha}"),
            "mlx5 starts at 1023/1024",
        ));
    }
    let hq = &c.qos;
    let hp = format!("{path}.qos");
    let mut dscp_to_priority = [0u8; 64];
    for (d, slot) in dscp_to_priority.iter_mut().enumerate() {
        *slot = qos.classes[qos.dscp_to_class[d] as usize].priority;
    }
    if let Some(map) = &hq.dscp_to_priority {
        for (k, &pr) in map {
            match k.parse::<u8>() {
                Ok(d) if d < 64 => {
                    check_priority(pr, format!("{hp}.dscp_to_priority.{k}"), errs);
                    dscp_to_priority[d as usize] = pr.min(7);
                }
                _ => errs.push(Diagnostic::new(
                    format!("{hp}.dscp_to_priority.{k}"),
                    format!("`{k}` is not a DSCP value 0..=63"),
                    "keys are DSCP values: `\"26\" = 3`",
                )),
            }
        }
    }
    let rdma = &qos.classes[qos.rdma_class()];
    let cnp = &qos.classes[qos.cnp_class];
    let ecn_default = if rdma.ecn.is_some() || !rdma.ecn_per_speed.is_empty() { 1 << rdma.priority } else { 0 };
    let pfc_mask = mask(&hq.pfc_priorities, qos.pfc_mask, &format!("{hp}.pfc_priorities"), errs);
    let ecn_np_mask = mask(&hq.ecn_np_priorities, ecn_default, &format!("{hp}.ecn_np_priorities"), errs);
    let ecn_rp_mask = mask(&hq.ecn_rp_priorities, ecn_default, &format!("{hp}.ecn_rp_priorities"), errs);
    let roce_dscp = hq.roce_dscp.unwrap_or(rdma.dscp.first().copied().unwrap_or(26));
    let cnp_dscp = hq.cnp_dscp.unwrap_or(cnp.dscp.first().copied().unwrap_or(48));
    for (f, v) in [("roce_dscp", roce_dscp), ("cnp_dscp", cnp_dscp)] {
        if v > 63 {
            errs.push(Diagnostic::new(
                format!("{hp}.{f}"),
                format!("DSCP {v} is outside 0..=63"),
                "DSCP is a 6-bit field",
            ));
        }
    }
    let cnp_priority = hq.cnp_priority.unwrap_or(cnp.priority);
    check_priority(cnp_priority, format!("{hp}.cnp_priority"), errs);
    let rx_buffer_bytes = c.rx_buffer_bytes.unwrap_or(2 * 1024 * 1024);
    let rx_xoff_bytes = c.rx_xoff_bytes.unwrap_or((rx_buffer_bytes as u128 * 85 / 100) as u64);
    if rx_xoff_bytes > rx_buffer_bytes {
        errs.push(Diagnostic::new(
            format!("{path}.rx_xoff_bytes"),
            format!("rx_xoff_bytes ({rx_xoff_bytes}) exceeds rx_buffer_bytes ({rx_buffer_bytes})"),
            "the NIC must pause before its buffer is full",
        ));
    }
    let retransmit_timeout = transport_timeout(c, path, errs);
    let retry_cnt = c.retry_cnt.unwrap_or(NCCL_IB_RETRY_CNT);
    if retry_cnt > 7 {
        errs.push(Diagnostic::new(
            format!("{path}.retry_cnt"),
            format!("retry_cnt is a 3-bit field (0..=7), got {retry_cnt}"),
            "NCCL sets 7 (NCCL_IB_RETRY_CNT)",
        ));
    }
    NicProfile {
        name: name.to_string(),
        speed,
        mtu,
        firmware: c.firmware.clone().unwrap_or_else(|| "unspecified".to_string()),
        congestion_control: c.congestion_control.unwrap_or_default(),
        dcqcn: Dcqcn {
            variant,
            g,
            alpha_timer,
            increase_timer,
            byte_counter_bytes: d.byte_counter_bytes.unwrap_or(base.byte_counter_bytes),
            fast_recovery_steps: d.fast_recovery_steps.unwrap_or(base.fast_recovery_steps),
            rate_ai,
            rate_hai,
            min_rate,
            rate_reduce_period,
            initial_alpha,
            clamp_target_rate: d.clamp_target_rate.unwrap_or(base.clamp_target_rate),
            clamp_target_rate_after_time_inc: d
                .clamp_target_rate_after_time_inc
                .unwrap_or(base.clamp_target_rate_after_time_inc),
            max_cut_fraction: 1.0 - min_dec_fac / 100.0,
            rate_on_first_cnp,
            cnp_interval,
            cnp_delay,
        },
        hpcc: crate::cc::hpcc(&c.hpcc, path, errs),
        timely: crate::cc::timely(&c.timely, path, errs),
        dctcp: crate::cc::dctcp(&c.dctcp, path, errs),
        qos: HostQos {
            trust: hq.trust.unwrap_or(qos.trust),
            dscp_to_priority,
            pfc_mask,
            ecn_np_mask,
            ecn_rp_mask,
            roce_dscp: roce_dscp.min(63),
            cnp_dscp: cnp_dscp.min(63),
            cnp_priority: cnp_priority.min(7),
        },
        rx_buffer_bytes,
        rx_xoff_bytes,
        retransmit_timeout,
        retry_cnt: retry_cnt.min(7),
        window_bytes: c.window_bytes.unwrap_or(0),
        window_scales_with_rate: c.window_scales_with_rate.unwrap_or(false),
        tcp_congestion_control: c.tcp_congestion_control.unwrap_or_default(),
        ooo_window_packets: {
            errs.extend(crate::lb::check_ooo_window(c.ooo_window_packets, path));
            c.ooo_window_packets
        },
        transport: c.transport.unwrap_or_default(),
        uet: crate::uet::uet(&c.uet, path, errs),
        path: path.to_string(),
    }
}

/// NCCL's `NCCL_IB_TIMEOUT` default (`src/transport/net_ib.cc`; 18 in NCCL 2.19, 14 before):
/// 4.096 µs · 2^20 ≈ 4.3 s.
pub const NCCL_IB_TIMEOUT: u8 = 20;
/// NCCL's `NCCL_IB_RETRY_CNT` default.
pub const NCCL_IB_RETRY_CNT: u8 = 7;

/// The IB local ACK timeout, 4.096 µs · 2^exponent (IBTA spec, "Local ACK Timeout"), in ps.
pub fn ib_ack_timeout(exponent: u8) -> Option<SimTime> {
    (exponent > 0).then(|| SimTime(4_096_000u64 << exponent))
}

fn transport_timeout(c: &NicConfig, path: &str, errs: &mut Vec<Diagnostic>) -> Option<SimTime> {
    if let Some(us) = c.retransmit_timeout_us {
        if c.ack_timeout.is_some() {
            errs.push(Diagnostic::new(
                format!("{path}.retransmit_timeout_us"),
                "both ack_timeout and retransmit_timeout_us are set".to_string(),
                "keep one: ack_timeout = 14 is 4.096 µs · 2^14 = 67 ms",
            ));
        }
        if !(us.is_finite() && us > 0.0 && us < 1e12) {
            errs.push(Diagnostic::new(
                format!("{path}.retransmit_timeout_us"),
                format!("retransmit timeout must be a positive time in µs, got {us}"),
                "or set ack_timeout = 0 for no timeout",
            ));
            return None;
        }
        return Some(SimTime::from_secs_f64(us.max(0.001) * 1e-6));
    }
    let e = c.ack_timeout.unwrap_or(NCCL_IB_TIMEOUT);
    if e > 31 {
        errs.push(Diagnostic::new(
            format!("{path}.ack_timeout"),
            format!("ack_timeout is a 5-bit exponent (0..=31), got {e}"),
            "the timeout is 4.096 µs · 2^ack_timeout; NCCL uses 20, perftest 14, 0 disables it",
        ));
        return None;
    }
    ib_ack_timeout(e)
}

/// `[simulation]`: times must be positive, finite and fit the engine's picosecond clock.
fn check_simulation(c: &SimulationConfig, errs: &mut Vec<Diagnostic>) {
    // 10¹² µs (11.6 days) of simulated time, well inside u64 picoseconds (213 days).
    const MAX_US: f64 = 1e12;
    for (key, v) in [("duration_us", c.duration_us), ("sample_interval_us", c.sample_interval_us)] {
        if let Some(v) = v {
            if !(v.is_finite() && v > 0.0 && v <= MAX_US) {
                errs.push(Diagnostic::new(
                    format!("simulation.{key}"),
                    format!("`{key}` must be a positive number of µs up to 10¹² (11.6 days), got {v}"),
                    match key {
                        "duration_us" => {
                            "e.g. `duration_us = 1000` for 1 ms; leave it out to run until every flow finishes"
                        }
                        _ => "e.g. `sample_interval_us = 10`; leave it out for no time series",
                    },
                ));
            }
        }
    }
}

fn resolve_gpu_node(c: &Config) -> GpuNode {
    let g = &c.gpu_node;
    let rails = c.topology.rail_optimized.as_ref().map(|r| r.rails);
    let intra = g.intra_node.clone().unwrap_or_else(|| "nvlink4".to_string());
    let bw = g.intra_node_gbytes_per_s.unwrap_or(match intra.as_str() {
        "nvlink5" => 900.0,
        "pcie4" => 31.0,
        "pcie5" => 63.0,
        _ => 450.0,
    });
    GpuNode {
        gpus: g.gpus.or(rails).unwrap_or(8),
        intra_node: intra,
        intra_node_gbytes_per_s: bw,
        gpu: g.gpu.clone().unwrap_or_else(|| "h100".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("node1*-nic?", "node12-nic3"));
        assert!(glob_match("*", "x"));
        assert!(!glob_match("node1", "node12"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
    }
}
