//! The workload API: what drives traffic into the engine — the packet engine (`Sim`) or the
//! flow engine (`flow::FlowSim`); a workload cannot tell which, and runs unchanged on both.
//!
//! A [`Workload`] posts messages on connections between two hosts and is called back when
//! each one has been delivered, so it can post what depends on it: the next chunk of a ring
//! step, the next stage of a pipeline, the next layer's all-reduce. The fabric file's
//! `[[traffic]]` tables are one workload among others ([`FixedFlows`]).
//!
//! # Contract
//!
//! * A message is `size_bytes` of payload from `src` to `dst` in one traffic class, striped
//!   over `qps` RC queue pairs (each with its own UDP source port, so ECMP may spread them).
//!   It becomes one row of the run's per-flow results, in posting order.
//! * [`Workload::start`] runs once, when the run is built, before any event. Messages posted
//!   there start at their `start` time (default: time 0).
//! * [`Workload::on_delivered`] runs when the last payload byte of a message has arrived in
//!   order at its destination — the receiver's view, as the FCT in `flows.csv` — at that same
//!   simulated time, after the events already due at that time (it is an event queued then).
//!   Several deliveries at one time are reported in the order they happened. Messages posted
//!   from a callback start at `now` or at their `start`, whichever is later; a NIC sends what
//!   is posted at `now` at once if its port is free.
//! * [`Workload::on_wake`] runs at the time asked with [`Net::wake_at`], after the events
//!   already due at that time; wake-ups due at one time run in the order they were asked.
//!   It is how a workload waits without the fabric: compute phases, intra-node copies.
//! * A message that cannot be delivered — one of its QPs exhausted its retries — is reported
//!   once, with `failed` set, when that QP gives up.
//! * A workload sees the fabric only through [`Net`]: the time, the model (read only), and
//!   `post`. It cannot touch queues, packets or counters, so it cannot break the engine's
//!   invariants, and nothing it does depends on wall-clock time.
//! * The run ends when every posted message is acknowledged at its sender, nothing is in the
//!   fabric, and no callback (delivery or wake-up) is due: a workload that posts nothing more ends the run.
//! * Callbacks cost nothing per packet; a workload that does not want them
//!   ([`Workload::wants_deliveries`] false, as [`FixedFlows`]) adds no event at all.

use crate::engine::Sim;
use crate::flow::FlowSim;
use crate::traffic::{FlowSpec, Transport};
use rocelab_model::{Model, NodeId, SimTime};
use std::fmt;

/// No message starts later than this (10¹² µs, 11.6 days: far inside the u64 picosecond
/// clock, so timers after it cannot overflow).
pub const LATEST_START: SimTime = SimTime(1_000_000_000_000_000_000);

/// The index of a posted message: its row in the run's per-flow results.
pub type MsgId = u32;

/// A lockstep group ([`Net::lockstep_group`]): its slot and the slot's generation, so a
/// handle kept after [`Net::end_group`] is refused even when the slot serves another group.
pub type GroupId = u64;

/// The `k`-th UDP source port after `base`, wrapping inside the dynamic range 49152..=65535:
/// the port of QP k of a message whose first QP has `base` (49152 = 3 · 16384, so a port in
/// the range keeps its value for k = 0).
pub fn sport_after(base: u16, k: u32) -> u16 {
    (49152 + (base as u32 % 16384 + k) % 16384) as u16
}

/// A message to post.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub src: NodeId,
    pub dst: NodeId,
    pub size_bytes: u64,
    /// Switch-side class index (`Model::qos.classes`); `None`: the RDMA class.
    pub class: Option<usize>,
    /// Queue pairs to stripe it over (≥ 1).
    pub qps: u32,
    /// The workload's own label, handed back on delivery.
    pub tag: u64,
    /// Earliest start; `None`: now.
    pub start: Option<SimTime>,
    /// UDP source port of its first QP; QP k takes the k-th port after it (wrapping inside
    /// the dynamic range 49152..=65535). Give a connection's messages the same ports to keep
    /// them on the same ECMP paths, as an application's long-lived QPs are (NCCL creates its
    /// QPs once per connection). `None`: drawn from the run's seed, one per QP.
    pub sport: Option<u16>,
}

impl Message {
    /// One QP of RDMA traffic from `src` to `dst`, starting now.
    pub fn new(src: NodeId, dst: NodeId, size_bytes: u64) -> Self {
        Message { src, dst, size_bytes, class: None, qps: 1, tag: 0, start: None, sport: None }
    }

    pub fn tag(mut self, tag: u64) -> Self {
        self.tag = tag;
        self
    }
}

/// A delivered message, as handed to [`Workload::on_delivered`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub msg: MsgId,
    pub tag: u64,
    pub src: NodeId,
    pub dst: NodeId,
    /// When it was posted to start, and when its last byte arrived.
    pub start: SimTime,
    pub at: SimTime,
    /// The message will never arrive: one of its QPs exhausted its retries (`retry_cnt`) and
    /// went to the error state, at `at`. Reported once per message.
    pub failed: bool,
}

/// Why a message was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostError(pub String);

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PostError {}

/// What a workload may do to the fabric.
pub struct Net<'s, 'm> {
    backend: Backend<'s, 'm>,
}

/// The engine a workload's calls go to: one `match` per call, nothing per packet.
enum Backend<'s, 'm> {
    Packet(&'s mut Sim<'m>),
    Flow(&'s mut FlowSim<'m>),
    /// A partitioned run's leader: what the workload asks for is collected and handed to
    /// every partition at the barrier (`crate::parallel`).
    Collect(&'s mut Collect<'m>),
}

/// What a workload asked for during one callback of a partitioned run.
pub(crate) struct Collect<'m> {
    pub m: &'m Model,
    /// The callback's time.
    pub now: SimTime,
    /// Messages posted, in order (`MsgId`s from `next_msg` up).
    pub posts: Vec<FlowSpec>,
    /// Wake-ups asked for: (time, tag).
    pub wakes: Vec<(SimTime, u64)>,
    /// The id the next message posted takes (messages posted so far in the whole run).
    pub next_msg: MsgId,
}

impl<'s, 'm> Net<'s, 'm> {
    pub(crate) fn packet(sim: &'s mut Sim<'m>) -> Self {
        Net { backend: Backend::Packet(sim) }
    }

    pub(crate) fn flow(sim: &'s mut FlowSim<'m>) -> Self {
        Net { backend: Backend::Flow(sim) }
    }

    pub(crate) fn collect(c: &'s mut Collect<'m>) -> Self {
        Net { backend: Backend::Collect(c) }
    }

    /// Adds a flow already checked (or built from checked `[[traffic]]`).
    pub(crate) fn post_spec(&mut self, f: FlowSpec) -> MsgId {
        match &mut self.backend {
            Backend::Packet(s) => s.post_flow(f),
            Backend::Flow(s) => s.post_flow(f),
            Backend::Collect(c) => {
                c.posts.push(f);
                c.next_msg += 1;
                c.next_msg - 1
            }
        }
    }
}

impl<'m> Net<'_, 'm> {
    pub fn now(&self) -> SimTime {
        match &self.backend {
            Backend::Packet(s) => s.now(),
            Backend::Flow(s) => s.now(),
            Backend::Collect(c) => c.now,
        }
    }

    pub fn model(&self) -> &'m Model {
        match &self.backend {
            Backend::Packet(s) => s.m,
            Backend::Flow(s) => s.model(),
            Backend::Collect(c) => c.m,
        }
    }

    /// Posts a message; it starts at `max(now, message.start)`.
    pub fn post(&mut self, msg: Message) -> Result<MsgId, PostError> {
        self.post_with(msg, Transport::Rdma)
    }

    /// Whether the engine runs lockstep groups ([`Net::lockstep_group`]): the flow engine
    /// does; the packet engine moves every message's packets itself and does not.
    pub fn lockstep(&self) -> bool {
        matches!(self.backend, Backend::Flow(_))
    }

    /// A lockstep group of `msgs` (each with no `start`: a round starts when it is posted):
    /// messages that always run together, as the hops of one ring step do. Post a round with
    /// [`Net::post_round`] as often as wanted (one at a time), and end the group with
    /// [`Net::end_group`]. The flow engine runs a round as one flow over all the messages'
    /// paths: every member at the same rate — the max-min share of the most constrained one —
    /// and the round delivered once, when every member's last byte is in. Routes are traced
    /// once (again after a routing fault); while one member has no path, the whole round
    /// waits at rate 0 (message by message, the other members would finish). In the per-flow
    /// outputs a round is one row: the first member's ends, every member's bytes, one QP per
    /// member. Refused by the packet engine ([`Net::lockstep`]
    /// tells beforehand), for no message, for a `start`, and for what `post` refuses.
    pub fn lockstep_group(&mut self, msgs: &[Message]) -> Result<GroupId, PostError> {
        if msgs.is_empty() {
            return Err(PostError("a lockstep group of no message".into()));
        }
        if msgs.iter().any(|m| m.start.is_some()) {
            return Err(PostError("a lockstep group's rounds start when posted: give no start".into()));
        }
        let (model, now) = (self.model(), self.now());
        match &mut self.backend {
            Backend::Packet(_) | Backend::Collect(_) => {
                Err(PostError("the packet engine runs no lockstep group".into()))
            }
            Backend::Flow(s) => {
                let specs =
                    msgs.iter().map(|m| check(model, now, m, Transport::Rdma)).collect::<Result<Vec<_>, _>>()?;
                Ok(s.new_group(&specs))
            }
        }
    }

    /// Posts a round of `group`'s messages, starting now; delivered once (one [`Delivered`]
    /// with `tag`, its `src` and `dst` the group's first message's). Refused for a group that
    /// is not there or ended (a handle kept after `end_group` stays refused), or whose round is
    /// still sending (one may be posted once the last byte has left, before it is delivered).
    pub fn post_round(&mut self, group: GroupId, tag: u64) -> Result<MsgId, PostError> {
        match &mut self.backend {
            Backend::Flow(s) if s.group_idle(group) => Ok(s.post_round(group, tag)),
            _ => Err(PostError(format!("lockstep group {group} is not there, ended, or has a round still sending"))),
        }
    }

    /// Ends `group` (its slot is reused). Refused as `post_round` is.
    pub fn end_group(&mut self, group: GroupId) -> Result<(), PostError> {
        match &mut self.backend {
            Backend::Flow(s) if s.group_idle(group) => {
                s.end_group(group);
                Ok(())
            }
            _ => Err(PostError(format!("lockstep group {group} is not there, ended, or has a round still sending"))),
        }
    }

    /// Posts a TCP-like message: windowed by DCTCP (`crate::dctcp`), not rate-limited by
    /// DCQCN; give it a lossy `class` to model TCP beside RDMA, or the RDMA class to model the
    /// two sharing one.
    pub fn post_tcp(&mut self, msg: Message) -> Result<MsgId, PostError> {
        self.post_with(msg, Transport::Dctcp)
    }

    /// Posts a message paced by `transport` (RDMA, DCTCP, or TCP without ECN).
    pub fn post_with(&mut self, msg: Message, transport: Transport) -> Result<MsgId, PostError> {
        let spec = check(self.model(), self.now(), &msg, transport)?;
        Ok(self.post_spec(spec))
    }

    /// Asks for [`Workload::on_wake`] with `tag` at `at` (or now, if `at` is past): the end of a
    /// compute phase, a transfer that does not cross the fabric (NVLink), a delayed start.
    /// The run does not end while a wake-up is due.
    pub fn wake_at(&mut self, at: SimTime, tag: u64) -> Result<(), PostError> {
        let at = at.max(self.now());
        if at > LATEST_START {
            return Err(PostError(format!("a wake-up at {:?} is beyond the engine's clock range", at)));
        }
        match &mut self.backend {
            Backend::Packet(s) => s.push_wake(at, tag),
            Backend::Flow(s) => s.push_wake(at, tag),
            Backend::Collect(c) => c.wakes.push((at, tag)),
        }
        Ok(())
    }
}

/// The flow a message asks for at `now` on `m`, or why it cannot be posted.
fn check(m: &Model, now: SimTime, msg: &Message, transport: Transport) -> Result<FlowSpec, PostError> {
    for (end, id) in [("source", msg.src), ("destination", msg.dst)] {
        if id.idx() >= m.nodes.len() || !m.node(id).is_host() {
            return Err(PostError(format!("the {end} of a message must be a host")));
        }
    }
    if msg.src == msg.dst {
        return Err(PostError(format!("a message from {} to itself", m.node(msg.src).name)));
    }
    if msg.size_bytes == 0 || msg.size_bytes > crate::traffic::MAX_FLOW_BYTES {
        return Err(PostError(format!("message size {} B outside 1..=1 TB", msg.size_bytes)));
    }
    if msg.qps == 0 || msg.qps as u64 > msg.size_bytes {
        return Err(PostError(format!("{} QPs for {} B", msg.qps, msg.size_bytes)));
    }
    let class = msg.class.unwrap_or_else(|| m.qos.rdma_class());
    if class >= m.qos.classes.len() {
        return Err(PostError(format!("no traffic class {class}")));
    }
    let start = msg.start.map_or(now, |s| s.max(now));
    if start > LATEST_START {
        return Err(PostError(format!("start at {:?} is beyond the engine's clock range", start)));
    }
    Ok(FlowSpec {
        src: msg.src,
        dst: msg.dst,
        size_bytes: msg.size_bytes,
        start,
        class,
        qps: msg.qps,
        origin: usize::MAX,
        tag: msg.tag,
        sport: msg.sport,
        transport,
    })
}

/// The tags of a workload's pending wake-ups, by slot; a slot is reused once its wake-up has
/// run. Each engine queues a wake-up as an event naming its slot.
#[derive(Default)]
pub(crate) struct WakeSlots {
    tags: Vec<u64>,
    free: Vec<u32>,
}

impl WakeSlots {
    /// Holds `tag` in a slot until `release`.
    pub(crate) fn hold(&mut self, tag: u64) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.tags[s as usize] = tag;
                s
            }
            None => {
                self.tags.push(tag);
                self.tags.len() as u32 - 1
            }
        }
    }

    /// The tag of a wake-up that is due; its slot is free again.
    pub(crate) fn release(&mut self, slot: u32) -> u64 {
        self.free.push(slot);
        self.tags[slot as usize]
    }

    /// No wake-up is pending.
    pub(crate) fn none_due(&self) -> bool {
        self.free.len() == self.tags.len()
    }
}

/// Drives a run: posts messages and reacts to their delivery.
pub trait Workload {
    /// Posts the first messages (called once, before any event).
    fn start(&mut self, net: &mut Net<'_, '_>);

    /// A message has been delivered (see the module doc for when exactly).
    fn on_delivered(&mut self, _done: Delivered, _net: &mut Net<'_, '_>) {}

    /// A wake-up asked for with [`Net::wake_at`] is due.
    fn on_wake(&mut self, _tag: u64, _net: &mut Net<'_, '_>) {}

    /// Whether `on_delivered` should be called at all (false skips the bookkeeping).
    fn wants_deliveries(&self) -> bool {
        true
    }

    /// The least time between a callback (a delivery or a wake-up) and anything it asks for
    /// in answer (a message's start, a wake-up): what lets a partitioned run answer callbacks
    /// at its barriers, one window late, without moving anything they do (a partitioned run
    /// takes a workload with deliveries only when this is above zero; windows are then no
    /// longer than it). Zero, the default, says a callback may post at its own instant: the
    /// partitions then stop at each wake-up, and deliveries cannot be partitioned.
    fn reaction_delay(&self) -> SimTime {
        SimTime::ZERO
    }
}

/// A fixed list of flows with their own start times: the fabric file's `[[traffic]]`.
pub struct FixedFlows(pub Vec<FlowSpec>);

impl Workload for FixedFlows {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        for f in self.0.drain(..) {
            net.post_spec(f);
        }
    }

    fn wants_deliveries(&self) -> bool {
        false
    }
}
