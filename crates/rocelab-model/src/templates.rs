//! Starter fabric files for `rocelab init`; they are the shipped examples, so the tests that
//! load every example also prove that every template loads.

pub struct Template {
    pub name: &'static str,
    pub about: &'static str,
    pub text: &'static str,
}

pub const TEMPLATES: &[Template] = &[
    Template {
        name: "rail-optimized",
        about: "128 GPUs, 8 rails, 400G, every QoS and NIC key written out (the default)",
        text: include_str!("../../../examples/rail-128gpu.toml"),
    },
    Template {
        name: "leaf-spine",
        about: "4 leaves x 8 hosts at 100G, 2 spines, 2:1 oversubscribed",
        text: include_str!("../../../examples/leaf-spine-small.toml"),
    },
    Template {
        name: "rail-1024",
        about: "1,024 GPUs in 4 scalable units, 32 spines, full bisection",
        text: include_str!("../../../examples/rail-1024gpu.toml"),
    },
];

pub fn template(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.name == name)
}

/// The pre-production checklist `rocelab init` appends to every template, commented out (so
/// the shipped examples, and every figure shown for them, stay as they are). Uncomment a block
/// and run `rocelab simulate FILE --scenario NAME`; `rocelab scenarios --list` gives every
/// parameter and its default, docs/scenarios.md what each measures.
pub const CHECKLIST: &str = r#"
# --- Pre-production checklist: stress scenarios --------------------------------------------
# Each [[scenario]] is a named building block; `rocelab simulate FILE --scenario NAME` runs
# one (a bare kind, e.g. `--scenario incast`, runs with defaults scaled to this fabric).
# Parameters left out take those defaults: `rocelab scenarios --list`, docs/scenarios.md.
#
# [[scenario]]
# kind = "sustained"              # permutation at line rate: goodput_fraction
# name = "line-rate"
# duration_us = 200
#
# [[scenario]]
# kind = "incast"                 # N:1, completion vs N*size/bandwidth
# name = "incast"
# fan_in = 16
# size_bytes = 1000000
#
# [[scenario]]
# kind = "microburst"             # synchronized bursts: PFC pauses, deepest queue
# name = "bursts"
# duty_cycle = 0.25
#
# [[scenario]]
# kind = "slow-receiver"          # a host stops draining: how far pauses spread
# name = "pfc-storm"
# watchdog = true
# watchdog_detection_us = 100
#
# [[scenario]]
# kind = "switch-reboot"          # the busiest spine reboots under load
# name = "spine-reboot"
# a = "busiest-spine"
#
# [[scenario]]
# kind = "link-flap"              # a leaf-spine link flaps under load
# name = "flap"
# count = 3
#
# [[scenario]]
# kind = "routing-change"         # new ECMP seed: flows move, nothing drops
# name = "reseed"
# change = "hash-seed"
#
# [[scenario]]
# kind = "firmware-mix"           # a quarter of the NICs with congestion control off
# name = "half-rollout"
# share = 0.25
# congestion_control = "none"
#
# [[scenario]]
# kind = "mixed"                  # TCP-like (DCTCP) in a lossy class beside RDMA
# name = "tcp-beside-rdma"
# shared_class = false            # true: the misconfiguration, TCP in RDMA's class
#
# [[scenario]]
# kind = "collective"             # the real load: an NCCL-like all-reduce
# name = "allreduce"
# op = "all_reduce"
# size_bytes = 67108864
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// Uncommented, the checklist is a valid part of every template.
    #[test]
    fn the_checklist_uncommented_loads_with_every_template() {
        let blocks: String = CHECKLIST
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(blocks.matches("[[scenario]]").count(), 10);
        for t in TEMPLATES {
            let text = format!("{}{}", t.text, blocks);
            let m = crate::load_str(t.name, &text).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            assert_eq!(m.config.scenario.len(), 10);
        }
    }
}
