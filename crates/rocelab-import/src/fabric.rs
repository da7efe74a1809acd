//! The imported scenario, independent of its source format, and its rendering as a rocelab
//! fabric file.
//!
//! The fabric file is written by hand rather than serialized, so that every imported value sits
//! next to a comment naming the key or line it came from, and the notes (what rocelab does not
//! model) open the file. The text is checked by loading it: see the tests.

use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    pub is_switch: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// Indices into `Scenario::nodes`.
    pub a: usize,
    pub b: usize,
    pub speed_bps: u64,
    pub delay_ps: u64,
    /// Where it came from (`topology.txt:5`), written as a comment.
    pub origin: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub src: usize,
    pub dst: usize,
    pub size_bytes: u64,
    pub start_ps: u64,
    pub origin: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ecn {
    pub kmin_bytes: u64,
    pub kmax_bytes: u64,
    pub pmax: f64,
}

/// DCQCN knobs in `[nic.dcqcn]` units; `None` leaves the variant's default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dcqcn {
    pub g: Option<f64>,
    pub alpha_timer_us: Option<f64>,
    pub increase_timer_us: Option<f64>,
    pub byte_counter_bytes: Option<u64>,
    pub fast_recovery_steps: Option<u32>,
    pub rate_ai_mbps: Option<f64>,
    pub rate_hai_mbps: Option<f64>,
    pub min_rate_mbps: Option<f64>,
    pub rate_reduce_period_us: Option<f64>,
    pub initial_alpha: Option<f64>,
    pub clamp_target_rate: Option<bool>,
    pub cnp_interval_us: Option<f64>,
}

/// `[nic]` transport keys: each `(value, the source's own name for it)`; `None` leaves
/// rocelab's default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transport {
    pub ack_timeout: Option<(u8, String)>,
    pub window_bytes: Option<(u64, String)>,
    pub window_scales_with_rate: Option<(bool, String)>,
}

/// A congestion control other than DCQCN: `congestion_control = name` and its `[nic.<name>]`
/// table, each key with the source's own name for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcTable {
    pub name: &'static str,
    /// Why this algorithm (the source's setting), written beside `congestion_control`.
    pub origin: String,
    pub items: Vec<(&'static str, String, String)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub at_ps: u64,
    pub a: usize,
    pub b: usize,
    pub origin: String,
}

/// Switch buffer settings of an ns-3 import: the `ns3-reference` MMU preset.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns3Switch {
    pub buffer_bytes: u64,
    /// HPCC's per-port headroom, 3 · rate · link delay (the largest over switch ports).
    pub headroom_bytes: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// The input files, named in the header comment.
    pub sources: Vec<String>,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    pub ns3_switch: Option<Ns3Switch>,
    /// RoCE payload per packet (`nic.mtu`).
    pub mtu: Option<u32>,
    /// Whether the NIC runs DCQCN (`false`: `congestion_control = "none"`).
    pub dcqcn_on: bool,
    pub dcqcn: Dcqcn,
    /// Transport settings written to `[nic]`.
    pub transport: Transport,
    /// Another congestion control instead of DCQCN (`dcqcn_on` is then false).
    pub cc_table: Option<CcTable>,
    /// `[simulation] header_overhead` and why (`None`: the real wire's, rocelab's default).
    pub header_overhead: Option<(&'static str, String)>,
    /// ECN thresholds by port speed (bit/s) on the lossless RoCE class; `None`: no marking.
    pub ecn_by_speed: Option<BTreeMap<u64, Ecn>>,
    pub duration_us: Option<f64>,
    pub seed: u64,
    pub faults: Vec<Fault>,
    /// What the import could not carry over exactly; written at the top of the fabric file.
    pub notes: Vec<String>,
}

impl Scenario {
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
}

/// A float as TOML: always with a decimal point or exponent, never `NaN`.
fn f(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

fn gbps(bps: u64) -> f64 {
    bps as f64 / 1e9
}

/// The comments that tie generated settings to the source simulator's own names, so an htsim
/// import does not cite ns-3 keys.
pub struct Dialect {
    /// Above the RoCE class.
    pub classes: &'static str,
    /// On the RoCE class when it has no ECN marking.
    pub no_ecn: &'static str,
    /// Above the ECN thresholds when there are some.
    pub ecn_source: &'static str,
    /// After `congestion_control = "none"`.
    pub no_cc: &'static str,
    /// `[qos.pfc_watchdog] enabled = false` with this comment, when the simulator has none
    /// (the ns-3 switch preset writes its own).
    pub no_watchdog: Option<&'static str>,
}

/// HPCC's ns-3 (config keys as in `mix/config.txt`).
pub const NS3: Dialect = Dialect {
    classes: "# ns-3 priority 3 -> the lossless RoCE class; CNPs strict on priority 6.",
    no_ecn: "# No ECN marking (ENABLE_QCN 0).",
    ecn_source: "# KMIN_MAP / KMAX_MAP / PMAX_MAP, per port speed in Gb/s (KB = 1000 B).",
    no_cc: "",
    no_watchdog: None,
};

/// Renders the scenario as a commented fabric file, with ns-3's names in the comments.
pub fn to_toml(s: &Scenario) -> String {
    to_toml_with(s, &NS3)
}

/// Renders the scenario as a commented fabric file, the comments in `d`'s words.
pub fn to_toml_with(s: &Scenario, d: &Dialect) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Imported by `rocelab import` from:");
    for src in &s.sources {
        let _ = writeln!(o, "#   {src}");
    }
    let _ = writeln!(o, "# Every value below names its source; docs/import.md documents the mapping.");
    if s.notes.is_empty() {
        let _ = writeln!(o, "#\n# Notes: none; every input key was mapped.");
    } else {
        let _ = writeln!(o, "#\n# Notes (what rocelab does differently from the source simulator):");
        for n in &s.notes {
            let _ = writeln!(o, "#   - {}", n.replace('\n', " "));
        }
    }
    let _ = writeln!(o, "\n[fabric]\nname = {}\ndescription = {}", quote(&s.name), quote(&s.description));

    // Switch model.
    if let Some(sw) = &s.ns3_switch {
        let _ = writeln!(
            o,
            "\n# HPCC's switch MMU: α = 1/8, 4 KB reserve, 3 KB resume offset; BUFFER_SIZE is in MiB.\n\
             [switch_models.ns3]\npreset = \"ns3-reference\"\nbuffer_bytes = {}",
            sw.buffer_bytes
        );
    }

    // QoS: the three default classes, with the imported ECN thresholds on the RoCE class.
    let _ = writeln!(o, "\n{}", d.classes);
    let _ = writeln!(
        o,
        "[[qos.class]]\nname = \"roce\"\ndscp = [26]\npriority = 3\nlossless = true\nweight = 50\ncarries = [\"rdma\"]"
    );
    match &s.ecn_by_speed {
        Some(map) if !map.is_empty() => {
            // The default (for speeds not listed) is the entry of the fastest speed.
            if let Some(e) = map.values().last() {
                let _ = writeln!(o, "ecn = {}", ecn(e));
            }
            let _ = writeln!(o, "{}", d.ecn_source);
            for (bps, e) in map {
                let _ = writeln!(o, "ecn_per_speed.\"{}\" = {}", gbps(*bps), ecn(e));
            }
        }
        Some(_) => {}
        None => {
            let _ = writeln!(o, "{}", d.no_ecn);
        }
    }
    let _ = writeln!(
        o,
        "\n[[qos.class]]\nname = \"cnp\"\ndscp = [48]\npriority = 6\nscheduler = \"strict\"\nweight = 0\ncarries = [\"cnp\"]"
    );
    let dscps: Vec<String> = (0..64).filter(|d| *d != 26 && *d != 48).map(|d: u32| d.to_string()).collect();
    let _ = writeln!(
        o,
        "\n[[qos.class]]\nname = \"default\"\ndscp = [{}]\npriority = 0\nweight = 50\ncarries = [\"tcp\", \"storage\", \"management\"]",
        dscps.join(", ")
    );
    if let Some(sw) = &s.ns3_switch {
        let _ = writeln!(
            o,
            "\n# HPCC sizes headroom per port as 3 · rate · link delay.\n[qos.pfc]\nheadroom_bytes = {}\n\n\
             # ns-3 has no PFC watchdog.\n[qos.pfc_watchdog]\nenabled = false",
            sw.headroom_bytes
        );
    } else if let Some(c) = d.no_watchdog {
        let _ = writeln!(o, "\n{c}\n[qos.pfc_watchdog]\nenabled = false");
    }

    // NIC.
    let _ = writeln!(o, "\n[nic]");
    if let Some(m) = s.mtu {
        let _ = writeln!(o, "mtu = {m}  # PACKET_PAYLOAD_SIZE");
    }
    if let Some(c) = &s.cc_table {
        let _ = writeln!(o, "congestion_control = \"{}\"  # {}", c.name, c.origin);
    } else if s.dcqcn_on {
        let _ = writeln!(o, "congestion_control = \"dcqcn\"");
    } else if d.no_cc.is_empty() {
        let _ = writeln!(o, "congestion_control = \"none\"");
    } else {
        let _ = writeln!(o, "congestion_control = \"none\"  {}", d.no_cc);
    }
    let t = &s.transport;
    if let Some((v, why)) = &t.ack_timeout {
        let _ = writeln!(o, "ack_timeout = {v}  # {why}");
    }
    if let Some((v, why)) = &t.window_bytes {
        let _ = writeln!(o, "window_bytes = {v}  # {why}");
    }
    if let Some((v, why)) = &t.window_scales_with_rate {
        let _ = writeln!(o, "window_scales_with_rate = {v}  # {why}");
    }
    if s.dcqcn_on {
        let d = &s.dcqcn;
        let _ = writeln!(o, "\n# HPCC's DCQCN is its Mellanox (mlx5) model.\n[nic.dcqcn]\nvariant = \"mlx5\"");
        let items: [(&str, Option<String>, &str); 12] = [
            ("g", d.g.map(f), "EWMA_GAIN"),
            ("alpha_timer_us", d.alpha_timer_us.map(f), "ALPHA_RESUME_INTERVAL"),
            ("rate_reduce_period_us", d.rate_reduce_period_us.map(f), "RATE_DECREASE_INTERVAL"),
            ("increase_timer_us", d.increase_timer_us.map(f), "RP_TIMER"),
            ("fast_recovery_steps", d.fast_recovery_steps.map(|v| v.to_string()), "FAST_RECOVERY_TIMES"),
            ("rate_ai_mbps", d.rate_ai_mbps.map(f), "RATE_AI"),
            ("rate_hai_mbps", d.rate_hai_mbps.map(f), "RATE_HAI"),
            ("min_rate_mbps", d.min_rate_mbps.map(f), "MIN_RATE"),
            ("clamp_target_rate", d.clamp_target_rate.map(|v| v.to_string()), "CLAMP_TARGET_RATE"),
            ("byte_counter_bytes", d.byte_counter_bytes.map(|v| v.to_string()), "HPCC has no byte counter"),
            ("initial_alpha", d.initial_alpha.map(f), "HPCC starts α at 1"),
            ("cnp_interval_us", d.cnp_interval_us.map(f), "one CNP per α update period (HPCC echoes ECN on every ACK)"),
        ];
        for (k, v, src) in items {
            if let Some(v) = v {
                let _ = writeln!(o, "{k} = {v}  # {src}");
            }
        }
    }

    if let Some(c) = &s.cc_table {
        let _ = writeln!(o, "\n[nic.{}]", c.name);
        for (k, v, src) in &c.items {
            let _ = writeln!(o, "{k} = {v}  # {src}");
        }
    }

    let _ = writeln!(o, "\n[simulation]\nseed = {}", s.seed);
    if let Some((v, why)) = &s.header_overhead {
        let _ = writeln!(o, "header_overhead = \"{v}\"  # {why}");
    }
    if let Some(d) = s.duration_us {
        let _ = writeln!(o, "duration_us = {}  # SIMULATOR_STOP_TIME", f(d));
    }

    // Topology.
    let _ = writeln!(o, "\n[topology.explicit]");
    let _ = writeln!(o, "node = [");
    for n in &s.nodes {
        if n.is_switch {
            let model = if s.ns3_switch.is_some() { ", model = \"ns3\"" } else { "" };
            let _ = writeln!(o, "  {{ name = {}, kind = \"switch\"{model} }},", quote(&n.name));
        } else {
            let _ = writeln!(o, "  {{ name = {}, kind = \"host\" }},", quote(&n.name));
        }
    }
    let _ = writeln!(o, "]");
    let _ = writeln!(o, "link = [");
    for l in &s.links {
        let _ = writeln!(
            o,
            "  {{ a = {}, b = {}, speed_gbps = {}, delay_ns = {} }},  # {}",
            quote(&s.nodes[l.a].name),
            quote(&s.nodes[l.b].name),
            f(gbps(l.speed_bps)),
            f(l.delay_ps as f64 / 1000.0),
            l.origin
        );
    }
    let _ = writeln!(o, "]");

    for fl in &s.faults {
        let _ = writeln!(
            o,
            "\n[[fault]]  # {}\nkind = \"link-down\"\nat_us = {}\na = {}\nb = {}",
            fl.origin,
            f(fl.at_ps as f64 / 1e6),
            quote(&s.nodes[fl.a].name),
            quote(&s.nodes[fl.b].name)
        );
    }

    let _ = writeln!(o, "\n# Traffic: one flow per input line, in input order (flow i of the report = line i).");
    for fl in &s.flows {
        let _ = writeln!(
            o,
            "\n[[traffic]]  # {}\npattern = \"flow\"\nsrc = {}\ndst = {}\nsize_bytes = {}\nstart_us = {}\nclass = \"roce\"",
            fl.origin,
            quote(&s.nodes[fl.src].name),
            quote(&s.nodes[fl.dst].name),
            fl.size_bytes,
            f(fl.start_ps as f64 / 1e6)
        );
    }
    o
}

fn ecn(e: &Ecn) -> String {
    format!("{{ kmin_bytes = {}, kmax_bytes = {}, pmax = {} }}", e.kmin_bytes, e.kmax_bytes, f(e.pmax))
}

/// A TOML basic string.
pub fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}
