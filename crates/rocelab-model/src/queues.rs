//! The switches' egress queues as the engines run them, resolved once at load from the QoS
//! classes and the link layer: which priority and queue each class's packets take, which
//! queues are strict and in what order, each DWRR queue's quantum, which priorities pause a
//! queue, and a queue's ECN thresholds on a port of a given speed.
//!
//! Where several classes share a queue, the first one in the file decides its scheduler,
//! weight and ECN (the load refuses two classes on one queue that disagree, so this only
//! fixes the order of an otherwise consistent file).

use crate::config::{EcnConfig, SchedulerKind};
use crate::infiniband::Ib;
use crate::model::Qos;

/// DWRR credit per unit of weight, in bytes: weights 1..=100 give quanta of 256 B to 25.6 kB,
/// so one round lets every backlogged queue send at least one small frame and the byte shares
/// follow the weights.
pub const DWRR_QUANTUM_BYTES_PER_WEIGHT: i64 = 256;

/// Where one class's packets go at a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassQueue {
    /// The priority it is paused and accounted by: its 802.1p priority on RoCE, its VL on
    /// InfiniBand (the VL its SL maps to).
    pub prio: u8,
    /// Its egress queue (the VL on InfiniBand).
    pub queue: u8,
    /// PFC protects it (never on InfiniBand, where credits do).
    pub lossless: bool,
}

/// Every per-queue property of the fabric's egress ports (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Queues {
    /// By class index (as `Qos::classes`).
    pub classes: Vec<ClassQueue>,
    /// Strict-priority queues, the highest priority first (equal priorities by queue).
    pub strict: Vec<u8>,
    /// DWRR queues, by queue number.
    pub dwrr: Vec<u8>,
    /// A DWRR queue's credit per round, in bytes (`weight × DWRR_QUANTUM_BYTES_PER_WEIGHT`).
    pub quantum_bytes: [i64; 8],
    /// Per queue, bit p set: priority p is mapped to it (a PFC pause of p stops the queue).
    pub prio_mask: [u8; 8],
    /// ECN/RED marking happens at all (not on InfiniBand, which marks FECN by its own
    /// threshold).
    ecn_marks: bool,
}

impl Queues {
    /// The queues of `qos`'s classes on a RoCE fabric, or on InfiniBand (`ib`).
    pub fn resolve(qos: &Qos, ib: Option<&Ib>) -> Queues {
        let classes = qos
            .classes
            .iter()
            .map(|c| match ib {
                // A class's priority is its service level; its packets go on the VL the SL
                // maps to, in that VL's queue, with no pause (credits instead).
                Some(ib) => {
                    let vl = ib.vl_of_sl(c.priority);
                    ClassQueue { prio: vl, queue: vl, lossless: false }
                }
                None => ClassQueue { prio: c.priority, queue: c.queue, lossless: qos.pfc_enabled(c.priority) },
            })
            .collect();
        // The first class mapped to a queue decides strict/weight; a queue is paused when any
        // priority mapped to it is paused.
        let mut first = [None::<(bool, u32, u8)>; 8];
        let mut prio_mask = [0u8; 8];
        for c in &qos.classes {
            let q = c.queue as usize & 7;
            prio_mask[q] |= 1 << (c.priority & 7);
            if first[q].is_none() {
                first[q] = Some((c.scheduler == SchedulerKind::Strict, c.weight.max(1), c.priority));
            }
        }
        let mut strict: Vec<(u8, u8)> = Vec::new();
        let mut dwrr = Vec::new();
        let mut quantum_bytes = [0i64; 8];
        for (q, s) in first.iter().enumerate() {
            match s {
                Some((true, _, prio)) => strict.push((*prio, q as u8)),
                Some((false, w, _)) => {
                    dwrr.push(q as u8);
                    quantum_bytes[q] = *w as i64 * DWRR_QUANTUM_BYTES_PER_WEIGHT;
                }
                None => {}
            }
        }
        strict.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        Queues {
            classes,
            strict: strict.into_iter().map(|x| x.1).collect(),
            dwrr,
            quantum_bytes,
            prio_mask,
            ecn_marks: ib.is_none(),
        }
    }

    /// Each queue's RED/ECN thresholds on a port of `speed_gbps`: those of the first class
    /// mapped to the queue that marks at this speed (`ecn_per_speed`, else its `ecn`).
    pub fn ecn_at(&self, qos: &Qos, speed_gbps: f64) -> [Option<EcnConfig>; 8] {
        let mut ecn = [None; 8];
        for c in qos.classes.iter().filter(|_| self.ecn_marks) {
            let q = c.queue as usize & 7;
            if ecn[q].is_none() {
                ecn[q] = c.ecn_for_speed(speed_gbps);
            }
        }
        ecn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qos_of(classes: &str) -> crate::Model {
        let text = format!(
            r#"[fabric]
name = "q"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {{ name = "h0", kind = "host" }}, {{ name = "h1", kind = "host" }} ]
link = [ {{ a = "h0", b = "sw0", speed_gbps = 100 }}, {{ a = "h1", b = "sw0", speed_gbps = 400 }} ]
{classes}
"#
        );
        crate::load_str("q.toml", &text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn strict_queues_go_highest_priority_first_and_quanta_follow_the_weights() {
        let m = qos_of(
            r#"[[qos.class]]
name = "low"
dscp = [0]
priority = 0
queue = 1
scheduler = "dwrr"
weight = 1
[[qos.class]]
name = "rdma"
dscp = [26]
priority = 3
queue = 3
lossless = true
scheduler = "dwrr"
weight = 3
carries = ["rdma"]
ecn = { kmin_bytes = 100000, kmax_bytes = 400000, pmax = 0.2 }
[[qos.class]]
name = "cnp"
dscp = [48]
priority = 6
queue = 6
scheduler = "strict"
[[qos.class]]
name = "ctrl"
dscp = [56]
priority = 7
queue = 7
scheduler = "strict"
"#,
        );
        let q = &m.queues;
        assert_eq!(q.strict, vec![7, 6]);
        assert_eq!(q.dwrr, vec![1, 3]);
        // Weight × 256 B.
        assert_eq!(q.quantum_bytes[1], 256);
        assert_eq!(q.quantum_bytes[3], 768);
        assert_eq!(q.prio_mask[3], 1 << 3);
        assert_eq!(q.classes[1], ClassQueue { prio: 3, queue: 3, lossless: true });
        assert!(!q.classes[0].lossless);
        let ecn = q.ecn_at(&m.qos, 100.0);
        assert_eq!(ecn[3].map(|e| (e.kmin_bytes, e.kmax_bytes)), Some((100_000, 400_000)));
        assert!(ecn[1].is_none() && ecn[7].is_none());
    }
}
