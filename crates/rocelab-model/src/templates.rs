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
