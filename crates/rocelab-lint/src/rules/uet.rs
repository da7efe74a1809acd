//! The Ultra Ethernet transport's mistakes (UET001): UET over a lossless class.

use crate::{Ctx, Findings};
use rocelab_model::uet::Transport;

pub fn check(cx: &Ctx, out: &mut Findings) {
    let q = &cx.model.qos;
    let rdma = &q.classes[q.rdma_class()];
    if !q.pfc_enabled(rdma.priority) {
        return;
    }
    for nic in super::used_nics(cx).into_iter().filter(|n| n.transport == Transport::Uet) {
        out.emit(
            "UET001",
            format!("{}.transport", nic.path),
            format!(
                "NIC profile `{}` runs UET over class `{}`, which PFC protects (priority {}): switches pause it instead of trimming, so trimming and selective retransmission never act and its sprayed packets spread pauses over every path",
                nic.name, rdma.name, rdma.priority
            ),
            format!(
                "run UET lossy: `lossless = false` on class `{}` (and priority {} out of `[qos.pfc] priorities`), or leave `[[qos.class]]` out: on the defaults rocelab resolves the RDMA class lossy for UET",
                rdma.name, rdma.priority
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::{lint, Options};

    fn fabric(qos: &str) -> String {
        format!(
            r#"[fabric]
name = "uet"
[topology.leaf_spine]
leaves = 2
spines = 2
hosts_per_leaf = 2
host_link = {{ speed_gbps = 400, length_m = 3 }}
fabric_link = {{ speed_gbps = 400, length_m = 30 }}
[nic]
transport = "uet"
{qos}"#
        )
    }

    fn uet001(text: &str) -> Vec<(String, usize)> {
        let m = rocelab_model::load_str("u.toml", text).unwrap_or_else(|e| panic!("{e}"));
        let r = lint(&m, "u.toml", text, &Options::default());
        r.findings.iter().filter(|f| f.code == "UET001").map(|f| (f.path.clone(), f.line)).collect()
    }

    #[test]
    fn uet_over_a_lossless_class_is_flagged_at_its_transport_key_and_the_defaults_are_not() {
        // Defaults: the loader resolves the RDMA class lossy for UET.
        assert!(uet001(&fabric("")).is_empty());
        // PFC written on the RDMA class's priority: flagged where `transport` is set (line 10).
        let lossless = fabric("[qos.pfc]\npriorities = [3]\n");
        assert_eq!(uet001(&lossless), vec![("nic.transport".to_string(), 10)]);
    }
}
