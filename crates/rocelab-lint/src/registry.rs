//! The rule table. Codes are stable: a code is never reused for another check, so a
//! `[[lint.disable]]` entry keeps meaning the same thing. `docs/lint/CODE.md` is generated from
//! these entries (`cargo test -p rocelab-lint` fails when the pages are stale; run it with
//! `ROCELAB_BLESS=1` to rewrite them).

use crate::Severity::{self, Error, Warning};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RuleInfo {
    pub code: &'static str,
    pub severity: Severity,
    pub title: &'static str,
    /// What the rule checks, precisely.
    pub checks: &'static str,
    /// Why it matters in a RoCE fabric.
    pub why: &'static str,
    /// How to fix it.
    pub fix: &'static str,
    /// Where thresholds come from.
    pub source: &'static str,
}

pub fn rule(code: &str) -> Option<&'static RuleInfo> {
    RULES.iter().find(|r| r.code.eq_ignore_ascii_case(code))
}

/// The text of `docs/lint/CODE.md` (also what `rocelab lint --explain CODE` prints).
pub fn page(r: &RuleInfo) -> String {
    format!(
        "# {code}: {title}\n\nSeverity: **{sev}**\n\n## What it checks\n\n{checks}\n\n## Why it matters\n\n{why}\n\n\
         ## How to fix\n\n{fix}\n\n## Source of the threshold\n\n{source}\n\n## Disabling\n\n\
         In the fabric file, with the reason:\n\n```toml\n[[lint.disable]]\ncode = \"{code}\"\nreason = \"...\"\n```\n\n\
         or for one run: `rocelab lint --disable {code}=\"reason\" FILE`.\n",
        code = r.code,
        title = r.title,
        sev = r.severity,
        checks = r.checks,
        why = r.why,
        fix = r.fix,
        source = r.source,
    )
}

const MECH: &str = "[QoS conventions seen in the field](../mechanisms.md#qos-conventions-seen-in-the-field), with their public sources (NVIDIA, Cumulus, SONiC, Cisco, Broadcom).";

pub static RULES: &[RuleInfo] = &[
    RuleInfo {
        code: "PFC001",
        severity: Warning,
        title: "PFC enabled on more than two priorities",
        checks: "The switch PFC priorities (`qos.pfc.priorities`, or the priorities of the lossless classes) number more than two.",
        why: "PFC is a hop-by-hop local protection; every lossless priority can spread pauses (head-of-line blocking, congestion trees) across the fabric and needs its own headroom on every port. RoCE needs one lossless priority, sometimes two (RoCE plus lossless storage). More turns a local protection into a fabric-wide hazard and eats buffer.",
        fix: "Keep PFC on the RoCE priority only (e.g. `priorities = [3]`), or on 3 and 4 when a second lossless class is deliberate.",
        source: "NVIDIA, Cumulus and Cisco AI/ML blueprints enable PFC on one priority (3); SONiC's default is 3 and 4. See [mechanisms.md](../mechanisms.md#qos-conventions-seen-in-the-field).",
    },
    RuleInfo {
        code: "PFC002",
        severity: Error,
        title: "PFC enabled on the default or TCP class",
        checks: "A PFC-enabled priority belongs to the default class (the class DSCPs fall into when unmapped) or to a class that carries `tcp`, `storage`, `management` or `other` traffic but no RDMA.",
        why: "TCP recovers from loss by itself; making it lossless only lets a single slow receiver pause every link toward it, and the default class catches everything unclassified, so a pause storm there stops the whole fabric including the control plane.",
        fix: "Remove that priority from `qos.pfc.priorities` or set `lossless = false` on the class.",
        source: MECH,
    },
    RuleInfo {
        code: "QOS001",
        severity: Warning,
        title: "RoCE class is not lossless",
        checks: "The class that carries RDMA has no PFC on its priority (unless every NIC profile in use runs `transport = \"uet\"`, which is lossy by design).",
        why: "RoCEv2 on ConnectX/Thor NICs recovers from a drop with go-back-N: one lost packet retransmits a whole window, so even 0.1 % loss costs a large share of throughput. Unless the NICs are explicitly run lossy (selective repeat, resilient RoCE), the RoCE priority must be lossless.",
        fix: "Set `lossless = true` on the RoCE class (and keep ECN on it), or disable this rule with the reason if the fabric is lossy on purpose.",
        source: MECH,
    },
    RuleInfo {
        code: "QOS002",
        severity: Error,
        title: "Lossless RoCE class without ECN",
        checks: "The RDMA class is lossless but has no ECN/WRED marking (`ecn` and `ecn_per_speed` both absent).",
        why: "Without ECN, DCQCN never learns about congestion: the only brake is PFC, so every incast becomes pause frames that spread upstream (congestion spreading, victim flows, deadlock risk).",
        fix: "Add `ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }` (Cumulus RoCE defaults) or thresholds sized for the port speed.",
        source: "Cumulus `nv set qos roce` defaults: Kmin 150 000 B, Kmax 1 500 000 B; see [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "CNP001",
        severity: Error,
        title: "No dedicated CNP class",
        checks: "The class named by `qos.cnp_class` is the RDMA class, the default class, or a class that carries data (`rdma`, `tcp`, `storage`, `management`).",
        why: "A CNP tells a sender to slow down; if it queues behind the very data that is congested, it arrives late and DCQCN reacts to a congestion that has already caused pauses.",
        fix: "Declare a class for CNPs (DSCP 48 -> priority 6, `scheduler = \"strict\"`, `carries = [\"cnp\"]`) and name it in `qos.cnp_class`.",
        source: "NVIDIA NIC default CNP DSCP 48 / priority 6; Cumulus TC6 strict; Cisco priority queue. See [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "CNP002",
        severity: Warning,
        title: "CNP class is not strict priority",
        checks: "The CNP class is scheduled by DWRR instead of strict priority.",
        why: "Under DWRR a CNP waits its turn behind the other classes' quanta; the feedback loop of DCQCN lengthens exactly when the fabric is busiest.",
        fix: "Set `scheduler = \"strict\"` on the CNP class (CNPs are tiny: strict priority cannot starve anyone).",
        source: MECH,
    },
    RuleInfo {
        code: "CNP003",
        severity: Error,
        title: "CNP class shares an egress queue with data",
        checks: "The CNP class's egress queue is also the queue of another class.",
        why: "Sharing a queue puts CNPs behind data packets no matter how the class is scheduled.",
        fix: "Give the CNP class its own `queue` (default: its priority), e.g. 6.",
        source: MECH,
    },
    RuleInfo {
        code: "ISO001",
        severity: Error,
        title: "RDMA shares a class or queue with other traffic",
        checks: "A class that carries `rdma` also carries `tcp`, `storage`, `management` or `other`, or shares its egress queue with a class that does.",
        why: "TCP fills queues up to its own loss signal, so RDMA in the same queue sees latency and ECN marks it did not cause, and a lossless queue shared with TCP makes TCP lossless too (see PFC002).",
        fix: "Put RDMA in its own class and queue (DSCP 26 -> priority 3) and everything else in others.",
        source: MECH,
    },
    RuleInfo {
        code: "ISO002",
        severity: Error,
        title: "General traffic lands in the RDMA class unannounced",
        checks: "With DSCP trust: the RDMA class lists DSCP 0, or it is the switch's default class (on priority 0, or first when no class is on priority 0) while some DSCP values are listed by no class. With PCP trust: the RDMA class is on priority 0. Whatever `carries` declares.",
        why: "Hosts send TCP, storage, management and monitoring traffic unmarked (DSCP 0, untagged) unless someone configures otherwise, and a switch classifies every DSCP no class lists into its default class. Either way that traffic rides the RDMA queue (and, when the class is lossless, becomes lossless itself): RoCE sees latency and marks it did not cause, and a slow TCP receiver pauses RoCE. ISO001 catches the mixing a class declares; this rule catches the mixing the DSCP map creates.",
        fix: "Keep the RDMA class to the RoCE DSCP (26 on NVIDIA and Broadcom NICs) on its own priority (3), and declare a class for general traffic on priority 0, which then receives DSCP 0 and every unlisted DSCP.",
        source: "RFC 2474 / RFC 4594: DSCP 0 (CS0) is the default, best-effort marking; NVIDIA NIC defaults (RoCE DSCP 26 -> priority 3); SONiC and Cumulus map unlisted DSCPs to the default traffic class 0. See [mechanisms.md](../mechanisms.md#qos-conventions-seen-in-the-field).",
    },
    RuleInfo {
        code: "HOST001",
        severity: Error,
        title: "Host and switch trust modes differ",
        checks: "A NIC profile's `qos.trust` differs from the switch's `qos.trust`.",
        why: "If the NIC classifies by PCP and the switch by DSCP (or the reverse), the priority the NIC pauses and the priority the switch pauses are decided by different fields: PFC frames name a priority the other side never used.",
        fix: "Use the same trust mode on both sides; DSCP trust is the norm for routed RoCEv2.",
        source: MECH,
    },
    RuleInfo {
        code: "HOST002",
        severity: Error,
        title: "Host and switch DSCP->priority maps differ",
        checks: "For a DSCP value that a switch class lists, the NIC profile's `dscp_to_priority` gives a different priority than the switch class.",
        why: "The NIC pauses and counts by its own mapping; if the switch puts the same packets on another priority, PFC from the switch pauses the wrong NIC queue and the RoCE queue never stops.",
        fix: "Make the NIC map match the switch classes (or leave `dscp_to_priority` out: it defaults to the switch's).",
        source: MECH,
    },
    RuleInfo {
        code: "HOST003",
        severity: Error,
        title: "Host and switch PFC priorities differ",
        checks: "A NIC profile's `pfc_priorities` is not the switch's set of PFC priorities.",
        why: "A switch pausing a priority the NIC does not honour drops on the NIC side; a NIC sending pauses on a priority the switch treats as lossy makes nothing lossless.",
        fix: "Enable PFC on exactly the same priorities on NICs (`mlnx_qos --pfc`) and switches, and fix the side that is wrong: the finding's hint says which. A switch priority that PFC002 flags (the default class, a class without RDMA) or that no class uses comes off the switches; it is not copied to the NICs.",
        source: MECH,
    },
    RuleInfo {
        code: "HOST004",
        severity: Error,
        title: "RoCE MTU does not fit the port MTU",
        checks: "A NIC's RoCE MTU plus 78 B of headers (Ethernet, IPv4, UDP, BTH, RETH, ICRC, FCS) exceeds the MTU of a port of the fabric.",
        why: "A RoCE packet larger than a port's MTU is dropped silently at that port; the QP retries and fails.",
        fix: "Raise the port MTU (jumbo 9216 is usual) or lower the NIC's RoCE MTU (4096 -> 2048 or 1024).",
        source: "RoCEv2 framing (InfiniBand Architecture Annex A17); jumbo-frame practice.",
    },
    RuleInfo {
        code: "HOST005",
        severity: Error,
        title: "ECN notification or reaction point off on the RoCE priority",
        checks: "The switch marks ECN on the RoCE class, but a NIC profile has its notification point (`ecn_np_priorities`) or reaction point (`ecn_rp_priorities`) off for the RoCE priority.",
        why: "Without the NP the receiving NIC never turns a CE mark into a CNP; without the RP the sender ignores CNPs. Either way DCQCN is off and PFC becomes the only brake.",
        fix: "Enable ECN NP and RP on the RoCE priority (`/sys/class/net/IF/ecn/roce_np/enable/3`, `roce_rp/enable/3`).",
        source: "NVIDIA DCQCN documentation (NP/RP per priority); see [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "HOST006",
        severity: Error,
        title: "NIC marks RoCE or CNP traffic into the wrong switch class",
        checks: "The NIC's `roce_dscp` is not classified into the RDMA class by the switch, its `cnp_dscp` is not classified into the CNP class, or its `cnp_priority` is not the CNP class's priority.",
        why: "A mismatch here lands RoCE data in the lossy default class (drops, go-back-N) or CNPs in a data queue (late feedback).",
        fix: "Align the NIC (`roce_dscp`, `cnp_dscp`, `cnp_priority`) with the switch classes, e.g. 26 / 48 / 6.",
        source: "NVIDIA NIC defaults: RoCE DSCP 26, CNP DSCP 48 priority 6; Broadcom Thor2 CNP priority 7. See [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "ECN001",
        severity: Warning,
        title: "ECN Kmin equals Kmax",
        checks: "A class's ECN thresholds have Kmin = Kmax (the loader already rejects Kmin > Kmax).",
        why: "With Kmin = Kmax marking jumps from 0 to 100 % at one queue depth: every flow is cut at once and the queue oscillates. DCQCN is designed around a probabilistic ramp between Kmin and Kmax.",
        fix: "Spread the thresholds, e.g. Kmax = 10 x Kmin (150 KB / 1.5 MB at 100G).",
        source: "DCQCN (Zhu et al., SIGCOMM 2015): RED-like marking between Kmin and Kmax.",
    },
    RuleInfo {
        code: "ECN002",
        severity: Warning,
        title: "ECN Pmax is 0",
        checks: "A class's ECN `pmax` is 0.",
        why: "With Pmax = 0 nothing is marked between Kmin and Kmax; marking starts only when the queue passes Kmax, usually after PFC has already paused the upstream port.",
        fix: "Use a marking probability in (0, 1]: 0.01-0.2 is common (SONiC 5 %, HPCC ns-3 0.2).",
        source: "DCQCN paper; SONiC and HPCC defaults in [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "ECN003",
        severity: Warning,
        title: "Kmax above what the dynamic threshold can give the queue",
        checks: "Kmax is above the largest length the egress queue can reach under the switch's dynamic threshold: alpha x S / (1 + alpha), with S the shared pool (buffer - headroom - reserves) and alpha the egress alpha of the class's pool (lossless or lossy).",
        why: "A queue that can never reach Kmax never marks at Pmax and beyond; the upper part of the ramp is configuration fiction, and often Kmin is unreachable too.",
        fix: "Lower Kmax below the limit, or raise the egress alpha of the pool.",
        source: "Choudhury-Hahne dynamic threshold: a single congested queue settles at alpha B / (1 + alpha). See [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "ECN004",
        severity: Warning,
        title: "Kmin below a few packets",
        checks: "Kmin is below 3 full RoCE packets (NIC RoCE MTU + 78 B headers, largest NIC).",
        why: "A queue of one or two packets is normal burstiness at line rate; marking there cuts rates of flows that are not congested and costs throughput.",
        fix: "Raise Kmin to at least a few packets; at 100G and above, tens to hundreds of KB.",
        source: "DCQCN paper (Kmin 5 KB with 1 KB packets at 40G); Cumulus 150 KB; Cisco 150 KB.",
    },
    RuleInfo {
        code: "ECN005",
        severity: Warning,
        title: "ECN thresholds do not scale with port speed",
        checks: "Switch ports of speeds at least 2x apart (e.g. 100G and 400G) carry the class, and the class uses the same Kmin and Kmax on both (no `ecn_per_speed` entry that differs).",
        why: "A threshold in bytes is a delay that depends on speed: 150 KB is 12 µs at 100G but 3 µs at 400G. Copied thresholds mark too early on fast ports or too late on slow ones.",
        fix: "Add `ecn_per_speed.\"400\" = { ... }` with thresholds scaled by the speed ratio (HPCC ns-3 scales Kmin/Kmax linearly with bandwidth).",
        source: "HPCC ns-3 run.py: Kmin = 100 KB x bw/25G, Kmax = 400 KB x bw/25G. See [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "ECN006",
        severity: Warning,
        title: "ECN marks too late to act before PFC",
        checks: "Kmax (or Kmin) is above the ingress XOFF point: the static `qos.pfc.xoff_bytes` if set, else the dynamic threshold of the ingress lossless pool alpha x S / (1 + alpha).",
        why: "ECN should slow senders before PFC stops the link; if the queue must grow past the pause point before marking is complete, PFC fires first on every incast.",
        fix: "Lower Kmax below the XOFF point, or raise XOFF (larger alpha of the ingress lossless pool).",
        source: "DCQCN design: ECN acts before PFC; SONiC/ns-3 MMU model in [mechanisms.md](../mechanisms.md#the-ns-3-reference-switch-buffer).",
    },
    RuleInfo {
        code: "ECN007",
        severity: Warning,
        title: "ECN ramp shorter than the port's bandwidth-delay product",
        checks: "For every switch port speed a class's ECN thresholds apply to (`ecn`, or the `ecn_per_speed` entry of that speed), the marking ramp Kmax - Kmin is compared with the port's bandwidth-delay product: speed x RTT, where the RTT is 20 µs, or the fabric's own propagation round trip over its longest up/down route (twice the longest cable of each tier, both ways) when that is longer. A ramp shorter than one BDP is reported once per class, at the speed where it is shortest.",
        why: "A sender slows down one round trip after the queue first crosses Kmin (the mark travels to the receiver, the CNP back, the NIC cuts its rate). Until then the excess keeps arriving: under a 2:1 incast the queue grows by one BDP in that round trip. A ramp narrower than that takes the queue from the first mark to 100 % marking before any sender has reacted, so every flow is cut at once, the way Kmin = Kmax does (ECN001): the rates collapse together, the link idles, and they climb back together. Byte thresholds written for a slower port are exactly this: the same ramp is a quarter of the round trips at 4x the speed (Cumulus' 150 KB / 1.5 MB is 5.4 BDP at 100G, 1.35 at 400G and 0.68 at 800G; the DCQCN paper's 5 KB / 200 KB for 40G is 2 BDP there and 0.2 at 400G).",
        fix: "Give the speed its own thresholds, e.g. at 400G `ecn_per_speed.\"400\" = { kmin_bytes = 150000, kmax_bytes = 3000000, pmax = 0.1 }` (Cisco's AI/ML blueprint for 400G: 150 KB / 3000 KB, 2.9 BDP). If ECN003 or ECN006 then says the buffer cannot hold that Kmax, the switch buffer is too small for the port speed at this RTT.",
        source: "Huawei CloudEngine, \"Configuring Static ECN\" (AI Fabric, support.huawei.com EDOC1100155250): size ECN from the expected RoCEv2 RTT (20 µs by default), BDP = RTT x interface bandwidth, upper threshold 2 to 3 BDP (25GE: 7 KB / 150-200 KB, 100GE: 7 KB / 500-750 KB). rocelab warns at half the low end of that range (a ramp of 1 BDP), the point below which the reaction cannot keep up. The DCQCN paper's 40G setting (Zhu et al., SIGCOMM 2015: Kmin 5 KB, Kmax 200 KB) is 2 BDP at its speed; HPCC's ns-3 scales Kmin/Kmax linearly with bandwidth. See [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "HDR001",
        severity: Error,
        title: "PFC headroom below what the cable and peer need",
        checks: "For every switch port and lossless priority, the configured `qos.pfc.headroom_bytes` is compared with the XOFF headroom the SONiC Mellanox model computes for that port: cable = 2 x length / 1.98e8 m/s x speed / 8 (bytes in flight both ways); peer = pause quanta of the speed (802.3 Annex 31B: 100G 394, 200G 453, 400G 905) x 64 B; prop = port MTU + cable + 2 x gearbox + MAC/PHY delay + peer; XOFF = ceil_1K(lossless MTU + prop x cell occupancy), with occupancy = cell/64 for cells above 128 B (144/64 = 2.25 on Spectrum: a 64 B packet fills a whole cell) and the lossless MTU the largest NIC RoCE MTU; XON = pipeline latency (18 KB). Reported once, for the worst port, when configured < XOFF on any port, with the count of short ports.",
        why: "After a PAUSE leaves, the bytes already on the cable, the bytes the peer sends while the PAUSE travels, and what the peer's MAC sends before it stops all land in headroom. Too little headroom means drops on a lossless priority: exactly what PFC exists to prevent, and on long cables it happens on the first incast.",
        fix: "Raise `headroom_bytes` to at least the computed value, or leave it out so rocelab sizes it per port.",
        source: "SONiC dynamically-headroom-calculation.md and buffer_headroom_mellanox.lua; 802.3 Annex 31B. Formula in `rocelab_model::presets::headroom`.",
    },
    RuleInfo {
        code: "HDR002",
        severity: Error,
        title: "Headroom and reserves exceed the switch buffer",
        checks: "On a switch, the sum over ports and lossless priorities of the headroom in force plus the private reserves (`reserve_bytes` per port and per used priority group and queue) exceeds `buffer_bytes`.",
        why: "The configuration cannot be programmed; a switch that accepts it anyway over-commits memory that PFC counts on.",
        fix: "Fewer lossless priorities, shorter cables, smaller reserves, or a switch with a larger buffer.",
        source: "SONiC buffer pool calculation (pool = buffer - headroom - reserves).",
    },
    RuleInfo {
        code: "HDR003",
        severity: Warning,
        title: "Headroom and reserves take most of the switch buffer",
        checks: "Headroom plus reserves take more than half of a switch's buffer.",
        why: "The shared pool is what absorbs bursts and what ECN thresholds and dynamic PFC thresholds are fractions of; with less than half left, the switch pauses early and often.",
        fix: "As for HDR002: fewer lossless priorities, shorter cables, or a larger buffer.",
        source: "SONiC buffer pool calculation; 50 % is rocelab's threshold.",
    },
    RuleInfo {
        code: "WDG001",
        severity: Warning,
        title: "PFC watchdog disabled",
        checks: "PFC is enabled on some priority and `qos.pfc_watchdog.enabled` is false.",
        why: "A NIC or switch that stops draining (firmware hang, deadlock) pauses its neighbours forever; the pause spreads. The watchdog detects a queue paused for the detection time and drops or forwards to break the storm.",
        fix: "Enable it: `[qos.pfc_watchdog] enabled = true` (SONiC defaults 200 ms detection and restoration).",
        source: "SONiC pfcwd defaults; Cumulus, Juniper and Cisco recommend it for RoCE. See [mechanisms.md](../mechanisms.md).",
    },
    RuleInfo {
        code: "NIC001",
        severity: Warning,
        title: "DCQCN parameters differ across NICs",
        checks: "NIC profiles used by hosts of one fabric differ in DCQCN variant or knobs (g, timers, byte counter, rate steps, minimum rate, CNP interval).",
        why: "Flows with different reaction and recovery rules do not converge to a fair share: the more aggressive profile takes the bandwidth and the gentler one keeps backing off.",
        fix: "Use one DCQCN configuration fleet-wide (`mlxconfig`/`mlnx_qos` in your provisioning).",
        source: "DCQCN fairness analysis (Zhu et al. 2015).",
    },
    RuleInfo {
        code: "NIC002",
        severity: Warning,
        title: "NIC firmware versions differ",
        checks: "NIC profiles used by hosts of one fabric declare different `firmware` versions.",
        why: "Congestion-control behaviour and defaults change between firmware releases; a mixed fleet behaves like NIC001 even with identical knobs, and is a classic cause of one slow rank in a collective.",
        fix: "Upgrade the fleet to one firmware version.",
        source: "Field practice (fleet-wide firmware baselines).",
    },
    RuleInfo {
        code: "NIC003",
        severity: Warning,
        title: "Lossless RoCE without congestion control",
        checks: "A NIC profile used by hosts has `congestion_control = \"none\"` while the fabric has a lossless priority.",
        why: "With PFC but no rate control, every incast is handled by pauses alone: congestion spreading, victim flows and deadlock risk.",
        fix: "Enable DCQCN (`congestion_control = \"dcqcn\"`).",
        source: MECH,
    },
    RuleInfo {
        code: "NIC004",
        severity: Warning,
        title: "NIC settings differ across the fleet",
        checks: "NIC profiles used by hosts of one fabric differ in a setting outside DCQCN and host QoS (which NIC001 and the HOST rules judge): congestion control (RoCE only), RoCE MTU, speed, the transport's ACK timeout and retry count, the per-QP window, the receive buffer and its XOFF point. Every difference is listed, against the first profile in use.",
        why: "A fleet is provisioned from one baseline; a profile that differs is a rollout that stopped half-way or a rack that was set up by hand. The effects are the ones a collective feels as one slow rank: NICs without congestion control take more than their share from those with it (the checklist's `firmware-mix` scenario measures it), a smaller RoCE MTU spends more bandwidth on headers, a different ACK timeout recovers from a loss at a different pace, and a NIC with a smaller receive buffer pauses its leaf earlier.",
        fix: "Apply one settings baseline to every NIC (mlxconfig, mlnx_qos and NCCL's IB variables in your provisioning), or disable this rule with the reason for a deliberate exception.",
        source: "Field practice (fleet-wide configuration baselines); the fairness argument of NIC001 (Zhu et al. 2015) for congestion control.",
    },
    RuleInfo {
        code: "NIC005",
        severity: Warning,
        title: "NIC profile assignment matches no host",
        checks: "A pattern of a `[[nic_assign]]` entry matches no host name of the fabric.",
        why: "The hosts it was written for (a rack on older firmware, a batch set up by hand) take the default profile instead, so the fabric file describes a fleet more uniform than the real one, and every rule and run that should see the difference (NIC001, NIC002, NIC004, the checklist's firmware-mix) sees none. Host names change when a topology is regenerated, which is how such patterns go stale.",
        fix: "Fix the pattern (`*` matches any run of characters, `?` one; `rocelab topo --format json` lists the host names), or remove it.",
        source: "rocelab (the assignment rules of docs/fabric-file.md).",
    },
    RuleInfo {
        code: "UET001",
        severity: Warning,
        title: "UET runs over a lossless (PFC) class",
        checks: "A NIC profile in use has `transport = \"uet\"` and the class its RDMA traffic takes is lossless (PFC enabled on its priority).",
        why: "The Ultra Ethernet transport is built for a lossy fabric: a switch that runs out of buffer trims the packet to its header, the receiver NACKs it and the sender resends only that packet. Under PFC the switch pauses instead, so trimming never happens, and packets sprayed over every path carry pauses (head-of-line blocking, and the deadlock risk of PFC) to every path at once.",
        fix: "Make the class lossy: `lossless = false` on its `[[qos.class]]` and its priority out of `[qos.pfc] priorities`. With the `[qos]` classes left at their defaults, rocelab resolves the RDMA class lossy for a UET fabric.",
        source: "UEC Specification 1.0 (Ultra Ethernet Consortium, June 2025): the transport's reliable unordered delivery with packet trimming targets best-effort Ethernet; link-level flow control is optional. See [uet.md](../uet.md).",
    },
    RuleInfo {
        code: "TOP001",
        severity: Warning,
        title: "Oversubscribed GPU-to-GPU tier",
        checks: "A switch tier has more capacity toward the hosts than toward the tier above (down:up > 1:1); the ratio of the worst switch is reported.",
        why: "Collective traffic (all-reduce, all-to-all) is uniform and sustained: an oversubscribed tier is a permanent bottleneck for it, not an occasional one, and it turns into PFC and ECN at the uplinks.",
        fix: "Add uplinks until down:up is 1:1 on tiers that carry GPU-to-GPU traffic, or disable this rule with a reason (e.g. a deliberate 1:7 pod-to-core tier).",
        source: "Rail-optimized designs (NVIDIA SuperPOD, Meta Llama 3) are 1:1 within a pod.",
    },
    RuleInfo {
        code: "TOP002",
        severity: Warning,
        title: "Asymmetric rail cabling",
        checks: "A leaf serves NICs of more than one rail; a NIC named `...nic<i>` sits on a rail other than i; or two NICs of one GPU node sit on the same rail.",
        why: "Rail-optimized collectives assume NIC i of every node reaches NIC i of every other node through one rail leaf; a miscabled NIC sends its rail's traffic through the spines (longer, contended paths) and slows the whole ring.",
        fix: "Recable so that NIC i of every node attaches to the rail-i leaf.",
        source: "NVIDIA DGX SuperPOD rail-optimized reference architecture.",
    },
    RuleInfo {
        code: "TOP003",
        severity: Warning,
        title: "ECMP hash does not include the UDP source port",
        checks: "`routing.ecmp_hash_fields` lacks `src-port` (and `dest-qpn`, which carries per-QP entropy of its own).",
        why: "RoCEv2 uses UDP destination port 4791 for everything; its entropy is the UDP source port, which NICs vary per QP. Without it all QPs between two NICs take one path and ECMP collisions pile up.",
        fix: "Hash on the 5-tuple: `ecmp_hash_fields = [\"src-ip\", \"dst-ip\", \"protocol\", \"src-port\", \"dst-port\"]`.",
        source: "RoCEv2 (IBTA Annex A17): UDP source port as flow entropy.",
    },
    RuleInfo {
        code: "TOP004",
        severity: Warning,
        title: "Dual-homed NICs on one plane: spines hash between the ToRs of a pair",
        checks: "A NIC is cabled to two or more switches (a dual-ToR), and a switch one hop above them has equal-cost next hops toward that NIC through more than one of them. The first such switch and NIC are reported.",
        why: "The spine picks the receiver's ToR by hash, once per flow, independently of the port the sender used: two flows for one NIC land on the same ToR half the time and share its single downlink while the NIC's other port idles. Alibaba measured this hash polarization in production and removed it by splitting the tier above the ToRs into two planes.",
        fix: "Put each port of a NIC on its own plane: `[topology.rail_optimized] planes = 2` with `dual_tor = true` (or, in an explicit topology, cable the ToRs carrying port 0 and those carrying port 1 to separate spine sets).",
        source: "Qian et al., 'Alibaba HPN: A Data Center Network for Large Language Model Training' (SIGCOMM 2024), section 5 (dual-plane); about 15 % training throughput reported.",
    },
    RuleInfo {
        code: "DLK001",
        severity: Error,
        title: "Cyclic buffer dependency on the lossless priority",
        checks: "The channel dependency graph of the lossless priority has a cycle: its nodes are directed switch-to-switch links, and an edge a->b means a lossless flow can enter a switch on a and leave on b under the routing the model computes (all ECMP next hops toward every host). Cycles are found with a depth-first search and reported with the switches and ports on them.",
        why: "A cycle of paused links can pause itself forever: every buffer on the cycle waits for the next one to drain (PFC deadlock). No amount of headroom helps; only the watchdog breaks it, by dropping.",
        fix: "Use a topology and routing without cyclic dependencies (up/down routing in a Clos), or take the priority of the traffic that closes the cycle out of PFC.",
        source: "Hu et al., 'Deadlocks in Datacenter Networks: Why Do They Form, and How to Avoid Them' (HotNets 2016); Dally & Seitz channel dependency graphs.",
    },
    RuleInfo {
        code: "DLK002",
        severity: Warning,
        title: "Cyclic buffer dependency after a single link failure",
        checks: "For every switch-to-switch link, shortest-path routing is recomputed with that link removed and the channel dependency graph is searched for a cycle. Reported with the number of failures that create one and examples.",
        why: "Failures create the non-minimal (down-up) routes that close cycles in an otherwise deadlock-free Clos; a fabric that deadlocks only after a cable fault fails on the worst day.",
        fix: "Keep routing up/down under failures (e.g. BGP with valley-free policies), add redundancy so failures do not force bounce paths, and keep the PFC watchdog on.",
        source: "Hu et al. (HotNets 2016): deadlocks from routing loops and bounce paths after failures.",
    },
    RuleInfo {
        code: "IBA001",
        severity: Error,
        title: "Service level mapped to a VL with no buffer",
        checks: "On an InfiniBand fabric, a class's service level (its `priority`) maps through `infiniband.sl_to_vl` to a VL at or above `data_vls`, a VL the ports do not operate.",
        why: "A receiver advertises credits only for the VLs it operates. A packet on any other VL never gets credits (a real port drops it as an invalid VL), so the traffic of that SL never arrives; in the twin it waits until the run stops for lack of progress.",
        fix: "Map the SL to an operated VL in `sl_to_vl`, or raise `data_vls`.",
        source: "IBTA InfiniBand Architecture Specification Vol. 1, ch. 7 (link layer: SL to VL mapping, operational VLs, credit-based flow control). See [infiniband.md](../infiniband.md).",
    },
    RuleInfo {
        code: "IBA002",
        severity: Error,
        title: "VL in use has no VL arbitration entry",
        checks: "On an InfiniBand fabric, a VL that some class's SL maps to appears with a weight above 0 in neither `vl_arb_high` nor `vl_arb_low`.",
        why: "The output port's VL arbiter serves only the VLs its two tables list; a VL with no entry (or only weight-0 entries) is never transmitted, and its credits and buffers hold everything behind it.",
        fix: "Add an entry for the VL, e.g. `{ vl = 1, weight = 64 }` to `vl_arb_low`.",
        source: "IBTA Vol. 1 §7.6.9 (VL arbitration: high- and low-priority tables of VL/weight entries, limit of high priority); OpenSM's `qos_vlarb_high`/`qos_vlarb_low` defaults. See [infiniband.md](../infiniband.md).",
    },
    RuleInfo {
        code: "IBA003",
        severity: Warning,
        title: "More data VLs than the hardware operates",
        checks: "`infiniband.data_vls` is above 8.",
        why: "The specification allows up to 15 data VLs, but the ports operate no more VLs than both ends support (the port's VLCap; 8 data VLs is rocelab's reference for NVIDIA ConnectX adapters and Quantum switches), and the subnet manager sets the lower value, so the fabric would not run what the file describes (and SLs mapped to VL8–VL14 have no VL).",
        fix: "Set `data_vls = 8` or fewer and map the SLs onto VL0–VL7.",
        source: "IBTA Vol. 1 ch. 7 (VLCap, OperationalVLs); a port's capability: `ibv_devinfo -v` (`max_vl_num`) or `ibportstate` (VLCap); OpenSM's `max_op_vls`. See [infiniband.md](../infiniband.md).",
    },
    RuleInfo {
        code: "IBA004",
        severity: Warning,
        title: "VL buffer smaller than a link's credit loop",
        checks: "`infiniband.vl_buffer_bytes` is smaller than the bytes one VL must have in flight on the longest credit loop of the fabric: the link's rate times the cable's round trip (5 ns/m each way), plus two maximum packets (MTU + 26 bytes of IB headers).",
        why: "A sender may only send against credits; credits come back one cable round trip after the receiver frees the buffer. With a smaller buffer a single VL stalls waiting for credits every round trip and cannot fill the link, which looks like a slow link with no drops and no congestion counters.",
        fix: "Raise `vl_buffer_bytes` to the figure the message gives, or shorten the cable (long-haul IB links use switches with deep buffers for this reason).",
        source: "IBTA Vol. 1 §7.9 (credit-based link-level flow control); the loop is the physics of the link. See [infiniband.md](../infiniband.md).",
    },
    RuleInfo {
        code: "IBA005",
        severity: Warning,
        title: "Unlimited high-priority VL arbitration can starve low-priority VLs",
        checks: "`limit_of_high_priority = 255` (unlimited) while a VL in use is in the high-priority table and another VL in use is only in the low-priority table.",
        why: "With no limit the high-priority table is served whenever it has a packet and credits; bulk traffic in it stops every low-priority VL for as long as it lasts.",
        fix: "Bound the high-priority table (the limit counts 4 KiB units; OpenSM's default is 0, one packet), or keep only small latency-critical traffic in it.",
        source: "IBTA Vol. 1 §7.6.9 (limit of high priority); OpenSM `qos_high_limit`. See [infiniband.md](../infiniband.md).",
    },
    RuleInfo {
        code: "LNT001",
        severity: Warning,
        title: "Unknown rule code in lint.disable",
        checks: "A `[[lint.disable]]` entry names a code that is not a rocelab lint rule.",
        why: "A typo in a disable entry silently disables nothing; the finding it meant to silence comes back, or worse, a later rule with that code would be disabled by accident.",
        fix: "Fix the code (see docs/lint.md) or remove the entry.",
        source: "rocelab.",
    },
    crate::rules::lb::LBL001,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/lint/CODE.md` must be what `page` renders; `ROCELAB_BLESS=1` rewrites them.
    #[test]
    fn docs_pages_are_current() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/lint");
        let bless = std::env::var_os("ROCELAB_BLESS").is_some();
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
        }
        for r in RULES {
            let path = dir.join(format!("{}.md", r.code));
            let want = page(r);
            if bless {
                std::fs::write(&path, &want).unwrap();
            }
            let have = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(have == want, "{} is stale: run `ROCELAB_BLESS=1 cargo test -p rocelab-lint`", path.display());
        }
    }

    #[test]
    fn the_overview_lists_every_rule() {
        let overview =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/lint.md"))
                .expect("docs/lint.md");
        for r in RULES {
            let row = format!("| [{code}](lint/{code}.md) | {} | {} |", r.severity, r.title, code = r.code);
            assert!(overview.contains(&row), "docs/lint.md lacks the row {row}");
        }
    }

    #[test]
    fn codes_are_unique_and_well_formed() {
        for (i, r) in RULES.iter().enumerate() {
            assert!(RULES[..i].iter().all(|o| o.code != r.code), "duplicate {}", r.code);
            let letters = r.code.trim_end_matches(|c: char| c.is_ascii_digit());
            assert!(letters.len() >= 3 && letters.chars().all(|c| c.is_ascii_uppercase()), "{}", r.code);
            assert_eq!(r.code.len() - letters.len(), 3, "{}", r.code);
            assert!(!r.title.ends_with('.'), "{}", r.code);
        }
        assert!(rule("pfc001").is_some());
        assert!(rule("XYZ999").is_none());
    }
}
