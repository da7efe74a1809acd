//! Steady-state fast-forward (`SimOptions::fast_forward`; off by default).
//!
//! Long horizons are mostly steady: a ring all-reduce's chunk, a pipeline send or a long
//! permutation flow runs for hundreds of microseconds at one rate through queues that do not
//! change. Simulating each of those packets says nothing new, so when a group of QPs is
//! steady the engine stops sending theirs, moves the clock on, and credits what they would
//! have sent (in the spirit of Wormhole, NSDI 2026, which skips steady states of ns-3 runs).
//!
//! * **Groups.** Every `period` the engine looks at the QPs under way. Two QPs are in one
//!   group when their paths share a link (data or ACK path, traced as the switches hash
//!   them), so a group is closed: no packet outside it crosses its links. That is what
//!   makes skipping it exact: while its QPs are silent, nothing that would have shared their
//!   links is made faster.
//! * **Steady.** Every QP of the group sent at one rate for the last `periods` periods (each
//!   period's rate within 2 % of the whole span's, measured between send instants, so the
//!   count of packets does not quantize it); its congestion control's rate did not change
//!   and is the line rate (or is HPCC's, which settles below it); it saw no CNP, NAK,
//!   timeout, resend, duplicate or reordered packet; and no switch queue on the group's data
//!   links holds more than two frames.
//! * **Skip.** The group's QPs leave their NICs' send lists until a common resume time: the
//!   latest at which each still has at least two periods of packets to send, so every
//!   message's last packets, its completion and what the workload does next stay at packet
//!   level. At resume, each QP is credited the packets it would have sent at its measured
//!   rate since its last send, taken off its message's remainder (its PSNs never jump, so
//!   what was in flight arrives as it would): sent, delivered and acknowledged, on every
//!   link of both paths and in the run's counters. Its next packet leaves when it would
//!   have, and each NIC resumes its round robin in the order the packets are due.
//! * **Early end.** A QP that starts on a link of a skipped group, or any fault, ends the skip
//!   at once, crediting what was sent until then; the new QP then shares the links at packet
//!   level.
//!
//! What is not credited: per-packet queueing-delay samples (their percentiles are over the
//! packets simulated), time-series samples of the silent links (queues near empty are
//! sampled as empty), and the congestion control's byte counters (at the line rate they
//! change nothing). Refused: InfiniBand (credits), per-packet load balancing and UET's
//! spraying (no fixed path), NIC resets (they rewind QPs to work-request boundaries counted
//! in PSNs a skip has shortened), partitioned runs. QPs of Linux TCP, with a fixed window (`[nic] window_bytes`), or
//! with no congestion control (their pacing is not tracked) are never skipped. `docs/simulate.md` ("Steady-state fast-forward") reports
//! the error against full runs.

use super::*;

/// How a run looks for steady states to skip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastForward {
    /// How often the engine looks at the QPs under way.
    pub period: SimTime,
    /// Consecutive periods a group must stay steady before it is skipped.
    pub periods: u32,
}

impl Default for FastForward {
    fn default() -> Self {
        FastForward { period: SimTime::from_us(2), periods: 3 }
    }
}

/// What a fast-forwarded run skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkipStats {
    /// Groups skipped.
    pub skips: u64,
    /// Data packets credited without being simulated.
    pub skipped_packets: u64,
    /// Skips ended early, by a QP starting on their links or by a fault.
    pub early_ends: u64,
}

/// A longest skip: far below `NO_PROGRESS_LIMIT`, so a skip never looks like a stall.
const MAX_SKIP: SimTime = SimTime(100_000_000_000);
/// A shortest skip: a few round trips of a data-center path (a shorter one saves fewer
/// packets than the looks and the restart cost).
const MIN_SKIP: SimTime = SimTime(10_000_000);

/// What the engine keeps of one QP slot.
#[derive(Default)]
struct Track {
    /// The links of its data path, then of its ACK path.
    path: Vec<u32>,
    data_links: usize,
    /// The routing epoch `path` was traced in (`u32::MAX`: never).
    traced: u32,
    /// It may be skipped at all (see the module doc).
    usable: bool,
    /// On the list of QPs under way, and on `on_link` for every link of its paths.
    listed: bool,
    /// The last `periods + 1` looks at it.
    seen: VecDeque<Look>,
    /// The skip holding it (`NONE`: none).
    skip: u32,
    /// The group search that last reached it (`FastForwarder::searches`).
    visited: u64,
    /// Payload bytes credited to it (taken off its message's remainder).
    credited: u64,
}

impl Track {
    /// Its rate over the looks kept, in packets per ps, between its first and last send
    /// instants (`None` if it sent nothing in between).
    fn rate(&self) -> Option<f64> {
        let (first, last) = (self.seen.front()?, self.seen.back()?);
        let span = last.sent_at.0.checked_sub(first.sent_at.0).filter(|&s| s > 0)?;
        Some(last.nxt.checked_sub(first.nxt)? as f64 / span as f64)
    }
}

/// One look at a QP: the PSN it sends next, when its last packet left, its congestion
/// control's rate, and its count of troubles (CNPs, NAKs, timeouts, resends, ...).
#[derive(Clone, Copy)]
struct Look {
    nxt: u32,
    sent_at: SimTime,
    rate: f64,
    troubles: u64,
}

/// A group of QPs being skipped.
struct Skip {
    /// Each QP, its rate in packets per ps, and when it last sent.
    qps: Vec<(u32, f64, SimTime)>,
    gen: u32,
    live: bool,
}

/// The fast-forward's state (`Sim::ff`).
pub(crate) struct FastForwarder {
    cfg: FastForward,
    look_pending: bool,
    /// Group searches so far (each look's are numbered above the last look's).
    searches: u64,
    tracks: Vec<Track>,
    /// The QPs under way (started, not yet done at their sender).
    under_way: Vec<u32>,
    /// Per link, the QPs under way whose data or ACK path crosses it, and the group search
    /// that last read that list.
    on_link: Vec<Vec<u32>>,
    link_seen: Vec<u64>,
    skips: Vec<Skip>,
    free: Vec<u32>,
    /// Bumped when routes may have changed (a fault, a switch learning): paths are retraced.
    epoch: u32,
    pub stats: SkipStats,
}

impl FastForwarder {
    pub(crate) fn new(cfg: FastForward, ports: usize) -> FastForwarder {
        FastForwarder {
            cfg: FastForward { periods: cfg.periods.max(1), ..cfg },
            look_pending: false,
            searches: 0,
            tracks: Vec::new(),
            under_way: Vec::new(),
            on_link: vec![Vec::new(); ports],
            link_seen: vec![0; ports],
            skips: Vec::new(),
            free: Vec::new(),
            epoch: 0,
            stats: SkipStats::default(),
        }
    }

    pub(crate) fn config(&self) -> FastForward {
        self.cfg
    }

    /// Payload bytes credited to QP `qi` (its message is that much larger than what it holds).
    pub(crate) fn credited(&self, qi: u32) -> u64 {
        self.tracks.get(qi as usize).map_or(0, |t| t.credited)
    }

    /// A new QP takes slot `qi`: nothing is credited to it yet.
    pub(crate) fn forget(&mut self, qi: u32) {
        if let Some(t) = self.tracks.get_mut(qi as usize) {
            t.credited = 0;
        }
    }

    fn track(&mut self, qp: u32) -> &mut Track {
        let i = qp as usize;
        if i >= self.tracks.len() {
            self.tracks.resize_with(i + 1, || Track { traced: u32::MAX, skip: NONE, ..Track::default() });
        }
        &mut self.tracks[i]
    }

    /// Takes QP `qi` off the lists of its paths' links.
    fn unlink(&mut self, qi: u32) {
        let t = &self.tracks[qi as usize];
        for &p in &t.path {
            let l = &mut self.on_link[p as usize];
            if let Some(i) = l.iter().position(|&x| x == qi) {
                l.swap_remove(i);
            }
        }
    }

    fn link(&mut self, qi: u32) {
        let t = &self.tracks[qi as usize];
        for &p in &t.path {
            self.on_link[p as usize].push(qi);
        }
    }
}

impl Sim<'_> {
    /// Why this run cannot be fast-forwarded, if it cannot.
    pub(super) fn fast_forward_refusal(
        m: &Model,
        link: &LinkLayer,
        partitioned: bool,
        faults: &[Fault],
    ) -> Option<Diagnostic> {
        let why = if matches!(link, LinkLayer::Ib(_)) {
            "InfiniBand's credits are not credited by a skip"
        } else if m.config.routing.load_balancing != rocelab_model::lb::LoadBalancing::Ecmp {
            "per-packet and flowlet load balancing give a QP no fixed path to hold"
        } else if m.nics.iter().any(|n| n.transport == rocelab_model::uet::Transport::Uet) {
            // (Its packets spray over paths no group holds, through skipped groups' links.)
            "the Ultra Ethernet transport sprays its packets over every path"
        } else if faults.iter().any(|f| matches!(f.action, FaultAction::Qps { .. })) {
            // (A reconnect resends from a work-request boundary counted in the message's own
            // PSNs, which a skip has shortened.)
            "a NIC reset rewinds QPs to work-request boundaries a skip would have moved"
        } else if partitioned {
            "a partitioned run cannot skip across its cut"
        } else {
            return None;
        };
        Some(Diagnostic::new(
            "simulation",
            format!("fast-forward cannot run here: {why}"),
            "run without fast-forward (every packet is simulated)",
        ))
    }

    /// A QP started: it is under way (looked at from the next look on), and it ends any skip
    /// whose links it shares.
    #[cold]
    #[inline(never)]
    pub(super) fn ff_qp_started(&mut self, qi: u32) {
        let Some(mut ff) = self.ff.take() else { return };
        ff.track(qi);
        let t = &ff.tracks[qi as usize];
        if t.listed {
            // The slot's last QP was done and its slot reused since the last look.
            ff.unlink(qi);
        } else {
            ff.under_way.push(qi);
        }
        let t = &mut ff.tracks[qi as usize];
        t.listed = true;
        t.traced = u32::MAX;
        t.seen.clear();
        t.skip = NONE;
        t.credited = 0;
        self.ff_trace(&mut ff, qi);
        let t = &ff.tracks[qi as usize];
        let mut ended = Vec::new();
        for &p in &t.path {
            for &other in &ff.on_link[p as usize] {
                let s = ff.tracks[other as usize].skip;
                if s != NONE && !ended.contains(&s) {
                    ended.push(s);
                }
            }
        }
        for s in ended {
            self.ff_resume(&mut ff, s, true);
        }
        if !ff.look_pending {
            ff.look_pending = true;
            self.q.push(self.now + ff.cfg.period, Ev::FfLook);
        }
        self.ff = Some(ff);
    }

    /// Routes may change (a fault, or a switch learning of one): every skip ends, since a
    /// skipped path may be cut or moved, and paths are traced again at the next look.
    #[cold]
    #[inline(never)]
    pub(super) fn ff_routes_change(&mut self) {
        let Some(mut ff) = self.ff.take() else { return };
        ff.epoch = ff.epoch.wrapping_add(1);
        for s in 0..ff.skips.len() as u32 {
            if ff.skips[s as usize].live {
                self.ff_resume(&mut ff, s, true);
            }
        }
        self.ff = Some(ff);
    }

    /// Traces QP `qi`'s data and ACK paths as the switches route them now (once per routing
    /// epoch), and files it under their links.
    fn ff_trace(&self, ff: &mut FastForwarder, qi: u32) {
        if ff.tracks[qi as usize].traced == ff.epoch {
            return;
        }
        ff.unlink(qi);
        let q = &self.host.qps[qi as usize];
        let mut data = Vec::new();
        let mut ack = Vec::new();
        let ok = self.router.trace_path(q.src_nic, q.dst, q.hash, 64, &mut data)
            && self.router.trace_path(q.dst_nic, q.src, q.hash, 64, &mut ack);
        let t = &mut ff.tracks[qi as usize];
        t.traced = ff.epoch;
        t.data_links = data.len();
        data.extend_from_slice(&ack);
        t.path = data;
        t.usable = ok
            && q.uet.is_none()
            && q.ooo_window == 0
            && !q.torn_down
            && q.window == 0
            && matches!(&q.cc, Some(c) if !matches!(c, Cc::Cubic(_) | Cc::Nscc(_)));
        ff.link(qi);
    }

    /// `Ev::FfLook`: looks at every QP under way, skips the groups that are steady, and looks
    /// again a period later while any QP is under way.
    #[cold]
    #[inline(never)]
    pub(super) fn on_ff_look(&mut self) {
        let Some(mut ff) = self.ff.take() else { return };
        let keep = ff.cfg.periods as usize + 1;
        let mut ready = Vec::new();
        let mut i = 0;
        while i < ff.under_way.len() {
            let qi = ff.under_way[i];
            let q = &self.host.qps[qi as usize];
            if q.sender_done.is_some() || q.retired {
                // Done: off the lists.
                ff.unlink(qi);
                ff.tracks[qi as usize].listed = false;
                ff.under_way.swap_remove(i);
                continue;
            }
            i += 1;
            if ff.tracks[qi as usize].skip != NONE {
                continue;
            }
            self.ff_trace(&mut ff, qi);
            let t = &mut ff.tracks[qi as usize];
            if !t.usable {
                continue;
            }
            let (rate, line) = q.cc.as_ref().map_or((0.0, 0.0), |c| (c.rate_bps(), c.line_rate_bps()));
            // At the line rate, or HPCC's (which settles below it); a DCQCN sender recovering
            // below it raises its rate on timers, which are not steady.
            let settled = rate >= line || q.cc.as_ref().is_some_and(|c| c.feedback().int);
            let st = &q.st;
            let troubles =
                st.cnps + st.naks + st.timeouts + st.retransmitted_packets + st.duplicate + st.out_of_sequence;
            let look = Look { nxt: q.snd_nxt, sent_at: q.pacer.last_sent(), rate, troubles };
            if !settled || t.seen.back().is_some_and(|l| l.rate != rate || l.troubles != troubles || l.nxt > look.nxt) {
                t.seen.clear();
            }
            if settled {
                t.seen.push_back(look);
                if t.seen.len() > keep {
                    t.seen.pop_front();
                }
                if t.seen.len() == keep {
                    ready.push(qi);
                }
            }
        }
        // Each ready QP's group: the QPs under way that share a link with it, and theirs. The
        // search stops at the first member that is not ready, or that an earlier search of this
        // look reached (whose group, then, was not ready either): in a congested run most
        // groups are not, and are large.
        let base = ff.searches;
        let mut group = Vec::new();
        'next: for qi in ready {
            if ff.tracks[qi as usize].visited > base {
                continue;
            }
            ff.searches += 1;
            let this = ff.searches;
            group.clear();
            group.push(qi);
            ff.tracks[qi as usize].visited = this;
            let mut at = 0;
            while at < group.len() {
                let q = group[at] as usize;
                for l in 0..ff.tracks[q].path.len() {
                    let p = ff.tracks[q].path[l] as usize;
                    // Each link's list is read once per look (a spine's holds many QPs).
                    if ff.link_seen[p] == this {
                        continue;
                    }
                    if ff.link_seen[p] > base {
                        continue 'next;
                    }
                    ff.link_seen[p] = this;
                    for &other in &ff.on_link[p] {
                        let o = &mut ff.tracks[other as usize];
                        if o.visited == this {
                            continue;
                        }
                        if o.visited > base || o.skip != NONE || o.seen.len() < keep {
                            o.visited = o.visited.max(this);
                            continue 'next;
                        }
                        o.visited = this;
                        group.push(other);
                    }
                }
                at += 1;
            }
            if let Some(until) = self.ff_steady_until(&ff, &group) {
                self.ff_skip(&mut ff, &group, until);
            }
        }
        if ff.under_way.is_empty() {
            ff.look_pending = false;
        } else {
            self.q.push(self.now + ff.cfg.period, Ev::FfLook);
        }
        self.ff = Some(ff);
    }

    /// When a group's skip would end (the latest time each of its QPs still has two periods
    /// of packets left after), or `None` if the group is not steady or the skip would be
    /// short.
    fn ff_steady_until(&self, ff: &FastForwarder, members: &[u32]) -> Option<SimTime> {
        let (now, period) = (self.now, ff.cfg.period);
        let keep = ff.cfg.periods as usize + 1;
        let mut until = SimTime(now.0.saturating_add(MAX_SKIP.0));
        if let Some(end) = self.opts.duration {
            until = until.min(SimTime(end.0.saturating_sub(period.0)));
        }
        for &qi in members {
            let t = &ff.tracks[qi as usize];
            let q = &self.host.qps[qi as usize];
            if t.skip != NONE || !t.usable || t.seen.len() < keep || q.sender_done.is_some() || q.rtx != NONE {
                return None;
            }
            let (rate, last) = (t.rate()?, t.seen[keep - 1]);
            // Every period at the span's rate (measured between send instants, so a count of
            // packets does not quantize it).
            for w in 1..keep {
                let (a, b) = (t.seen[w - 1], t.seen[w]);
                let dt = b.sent_at.0.checked_sub(a.sent_at.0).filter(|&d| d > 0)? as f64;
                if b.nxt < a.nxt + 2 || ((b.nxt - a.nxt) as f64 / dt / rate - 1.0).abs() > 0.02 {
                    return None;
                }
            }
            // No queue building on its data links (a switch egress holds at most two frames).
            let frame = (q.mtu + self.hdr.data) as u64;
            if t.path[..t.data_links].iter().any(|&p| self.queued_bytes(PortId(p)) > 2 * frame) {
                return None;
            }
            // Two periods of packets (and the last one) stay for packet level.
            let tail = rate * 2.0 * period.0 as f64 + 1.0;
            let left = q.npkts.saturating_sub(q.snd_nxt) as f64 - tail;
            if left <= 0.0 {
                return None;
            }
            until = until.min(SimTime(last.sent_at.0 + (left / rate) as u64));
        }
        (until.0 >= now.0 + (2 * period.0).max(MIN_SKIP.0)).then_some(until)
    }

    /// Stops the group's QPs until `until` (`Ev::FfResume`).
    fn ff_skip(&mut self, ff: &mut FastForwarder, members: &[u32], until: SimTime) {
        let id = match ff.free.pop() {
            Some(id) => id,
            None => {
                ff.skips.push(Skip { qps: Vec::new(), gen: 0, live: false });
                (ff.skips.len() - 1) as u32
            }
        };
        let mut qps = Vec::with_capacity(members.len());
        for &qi in members {
            let t = &mut ff.tracks[qi as usize];
            let rate = t.rate().expect("a steady QP's rate");
            t.skip = id;
            t.seen.clear();
            let q = &mut self.host.qps[qi as usize];
            qps.push((qi, rate, q.pacer.last_sent()));
            // The skip is progress: the transport's timeout must not fire across it (the last
            // packets before it may wait for their ACK until it ends).
            q.last_progress = until;
            let list = &mut self.host.nics[q.src_nic as usize].active;
            if let Some(pos) = list.iter().position(|&x| x == qi) {
                list.remove(pos);
            }
        }
        let s = &mut ff.skips[id as usize];
        s.qps = qps;
        s.live = true;
        s.gen = s.gen.wrapping_add(1);
        let gen = s.gen;
        ff.stats.skips += 1;
        self.q.push(until, Ev::FfResume { skip: id, gen });
    }

    /// `Ev::FfResume`: a skip's time is up.
    #[cold]
    #[inline(never)]
    pub(super) fn on_ff_resume(&mut self, skip: u32, gen: u32) {
        let Some(mut ff) = self.ff.take() else { return };
        let s = &ff.skips[skip as usize];
        if s.live && s.gen == gen {
            self.ff_resume(&mut ff, skip, false);
        }
        self.ff = Some(ff);
    }

    /// Ends skip `id` now: credits each QP what it would have sent since its last packet and
    /// puts it back on its NIC's send list.
    fn ff_resume(&mut self, ff: &mut FastForwarder, id: u32, early: bool) {
        let now = self.now;
        let qps = std::mem::take(&mut ff.skips[id as usize].qps);
        ff.skips[id as usize].live = false;
        ff.free.push(id);
        if early {
            ff.stats.early_ends += 1;
        }
        // Each QP back on its NIC's send list, and when its next packet would leave.
        let mut back: Vec<(u32, SimTime, u32)> = Vec::with_capacity(qps.len());
        for &(qi, rate, sent_at) in &qps {
            ff.tracks[qi as usize].skip = NONE;
            let (npkts, p0) = (self.host.qps[qi as usize].npkts, self.host.qps[qi as usize].snd_nxt);
            // The packets it would have sent since its last one, at its rate, up to now; its
            // last two stay.
            let k = ((now.0.saturating_sub(sent_at.0) as f64 * rate) as u32).min(npkts.saturating_sub(p0 + 2));
            // (A QP that gave up meanwhile, its retries spent, is credited nothing.)
            if k > 0 && self.host.qps[qi as usize].sender_done.is_none() {
                self.ff_credit(ff, qi, k);
            }
            let q = &mut self.host.qps[qi as usize];
            q.last_progress = now;
            if q.sender_done.is_none() {
                // Its next packet leaves when it would have (a skip ends between two).
                let next = SimTime(sent_at.0 + ((k + 1) as f64 / rate) as u64);
                q.pacer.defer(next);
                back.push((q.src_nic, next, qi));
            }
        }
        // A NIC takes its QPs back in the order their next packets would have left, first
        // from the one due first: the round robin goes on where the skip cut it (appended in
        // any other order, two channels of one NIC drift a packet apart at each skip, and a
        // ring whose channels drift apart slows down).
        back.sort_unstable_by_key(|&(nic, next, qi)| (nic, next, qi));
        for run in back.chunk_by(|a, b| a.0 == b.0) {
            let nic = &mut self.host.nics[run[0].0 as usize];
            let others = std::mem::take(&mut nic.active);
            nic.active.extend(run.iter().map(|r| r.2));
            nic.active.extend(others);
            nic.rr = 0;
        }
        let mut nics: Vec<u32> = back.iter().map(|r| r.0).collect();
        nics.dedup();
        for nic in nics {
            self.nic_try_send(nic);
        }
    }

    /// Credits QP `qi` with `k` full packets sent, delivered and acknowledged (every
    /// `ack_interval`), on every link of both its paths. The packets come off the message's
    /// remainder rather than moving its PSNs: what was in flight when the skip began arrives
    /// as it would, and the receiver never sees a jump, however soon the skip ends.
    fn ff_credit(&mut self, ff: &mut FastForwarder, qi: u32, k: u32) {
        let acks = k / self.opts.ack_interval.max(1);
        let (ack_hdr, ack_floor, data_hdr) = (self.hdr.ack, self.hdr.ack_floor, self.hdr.data);
        let q = &mut self.host.qps[qi as usize];
        let payload = k as u64 * q.mtu as u64;
        q.npkts -= k;
        q.size -= payload;
        q.st.bytes_delivered += payload;
        ff.tracks[qi as usize].credited += payload;
        let wire = (q.mtu + data_hdr + q.int_bytes as u32) as u64;
        let ack_wire = (ack_hdr + q.int_bytes as u32).max(ack_floor) as u64;
        let t = &ff.tracks[qi as usize];
        let (data, ack) = t.path.split_at(t.data_links);
        for &p in data {
            self.ports[p as usize].tx_bytes += k as u64 * wire;
        }
        for &p in ack {
            self.ports[p as usize].tx_bytes += acks as u64 * ack_wire;
        }
        let (k, acks) = (k as u64, acks as u64);
        let s = &mut self.stats;
        s.payload_delivered += payload;
        s.data_sent += k;
        s.data_delivered += k;
        s.sent += k + acks;
        s.delivered += k + acks;
        s.data_hops += k * data.len() as u64;
        s.packet_hops += k * data.len() as u64 + acks * ack.len() as u64;
        ff.stats.skipped_packets += k;
    }
}
