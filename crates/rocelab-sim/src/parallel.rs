//! The partitioned packet engine: the fabric cut into partitions (`partition`), each run by a
//! replica of the engine (`engine::part`), the replicas run by worker threads in windows of
//! one lookahead, and their counters merged into one snapshot.
//!
//! # Synchronization
//!
//! Conservative and window-based (YAWNS): nothing one partition does can reach another sooner
//! than the smallest delay of a cut link, the lookahead L. From a barrier at which every
//! partition has run all its events before time T, each runs its events in [T, T + L) without
//! hearing from the others; what it sent over cut links (packets, PFC frames) is due at T + L
//! or later. At the next barrier the messages are handed to their partitions, and the next
//! window starts at the earliest event or message anywhere (idle stretches are skipped).
//! Windows rather than null messages: every partition here links to every other (the core or
//! spine tier is dealt over all of them), so null messages would cost P·(P − 1) per step where
//! a barrier costs one (`partition::WindowProfile` counts what a cut would cost on a
//! single-threaded run).
//!
//! # Determinism
//!
//! The cut depends on the fabric and the options only, never on the thread count; each
//! partition's events run in its own order (time, then insertion); messages are handed over
//! in (sending partition, order sent). A partition's run is therefore the same
//! whichever thread runs it and whatever runs beside it, and 1, 2 or 16 threads give the same
//! bytes. A partitioned run is not the single-engine run: equal-time events that cross a cut
//! are ordered by that key instead of by insertion, so results differ from the unpartitioned
//! run as two seeds of one fabric do, within its physics.
//!
//! # Ending
//!
//! A partition is idle when nothing of it is in flight and its QPs are done: only a message
//! can make it send again, so it stops running (its timers wait). When every partition is
//! idle with nothing in transit, the run has ended at the latest time one became idle; each
//! then runs its timers due before that time, as the single engine would have. A duration
//! limit ends every partition at the limit.
//!
//! # Workloads
//!
//! The workload is one object for the whole run: it stays on the calling thread (the leader,
//! worker 0). Partitions report deliveries; at each barrier the leader calls the workload for
//! the last window's deliveries in (time, partition, order), each at its own time, then for
//! the wake-ups now due, and every partition posts every message it posted, in that order (so
//! message and QP numbers agree; only the source's partition starts it). Answering one window
//! late is exact when the workload waits at least a window before anything it asks for
//! (`Workload::reaction_delay`, NCCL's proxy overhead for rings and trees): windows are never
//! longer than that, and a workload that wants deliveries without such a delay is refused.
//! A wake-up ends a window, so it runs with every partition stopped at its time.
//!
//! # What runs partitioned
//!
//! RoCE fabrics: their `[[traffic]]` and `[[fault]]` tables, and collectives. Not (refused with
//! the reason): InfiniBand (its credits would cross the cut as messages too; not built), the
//! Ultra Ethernet transport (its receiver grants credit outside packets), NIC resets that tear
//! QPs down (a reconnection rewinds both ends of a QP at once), and workloads that answer a
//! delivery at once (training steps, serving, tenants).

use crate::engine::{Fault, FaultAction, Msg, Part, PartStatus, Progress, Sim, SimOptions};
use crate::partition::{partition, PartitionBy, Partitioning};
use crate::snapshot::{FlowRecord, Snapshot};
use crate::traffic::FlowSpec;
use crate::workload::{Collect, Delivered, FixedFlows, Net, Workload};
use rocelab_model::{Diagnostic, Model, NodeId, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How a run is cut and run (`SimOptions::parallel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallel {
    /// What the cut follows.
    pub by: PartitionBy,
    /// At most this many partitions (fewer when the topology has fewer blocks).
    pub parts: u32,
    /// Worker threads (at most one per partition; 0: one per core). Results do not depend on
    /// it.
    pub threads: usize,
}

/// Why a run cannot be partitioned, as a diagnostic on the option.
fn refused(what: &str, fix: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::new("simulation.partitions", format!("this run cannot be partitioned: {what}"), fix)]
}

/// A partitioned run: built, run, then read through `snapshot`.
pub struct ParRun<'m> {
    m: &'m Model,
    /// Runs on the calling thread, as the leader's (see the module doc).
    workload: Box<dyn Workload + 'm>,
    faults: Vec<Fault>,
    opts: SimOptions,
    cut: Partitioning,
    threads: usize,
    /// The window: the lookahead, or the workload's reaction delay if that is shorter.
    window: SimTime,
    /// Messages and wake-ups the workload asked for before the window they fell in had
    /// ended, moved to its end (none when the workload's reaction delay holds).
    late: u64,
    merged: Option<Snapshot>,
}

/// The command every partition runs next.
#[derive(Clone, Copy, Debug)]
enum Cmd {
    /// Run the events due before this time.
    Run { end: SimTime, stall_check: bool },
    /// Run the events due before `end` (or at it, `inclusive`), close the books and stop.
    Finish { end: SimTime, inclusive: bool, at_duration: bool, no_progress: bool },
}

/// One partition's mailbox at the barrier.
#[derive(Default)]
struct Slot {
    status: PartStatus,
    events: u64,
    now: SimTime,
    awaiting: bool,
    /// What it sent in the last two windows, per receiving partition: window w's messages
    /// are in `out[w % 2]`, taken by the receivers while window w + 1 fills the other half.
    out: [Vec<Vec<Msg>>; 2],
    /// The earliest message due of the last window's.
    first_out: Option<SimTime>,
    /// Deliveries of the last window (see `Part::delivered`).
    delivered: Vec<(SimTime, u32, bool)>,
    /// With `recycle_qps`: QPs whose end here finished in the last window, and of the
    /// candidates, those of which nothing is left here.
    ends_done: Vec<u32>,
    quiet: Vec<u32>,
}

/// A barrier that spins before it sleeps: a window of a collective holds a few thousand
/// events, tens of microseconds, where putting a thread to sleep and waking it (a futex each
/// way, as `std::sync::Barrier` does) costs as much again. After a short spin it sleeps on a
/// condition variable, so a machine busy with other work (more runnable threads than cores)
/// does not burn the core a descheduled partner needs.
struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl SpinBarrier {
    fn new(threads: usize) -> SpinBarrier {
        SpinBarrier {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            // (Under the lock: a waiter that found the old generation under it is already
            // waiting when the notice comes.)
            let _held = self.lock.lock().expect("no worker panics holding it");
            self.generation.fetch_add(1, Ordering::Release);
            self.wake.notify_all();
            return;
        }
        for _ in 0..2_000 {
            if self.generation.load(Ordering::Acquire) != gen {
                return;
            }
            std::hint::spin_loop();
        }
        let mut held = self.lock.lock().expect("no worker panics holding it");
        while self.generation.load(Ordering::Acquire) == gen {
            held = self.wake.wait(held).expect("no worker panics holding it");
        }
    }
}

/// What the workers share.
struct Shared {
    barrier: SpinBarrier,
    slots: Vec<Mutex<Slot>>,
    cmd: Mutex<Cmd>,
    /// The messages the workload posted at the last barrier, for every partition to post.
    posts: Mutex<Vec<FlowSpec>>,
    /// With `recycle_qps`: QPs every partition retires before the next window (in this
    /// order), and the QPs done at both ends that each reports on after it (`Leader::recycle`).
    retire: Mutex<Vec<u32>>,
    candidates: Mutex<Vec<u32>>,
}

/// The leader (worker 0): the workload, and its memory across barriers.
struct Leader<'a, 'm> {
    workload: &'a mut (dyn Workload + 'm),
    /// Every message posted: (source, destination, tag, start), for its delivery.
    msgs: Vec<(NodeId, NodeId, u64, SimTime)>,
    /// The workload has heard of the message (once only, as from one engine).
    heard: Vec<bool>,
    /// Wake-ups due: (time, order asked, tag).
    wakes: BinaryHeap<Reverse<(SimTime, u64, u64)>>,
    /// The workload has a reaction delay (to wake-ups as to deliveries): a wake-up is answered
    /// at the end of its window; without one, a wake-up ends the window.
    wakes_in_window: bool,
    wakes_asked: u64,
    late: u64,
    last_gone: u64,
    stall_since: SimTime,
    /// The partitions were asked whether a QP awaits its timeout.
    checked: bool,
    /// The end of the last window: every partition that is not idle has run all before it.
    last_end: SimTime,
    /// With `recycle_qps`, per QP slot: its ends reported done (2: both).
    ends: Vec<u8>,
    /// The QPs done at both ends the partitions were asked about in the last window.
    checking: Vec<u32>,
    /// Candidates found still in use, with the barrier at which to ask again (a QP can stay
    /// busy for a while after both ends are done: a rate timer hundreds of µs out; asking of
    /// every one at every barrier cost more than the run).
    later: std::collections::VecDeque<(u64, u32)>,
    barriers: u64,
    /// Per QP slot: partitions that found nothing of it left (scratch, zero between uses).
    quiet: Vec<u32>,
}

impl<'m> ParRun<'m> {
    /// A fixed list of flows (a fabric's `[[traffic]]`) on `m` cut as `par` asks.
    pub fn new(
        m: &'m Model,
        flows: Vec<FlowSpec>,
        faults: Vec<Fault>,
        opts: SimOptions,
        par: Parallel,
    ) -> Result<ParRun<'m>, Vec<Diagnostic>> {
        Self::with_workload(m, Box::new(FixedFlows(flows)), faults, opts, par)
    }

    /// A run driven by `workload` on `m` cut as `par` asks, if it can be partitioned (see the
    /// module doc).
    pub fn with_workload(
        m: &'m Model,
        workload: Box<dyn Workload + 'm>,
        faults: Vec<Fault>,
        opts: SimOptions,
        par: Parallel,
    ) -> Result<ParRun<'m>, Vec<Diagnostic>> {
        if m.ib.is_some() {
            return Err(refused(
                "InfiniBand's link-level credits are not carried across a cut",
                "run it unpartitioned (drop --partitions)",
            ));
        }
        if m.nics.iter().any(|n| n.transport == rocelab_model::uet::Transport::Uet) {
            return Err(refused(
                "the Ultra Ethernet transport's receiver credits are not carried across a cut",
                "run it unpartitioned (drop --partitions)",
            ));
        }
        if faults.iter().any(|f| matches!(f.action, FaultAction::Qps { .. })) {
            return Err(refused(
                "a NIC reset tears down and rewinds both ends of a QP at once",
                "run it unpartitioned (drop --partitions)",
            ));
        }
        // What building a replica checks, checked once here (a worker cannot report it).
        crate::router::Router::new(m, opts.seed)?;
        let cut = partition(m, par.by, par.parts)
            .map_err(|e| vec![Diagnostic::new("simulation.partition_by", e.to_string(), "use --partition-by auto")])?;
        if cut.lookahead.is_some_and(|l| l == SimTime::ZERO) {
            return Err(refused(
                "a cut link has no propagation delay, so partitions cannot run ahead of each other",
                "give the fabric's links a length or delay, or cut along another tier (--partition-by)",
            ));
        }
        let mut window = cut.lookahead.unwrap_or(SimTime::MAX);
        if workload.wants_deliveries() {
            let d = workload.reaction_delay();
            if d == SimTime::ZERO {
                return Err(refused(
                    "the workload answers a delivery at the instant it happens (a message posted or a wake-up \
                     at once), so every partition would have to stop at every delivery",
                    "run it unpartitioned (drop --partitions); a collective whose NCCL proxy overhead is above \
                     zero (the default) can be cut",
                ));
            }
            window = window.min(d);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = if par.threads == 0 { cores } else { par.threads }.clamp(1, cut.parts as usize);
        Ok(ParRun { m, workload, faults, opts, cut, threads, window, late: 0, merged: None })
    }

    /// Messages and wake-ups moved to the end of the window they were asked in (zero when
    /// the workload keeps its reaction delay).
    pub fn late_reactions(&self) -> u64 {
        self.late
    }

    /// The cut this run uses.
    pub fn partitioning(&self) -> &Partitioning {
        &self.cut
    }

    /// Worker threads it runs on.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs every partition to the end (see the module doc); `progress` and the workload are
    /// called from this thread.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) {
        let parts = self.cut.parts as usize;
        let of_node = Arc::new(self.cut.of_node.clone());
        let peer_part: Arc<Vec<u32>> =
            Arc::new(self.m.ports.iter().map(|p| of_node[self.m.ports[p.peer.idx()].node.idx()]).collect());
        // The workload's start, collected: every partition posts these first.
        let mut c = Collect { m: self.m, now: SimTime::ZERO, posts: Vec::new(), wakes: Vec::new(), next_msg: 0 };
        self.workload.start(&mut Net::collect(&mut c));
        let report = self.workload.wants_deliveries();
        let wakes_in_window = self.workload.reaction_delay() > SimTime::ZERO;
        let mut leader = Leader {
            workload: self.workload.as_mut(),
            msgs: Vec::new(),
            heard: Vec::new(),
            wakes: BinaryHeap::new(),
            wakes_in_window,
            wakes_asked: 0,
            late: 0,
            last_gone: 0,
            stall_since: SimTime::ZERO,
            checked: false,
            last_end: SimTime::ZERO,
            ends: Vec::new(),
            checking: Vec::new(),
            later: std::collections::VecDeque::new(),
            barriers: 0,
            quiet: Vec::new(),
        };
        let initial = leader.absorb(c, SimTime::ZERO);
        let shared = Shared {
            barrier: SpinBarrier::new(self.threads),
            slots: (0..parts).map(|_| Mutex::new(Slot::default())).collect(),
            // A first window that runs nothing: every partition reports its first event.
            cmd: Mutex::new(Cmd::Run { end: SimTime::ZERO, stall_check: false }),
            posts: Mutex::new(Vec::new()),
            retire: Mutex::new(Vec::new()),
            candidates: Mutex::new(Vec::new()),
        };
        let threads = self.threads;
        let (m, initial, faults, opts) = (self.m, &initial, &self.faults, &self.opts);
        let window = self.window;
        let mut snaps: Vec<(u32, Snapshot)> = std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .map(|w| {
                    let (shared, of_node, peer_part) = (&shared, of_node.clone(), peer_part.clone());
                    s.spawn(move || {
                        let ctx = Worker { w, threads, m, initial, faults, opts, of_node, peer_part, window, report };
                        ctx.run(shared, &mut |_| {}, None)
                    })
                })
                .collect();
            let ctx = Worker { w: 0, threads, m, initial, faults, opts, of_node, peer_part, window, report };
            let mut out = ctx.run(&shared, progress, Some(&mut leader));
            for h in handles {
                out.extend(h.join().expect("a partition's worker thread panicked"));
            }
            out
        });
        self.late = leader.late;
        snaps.sort_by_key(|(p, _)| *p);
        let snaps: Vec<Snapshot> = snaps.into_iter().map(|(_, s)| s).collect();
        let mut merged = merge(&self.cut.of_node, snaps);
        merged.partitions = Some(crate::snapshot::CutUsed {
            count: self.cut.parts,
            by: self.cut.by.name(),
            lookahead: self.cut.lookahead.unwrap_or(SimTime::ZERO),
        });
        self.merged = Some(merged);
    }

    /// The merged counters of every partition (an idle fabric before `run`).
    pub fn snapshot(&self) -> Snapshot {
        self.merged.clone().unwrap_or_else(|| Snapshot::idle(self.m))
    }
}

/// One worker thread: the partitions p with p mod threads = w.
struct Worker<'a, 'm> {
    w: usize,
    threads: usize,
    m: &'m Model,
    /// What the workload posted at its start.
    initial: &'a [FlowSpec],
    faults: &'a [Fault],
    opts: &'a SimOptions,
    of_node: Arc<Vec<u32>>,
    peer_part: Arc<Vec<u32>>,
    window: SimTime,
    /// The workload hears of deliveries.
    report: bool,
}

impl<'m> Worker<'_, 'm> {
    fn run(
        &self,
        sh: &Shared,
        progress: &mut dyn FnMut(Progress),
        mut leader: Option<&mut Leader<'_, 'm>>,
    ) -> Vec<(u32, Snapshot)> {
        let parts = sh.slots.len();
        let mine: Vec<u32> = (0..parts as u32).filter(|p| *p as usize % self.threads == self.w).collect();
        let mut sims: Vec<Sim<'m>> = mine
            .iter()
            .map(|&p| {
                let mut part = Part::new(p, parts, self.of_node.clone(), self.peer_part.clone(), self.report);
                part.ends_done = self.opts.recycle_qps.then(Vec::new);
                let work = Box::new(FixedFlows(self.initial.to_vec()));
                Sim::replica(self.m, work, self.faults.to_vec(), self.opts.clone(), Some(part))
                    .expect("checked when the run was built (ParRun::new)")
            })
            .collect();
        let mut next_report = 0u64;
        for window in 0u64.. {
            let cmd = *sh.cmd.lock().expect("no worker panics holding it");
            let posts = sh.posts.lock().expect("no worker panics holding it").clone();
            let retire = sh.retire.lock().expect("no worker panics holding it").clone();
            let candidates = sh.candidates.lock().expect("no worker panics holding it").clone();
            let (sent, fill) = ((window + 1) as usize % 2, window as usize % 2);
            for (k, sim) in sims.iter_mut().enumerate() {
                let me = mine[k] as usize;
                // Retired before the new messages are posted, so their slots go to the same
                // QPs in every partition.
                for &q in &retire {
                    sim.retire_from_leader(q);
                }
                for f in &posts {
                    sim.post_from_leader(f.clone());
                }
                // Messages to this partition, in (sending partition, order sent): the same
                // order whichever thread runs which partition.
                for src in &sh.slots {
                    let mut src = src.lock().expect("no worker panics holding it");
                    for msg in src.out[sent].get_mut(me).map(|v| v.drain(..)).into_iter().flatten() {
                        sim.inject(msg);
                    }
                }
                // (No lock held while the window runs: the other workers take their messages
                // from this slot meanwhile.)
                let (status, awaiting) = match cmd {
                    Cmd::Run { end, stall_check } => {
                        let status = sim.run_window(end);
                        (status, stall_check && sim.awaiting_timeout())
                    }
                    Cmd::Finish { end, inclusive, at_duration, no_progress } => {
                        sim.run_tail(end, inclusive);
                        sim.set_stopped(at_duration, no_progress);
                        sim.close();
                        (sim.part_status(), false)
                    }
                };
                let mut slot = sh.slots[me].lock().expect("no worker panics holding it");
                (slot.status, slot.awaiting) = (status, awaiting);
                slot.events = sim.events();
                slot.now = sim.now();
                sim.swap_outbox(&mut slot.out[fill]);
                sim.swap_delivered(&mut slot.delivered);
                sim.swap_ends_done(&mut slot.ends_done);
                sim.quiet_among(&candidates, &mut slot.quiet);
                // (The earliest of all, not of the first: cables differ in length, so messages
                // sent in order need not arrive in order.)
                slot.first_out = slot.out[fill].iter().flatten().map(|m| m.at()).min();
            }
            if let Cmd::Finish { .. } = cmd {
                if self.w == 0 {
                    progress(self.progress(sh));
                }
                return mine.iter().zip(&sims).map(|(&p, s)| (p, s.snapshot())).collect();
            }
            sh.barrier.wait();
            if let Some(leader) = leader.as_deref_mut() {
                let (next, posts) = leader.decide(self, sh, fill);
                *sh.cmd.lock().expect("no worker panics holding it") = next;
                *sh.posts.lock().expect("no worker panics holding it") = posts;
                if self.opts.recycle_qps {
                    let retire = leader.recycle(sh, fill);
                    *sh.retire.lock().expect("no worker panics holding it") = retire;
                    *sh.candidates.lock().expect("no worker panics holding it") = leader.checking.clone();
                }
                let events: u64 = sh.slots.iter().map(|s| s.lock().expect("not poisoned").events).sum();
                if events >= next_report {
                    next_report = events + 200_000;
                    progress(self.progress(sh));
                }
            }
            sh.barrier.wait();
        }
        unreachable!("the windows run until a Finish")
    }

    /// The run's progress as one engine would report it.
    fn progress(&self, sh: &Shared) -> Progress {
        let mut p = Progress {
            now: SimTime::ZERO,
            end: self.opts.duration,
            events: 0,
            qps_done: 0,
            qps_total: 0,
            bytes_done: 0,
            bytes_total: self.initial.iter().map(|f| f.size_bytes).sum(),
        };
        for s in &sh.slots {
            let s = s.lock().expect("not poisoned");
            p.events += s.events;
            p.now = p.now.max(s.now);
            p.qps_total += s.status.qps_created;
            p.qps_done += s.status.qps_done;
            p.bytes_done += s.status.payload;
        }
        p
    }
}

impl<'m> Leader<'_, 'm> {
    /// Which QPs every partition retires now (`recycle_qps`): those done at both ends of
    /// which the last window left nothing anywhere — no packet in any partition or on its way
    /// between two, no timer. A QP can then never be touched again, so its slot can go to
    /// the next QP posted; deciding it here, once for all, keeps slot numbers the same in
    /// every partition. Also sets the candidates the partitions report on next.
    fn recycle(&mut self, sh: &Shared, fill: usize) -> Vec<u32> {
        let mut slots: Vec<_> = sh.slots.iter().map(|s| s.lock().expect("not poisoned")).collect();
        let parts = slots.len() as u32;
        let grow = |v: &mut Vec<u32>, q: u32| {
            if v.len() <= q as usize {
                v.resize(q as usize + 1, 0);
            }
        };
        for s in &slots {
            for &q in &s.quiet {
                grow(&mut self.quiet, q);
                self.quiet[q as usize] += 1;
            }
        }
        // Packets of a QP between two partitions are in no partition's counts.
        for s in &slots {
            for msg in s.out[fill].iter().flatten() {
                if let Msg::Packet { pkt, .. } = msg {
                    if (pkt.qp as usize) < self.quiet.len() {
                        self.quiet[pkt.qp as usize] = 0;
                    }
                }
            }
        }
        /// Barriers before a candidate still in use is asked about again.
        const RECHECK: u64 = 32;
        self.barriers += 1;
        let mut retire = Vec::new();
        for &q in &self.checking {
            let n = self.quiet.get(q as usize).copied().unwrap_or(0);
            if n == parts {
                retire.push(q);
            } else {
                self.later.push_back((self.barriers + RECHECK, q));
            }
        }
        let mut keep = Vec::new();
        while let Some(&(due, q)) = self.later.front() {
            if due > self.barriers {
                break;
            }
            self.later.pop_front();
            keep.push(q);
        }
        for s in &slots {
            for &q in &s.quiet {
                self.quiet[q as usize] = 0;
            }
        }
        for s in slots.iter_mut() {
            for q in s.ends_done.drain(..) {
                if self.ends.len() <= q as usize {
                    self.ends.resize(q as usize + 1, 0);
                }
                self.ends[q as usize] += 1;
                if self.ends[q as usize] == 2 {
                    self.ends[q as usize] = 0;
                    keep.push(q);
                }
            }
        }
        self.checking = keep;
        retire
    }

    /// Takes what the workload asked for in one callback: its messages (none starting before
    /// `floor`, the end of the window just run) and its wake-ups. Returns the messages.
    fn absorb(&mut self, c: Collect<'m>, floor: SimTime) -> Vec<FlowSpec> {
        let mut posts = c.posts;
        for f in &mut posts {
            if f.start < floor {
                f.start = floor;
                self.late += 1;
            }
            self.msgs.push((f.src, f.dst, f.tag, f.start));
            self.heard.push(false);
        }
        for (at, tag) in c.wakes {
            let at = if at < floor {
                self.late += 1;
                floor
            } else {
                at
            };
            self.wakes.push(Reverse((at, self.wakes_asked, tag)));
            self.wakes_asked += 1;
        }
        posts
    }

    /// Calls the workload for the deliveries of the window just run and the wake-ups now due,
    /// and says what every partition does next and what it posts first.
    fn decide(&mut self, w: &Worker<'_, 'm>, sh: &Shared, fill: usize) -> (Cmd, Vec<FlowSpec>) {
        let mut slots: Vec<_> = sh.slots.iter().map(|s| s.lock().expect("not poisoned")).collect();
        let floor = self.last_end;
        let duration = w.opts.duration;
        // Deliveries in (time, partition, order): the same order for any thread count.
        let mut dels: Vec<(SimTime, usize, usize, u32, bool)> = Vec::new();
        for (p, s) in slots.iter_mut().enumerate() {
            dels.extend(s.delivered.drain(..).enumerate().map(|(k, (at, msg, failed))| (at, p, k, msg, failed)));
        }
        dels.sort_unstable_by_key(|d| (d.0, d.1, d.2));
        let mut posts = Vec::new();
        let collect = |now: SimTime, next_msg: usize| Collect {
            m: w.m,
            now,
            posts: Vec::new(),
            wakes: Vec::new(),
            next_msg: next_msg as u32,
        };
        // With a reaction delay, wake-ups due in the window just run are answered here too, in
        // time order with the deliveries (a delivery first at equal times).
        let mut last_wake = None;
        let mut dels = dels.into_iter().peekable();
        loop {
            let wake = self.wakes.peek().map(|w| w.0 .0).filter(|&at| self.wakes_in_window && at < floor);
            match (dels.peek().map(|d| d.0), wake) {
                (None, None) => break,
                (d, Some(at)) if d.is_none_or(|d| at < d) => {
                    let Some(Reverse((at, _, tag))) = self.wakes.pop() else { unreachable!("peeked") };
                    let mut c = collect(at, self.msgs.len());
                    self.workload.on_wake(tag, &mut Net::collect(&mut c));
                    posts.extend(self.absorb(c, floor));
                    last_wake = Some(at);
                }
                _ => {
                    let (at, _, _, msg, failed) = dels.next().expect("peeked");
                    if std::mem::replace(&mut self.heard[msg as usize], true) {
                        continue;
                    }
                    let (src, dst, tag, start) = self.msgs[msg as usize];
                    let mut c = collect(at, self.msgs.len());
                    let done = Delivered { msg, tag, src, dst, start, at, failed };
                    self.workload.on_delivered(done, &mut Net::collect(&mut c));
                    posts.extend(self.absorb(c, floor));
                }
            }
        }
        let first_msg = slots.iter().filter_map(|s| s.first_out).min();
        let receives = |d: usize| slots.iter().any(|s| s.out[fill].get(d).is_some_and(|v| !v.is_empty()));
        let st: Vec<PartStatus> = slots.iter().map(|s| s.status).collect();
        // The next window opens at the earliest event of a partition that will run (not idle,
        // or about to receive a message), message, or message posted, or wake-up. Without a
        // reaction delay a wake-up due by then runs first (every partition has run everything
        // before it), and may post more; with one it waits for the end of its window as a
        // delivery does. (A partition that was idle may hold timers from before the last
        // window's end; they cannot send anything, so the window starts where the running
        // partitions are.)
        let next = loop {
            let wake = self.wakes.peek().map(|w| w.0 .0).filter(|_| self.wakes_in_window);
            let next = st
                .iter()
                .enumerate()
                .filter(|(d, s)| !s.idle || receives(*d))
                .filter_map(|(_, s)| s.next)
                .chain(first_msg)
                .chain(posts.iter().map(|f: &FlowSpec| f.start))
                .chain(wake)
                .min()
                .map(|t| t.max(floor));
            match self.wakes.peek() {
                Some(&Reverse((at, _, tag)))
                    if !self.wakes_in_window && next.is_none_or(|t| at <= t) && duration.is_none_or(|e| at <= e) =>
                {
                    self.wakes.pop();
                    let mut c = collect(at, self.msgs.len());
                    self.workload.on_wake(tag, &mut Net::collect(&mut c));
                    posts.extend(self.absorb(c, at));
                    last_wake = Some(at);
                }
                _ => break next,
            }
        };
        let all_idle = st.iter().all(|s| s.idle) && first_msg.is_none() && posts.is_empty();
        let created: usize = st.iter().map(|s| s.qps_created).sum();
        if all_idle && created > 0 && self.wakes.is_empty() {
            let end = st.iter().map(|s| s.idle_since).chain(last_wake).max().unwrap_or(SimTime::ZERO);
            return (Cmd::Finish { end, inclusive: false, at_duration: false, no_progress: false }, Vec::new());
        }
        let now = slots.iter().map(|s| s.now).max().unwrap_or(SimTime::ZERO);
        let Some(t) = next else {
            // Out of events with work left (a deadlock, a host that never drains): stop where
            // the last event was, as one engine does.
            return (Cmd::Finish { end: now, inclusive: true, at_duration: false, no_progress: false }, posts);
        };
        if let Some(e) = duration {
            if t > e {
                return (Cmd::Finish { end: e, inclusive: true, at_duration: true, no_progress: false }, posts);
            }
        }
        let mut stall_check = false;
        if duration.is_none() {
            // As one engine does: stop a run in which packets sit in the fabric and none is
            // delivered or dropped for `NO_PROGRESS_LIMIT`, unless a timeout or a fault will
            // make progress.
            let gone: u64 = st.iter().map(|s| s.gone).sum();
            let quiet = st.iter().all(|s| s.live == 0 && s.active_qps == 0);
            if gone != self.last_gone || quiet {
                (self.last_gone, self.stall_since, self.checked) = (gone, t, false);
            } else if t.0 - self.stall_since.0 > crate::engine::NO_PROGRESS_LIMIT.0 {
                // (Whether a QP awaits its timeout is asked of the partitions for one window,
                // then read here.)
                let faults_due = st.iter().any(|s| s.faults_due > 0);
                if faults_due || slots.iter().any(|s| s.awaiting) {
                    (self.stall_since, self.checked) = (t, false);
                } else if self.checked {
                    return (Cmd::Finish { end: now, inclusive: true, at_duration: false, no_progress: true }, posts);
                } else {
                    (self.checked, stall_check) = (true, true);
                }
            }
        }
        let mut end = SimTime(t.0.saturating_add(w.window.0));
        if let Some(Reverse((at, _, _))) = self.wakes.peek().filter(|_| !self.wakes_in_window) {
            end = end.min(*at);
        }
        if let Some(e) = duration {
            end = end.min(SimTime(e.0 + 1));
        }
        self.last_end = end;
        (Cmd::Run { end, stall_check }, posts)
    }
}

/// One snapshot of the whole run from the partitions' (in partition order): each count taken
/// where it was made (see `engine::part`).
fn merge(of_node: &[u32], snaps: Vec<Snapshot>) -> Snapshot {
    let owner = |node: rocelab_model::NodeId| of_node[node.idx()] as usize;
    let mut out = snaps[0].clone();
    out.now = snaps.iter().map(|s| s.now).max().unwrap_or(SimTime::ZERO);
    out.events = snaps.iter().map(|s| s.events).sum();
    out.stopped_at_duration = snaps.iter().any(|s| s.stopped_at_duration);
    out.stopped_no_progress = snaps.iter().any(|s| s.stopped_no_progress);
    // Ports: what only the owner counts is zero in the other copies, so counts add; a cut
    // link's far end adds what it lost on the cable.
    for (i, p) in out.ports.iter_mut().enumerate() {
        let own = &snaps[owner(p.node)].ports[i];
        *p = own.clone();
        for (k, s) in snaps.iter().enumerate() {
            if k == owner(p.node) {
                continue;
            }
            let o = &s.ports[i];
            p.tx_bytes += o.tx_bytes;
            p.link_state_changes += o.link_state_changes;
            for q in 0..8 {
                p.pfc_tx[q] += o.pfc_tx[q];
                p.pfc_rx[q] += o.pfc_rx[q];
                p.paused_ps[q] += o.paused_ps[q];
                p.storms[q] += o.storms[q];
                p.ecn_marked[q] += o.ecn_marked[q];
                p.queued_bytes[q] += o.queued_bytes[q];
                p.queue_peak_bytes[q] = p.queue_peak_bytes[q].max(o.queue_peak_bytes[q]);
                p.queue_delay_max_ps[q] = p.queue_delay_max_ps[q].max(o.queue_delay_max_ps[q]);
                for (d, v) in p.drops[q].iter_mut().zip(&o.drops[q]) {
                    *d += v;
                }
            }
        }
    }
    for (i, sw) in out.switches.iter_mut().enumerate() {
        *sw = snaps[owner(sw.node)].switches[i].clone();
    }
    for (i, n) in out.nics.iter_mut().enumerate() {
        *n = snaps[owner(n.node)].nics[i].clone();
    }
    // QPs: the sender's half where the source is, the receiver's where the destination is.
    for (i, q) in out.qps.iter_mut().enumerate() {
        let (tx, rx) = (&snaps[owner(q.src)].qps[i], &snaps[owner(q.dst)].qps[i]);
        *q = tx.clone();
        q.delivered_bytes = rx.delivered_bytes;
        q.finish = rx.finish;
    }
    // Messages: the sender's counts where the source is, the receiver's where the destination
    // is (retired QPs are counted in their messages only).
    for (i, f) in out.flows.iter_mut().enumerate() {
        let (tx, rx) = (&snaps[owner(f.src)].flows[i], &snaps[owner(f.dst)].flows[i]);
        *f = FlowRecord { delivered_bytes: rx.delivered_bytes, finish: rx.finish, ..tx.clone() };
        // (A sender that gave up could not see that the receiver had everything.)
        f.failed &= f.finish.is_none();
    }
    let c = &mut out.counters;
    *c = Default::default();
    for s in &snaps {
        let o = &s.counters;
        c.sent += o.sent;
        c.delivered += o.delivered;
        c.dropped += o.dropped;
        c.in_flight += o.in_flight;
        c.data_sent += o.data_sent;
        c.data_delivered += o.data_delivered;
        c.data_dropped += o.data_dropped;
        c.payload_delivered_bytes += o.payload_delivered_bytes;
        c.retransmitted += o.retransmitted;
        c.pfc_storms += o.pfc_storms;
        c.packet_hops += o.packet_hops;
        c.data_packet_hops += o.data_packet_hops;
        c.out_of_order += o.out_of_order;
        c.trimmed += o.trimmed;
        c.trim_nacks += o.trim_nacks;
        c.selective_retransmits += o.selective_retransmits;
        c.rccc_grants += o.rccc_grants;
        // (Counted at senders only.)
        c.timeouts += o.timeouts;
        c.qps_failed += o.qps_failed;
    }
    c.tally(&out.ports, &out.nics);
    for s in &snaps[1..] {
        out.queue_delay.add(&s.queue_delay);
        out.cnp_queue_delay.add(&s.cnp_queue_delay);
    }
    out.series = merge_series(&snaps, out.now);
    out
}

/// The sampled rows of every partition in one engine's order: by time, each instant's switch
/// rows (node order) before its port rows (port order), capped as one record caps them.
fn merge_series(snaps: &[Snapshot], end: SimTime) -> Vec<crate::stats::SampleRow> {
    let mut rows: Vec<_> = snaps.iter().flat_map(|s| s.series.iter().copied()).filter(|r| r.time <= end).collect();
    rows.sort_by_key(|r| (r.time, r.port != u32::MAX, if r.port == u32::MAX { r.node } else { r.port }));
    let mut kept = 0usize;
    rows.retain(|r| {
        let keep = r.port == u32::MAX || kept < crate::stats::MAX_SERIES_ROWS;
        kept += keep as usize;
        keep
    });
    rows
}
