//! Load balancing against the receiving NICs: per-packet modes (`[routing] load_balancing =
//! "adaptive"` or `"spray"`) reorder a QP's packets, which an RC receiver without
//! out-of-order placement takes for losses (LBL001).

use crate::registry::RuleInfo;
use crate::Severity::Error;
use crate::{Ctx, Findings};
use rocelab_model::lb::ooo_window;

pub const LBL001: RuleInfo = RuleInfo {
    code: "LBL001",
    severity: Error,
    title: "Per-packet load balancing to NICs without out-of-order placement",
    checks: "`routing.load_balancing` is `adaptive` or `spray` (a member chosen per packet) and a NIC profile sets `ooo_window_packets = 0`, so its RC receiver takes every reordered packet for a loss; the message says whether the RDMA class is lossless.",
    why: "A packet that overtakes another makes an in-order RoCE receiver send a NAK and the sender go back N: it resends everything from the gap, so spraying a flow over equal paths multiplies its traffic instead of spreading it. On a lossless class the resent copies also queue behind PFC, so the fabric carries more and pauses more while the goodput drops. In the twin's 1:1 two-tier permutation this turned a reordering-free line-rate run into about 2,300 NAKs and three times the messages' packets resent.",
    fix: "Enable out-of-order placement on the NICs (ConnectX-5 and later place RC packets out of order for adaptive routing): leave `ooo_window_packets` out (1024 under per-packet modes) or set a window; or balance per flow (`load_balancing = \"ecmp\"`, or `\"flowlet\"` whose gap exceeds the path-delay difference).",
    source: "NVIDIA MLNX_OFED/DOCA documentation, 'Out-of-Order (OOO) Data Placement' (ConnectX-5 and above, RC/XRC/DC); NVIDIA Spectrum-X whitepaper (RoCE adaptive routing relies on the NIC reordering); IBTA InfiniBand Architecture Specification Vol. 1, chapter 9 (an RC responder answers a PSN sequence error with a NAK).",
};

pub fn check(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    let lb = m.config.routing.load_balancing;
    if !lb.per_packet() {
        return;
    }
    let lossless = m.qos.classes[m.qos.rdma_class()].lossless;
    for p in &m.nics {
        if ooo_window(p.ooo_window_packets, lb) == 0 {
            out.emit(
                "LBL001",
                format!("{}.ooo_window_packets", p.path),
                format!(
                    "`load_balancing = \"{}\"` reorders packets, but NIC profile `{}` does not place them out of order: every reordering is a NAK and go-back-N{}",
                    lb.name(),
                    p.name,
                    if lossless { " on the lossless RDMA class" } else { "" }
                ),
                "leave `ooo_window_packets` out (1024 under per-packet modes), or balance per flow",
            );
        }
    }
}
