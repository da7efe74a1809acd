//! htsim connection matrices (`.cm`) and the network they run on.
//!
//! A `.cm` file (htsim's `datacenter/connection_matrix.cpp`) has header lines `Nodes N` and
//! `Connections C` (optionally `Triggers T`, `Failures F`), then one line per connection:
//! `src->dst [id K] start T size S [prio P]`, T in µs (htsim's RoCE source converts it with
//! `timeFromUs`), S in bytes. Triggers (`trigger K`, `send_done_trigger K`,
//! `recv_done_trigger K`, `trigger id ...` lines) start flows when others finish; rocelab has no
//! such dependency yet, so they are refused with the line named, as are `failure` lines and
//! size 0 (an endless flow).
//!
//! The `.cm` file names hosts only; the network comes from `--nodes N --linkspeed MBPS` (and
//! `--tiers 1|2|3`, `--link-delay-ns`): tiers 3 builds the k-ary fat tree htsim uses by default
//! (the smallest even k with k³/4 ≥ N; host i under ToR i/(k/2)), tiers 2 its leaf-spine (K
//! ToRs of K/2 hosts, K/2 spines), tiers 1 one switch.
//!
//! Settings follow what htsim's RoCE experiments run (`datacenter/main_roce.cpp`): switch queues
//! are `LosslessInputQueue`s (PFC on, the default `-queue_type lossless_input`), nothing marks
//! ECN, and the sender (`RoceSrc`) has no congestion control, so the fabric file gets PFC on
//! the RoCE class, no ECN thresholds and `congestion_control = "none"`. htsim pauses at 15 and
//! resumes at 12 packets of input queue (`-pfc_thresholds`) and has no PFC watchdog; rocelab
//! keeps its own headroom and dynamic threshold (noted) and turns the watchdog off.

use crate::fabric::{Dialect, FlowSpec, LinkSpec, NodeSpec, Scenario};
use crate::{read_text, ImportError};
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    pub src: u32,
    pub dst: u32,
    pub id: Option<u64>,
    pub start_us: f64,
    pub size: u64,
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionMatrix {
    pub nodes: u32,
    pub connections: Vec<Connection>,
    /// `prio` values seen (rocelab carries every flow in its RoCE class).
    pub priorities_ignored: usize,
}

fn num<T: std::str::FromStr>(file: &str, line: usize, tok: Option<&str>, what: &str) -> Result<T, ImportError> {
    let t = tok.ok_or_else(|| {
        ImportError::at(file, line, format!("{what} is missing"), format!("write {what} after its keyword"))
    })?;
    t.parse::<T>().map_err(|_| {
        ImportError::at(file, line, format!("`{t}` is not a valid {what}"), format!("write {what} as a number"))
    })
}

pub fn parse_cm(file: &str, text: &str) -> Result<ConnectionMatrix, ImportError> {
    let mut nodes: Option<u32> = None;
    let mut declared: Option<usize> = None;
    let mut conns = Vec::new();
    let mut prio = 0;
    let mut last_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        last_line = line;
        let toks: Vec<&str> = raw.split_whitespace().collect();
        let Some(&first) = toks.first() else { continue };
        if first.starts_with('#') {
            continue;
        }
        match first {
            "Nodes" => {
                let n: u32 = num(file, line, toks.get(1).copied(), "node count")?;
                if n == 0 || n > 1_000_000 {
                    return Err(ImportError::at(file, line, format!("Nodes {n}"), "a node count from 1 to 1000000"));
                }
                nodes = Some(n);
            }
            "Connections" => declared = Some(num(file, line, toks.get(1).copied(), "connection count")?),
            "Triggers" | "Failures" => {
                let n: u64 = num(file, line, toks.get(1).copied(), "count")?;
                if n > 0 {
                    return Err(refuse(file, line, &format!("{first} {n}")));
                }
            }
            "trigger" | "failure" => return Err(refuse(file, line, &format!("a `{first}` line"))),
            t if t.contains("->") => {
                let Some(n) = nodes else {
                    return Err(ImportError::at(
                        file,
                        line,
                        "a connection before the `Nodes N` header",
                        "start the file with `Nodes N` and `Connections C`",
                    ));
                };
                let (s, d) = t.split_once("->").unwrap_or(("", ""));
                let src: u32 = num(file, line, Some(s), "source node")?;
                let dst: u32 = num(file, line, Some(d), "destination node")?;
                for (end, id) in [("source", src), ("destination", dst)] {
                    if id >= n {
                        return Err(ImportError::at(
                            file,
                            line,
                            format!("{end} {id} is not below Nodes {n}"),
                            "hosts are numbered 0 to N-1",
                        ));
                    }
                }
                if src == dst {
                    return Err(ImportError::at(
                        file,
                        line,
                        format!("a connection from {src} to itself"),
                        "pick another destination",
                    ));
                }
                let (mut start, mut size, mut id) = (None, None, None);
                let mut k = 1;
                while k < toks.len() {
                    let key = toks[k];
                    let val = toks.get(k + 1).copied();
                    match key {
                        "start" => start = Some(num::<f64>(file, line, val, "start time (µs)")?),
                        "size" => size = Some(num::<u64>(file, line, val, "size (bytes)")?),
                        "id" => id = Some(num::<u64>(file, line, val, "flow id")?),
                        "prio" => {
                            num::<i64>(file, line, val, "priority")?;
                            prio += 1;
                        }
                        "trigger" | "send_done_trigger" | "recv_done_trigger" => {
                            return Err(refuse(file, line, &format!("`{key}`")))
                        }
                        _ => {
                            return Err(ImportError::at(
                                file,
                                line,
                                format!("unknown token `{key}`"),
                                "a connection is `src->dst [id K] start T size S [prio P]`",
                            ))
                        }
                    }
                    k += 2;
                }
                let start = start.ok_or_else(|| {
                    ImportError::at(file, line, "a connection without `start T`", "give its start time in µs")
                })?;
                if !(start.is_finite() && (0.0..1e12).contains(&start)) {
                    return Err(ImportError::at(file, line, format!("start {start} µs"), "a start time >= 0 in µs"));
                }
                let size = size.ok_or_else(|| {
                    ImportError::at(file, line, "a connection without `size S`", "give its size in bytes")
                })?;
                if size == 0 {
                    return Err(ImportError::at(
                        file,
                        line,
                        "size 0 (an endless flow in htsim) is not supported",
                        "give the flow a size in bytes; bound the run with [simulation] duration_us",
                    ));
                }
                conns.push(Connection { src, dst, id, start_us: start, size, line });
            }
            _ => {
                return Err(ImportError::at(
                    file,
                    line,
                    format!("unknown line starting with `{first}`"),
                    "expected `Nodes N`, `Connections C` or `src->dst start T size S`",
                ))
            }
        }
    }
    let nodes =
        nodes.ok_or_else(|| ImportError::at(file, 1, "no `Nodes N` header", "start the file with `Nodes N`"))?;
    let declared = declared
        .ok_or_else(|| ImportError::at(file, 1, "no `Connections C` header", "add `Connections C` after `Nodes N`"))?;
    if declared != conns.len() {
        return Err(ImportError::at(
            file,
            last_line,
            format!("`Connections {declared}` but the file lists {}", conns.len()),
            "make the header count match the connection lines",
        ));
    }
    Ok(ConnectionMatrix { nodes, connections: conns, priorities_ignored: prio })
}

fn refuse(file: &str, line: usize, what: &str) -> ImportError {
    ImportError::at(
        file,
        line,
        format!("{what}: htsim triggers and failures are not supported (rocelab has no flow dependencies yet)"),
        "remove triggers and give every connection a `start` time",
    )
}

/// The network a `.cm` file runs on. htsim itself needs N = K³/4 (3 tiers) or K²/2 (2 tiers)
/// exactly; rocelab rounds up to the next even K and leaves the extra hosts idle (noted).
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    /// Hosts (at least the `.cm` file's Nodes).
    pub nodes: Option<u32>,
    pub linkspeed_mbps: f64,
    /// 1: one switch; 2: htsim's 2-tier fat tree (leaf-spine); 3: its k-ary fat tree (default).
    pub tiers: u32,
    pub link_delay_ns: f64,
}

impl Default for Network {
    fn default() -> Self {
        Network { nodes: None, linkspeed_mbps: 100_000.0, tiers: 3, link_delay_ns: 1000.0 }
    }
}

/// Builds the scenario of a `.cm` text on `net`.
pub fn import_str(name: &str, file: &str, text: &str, net: &Network) -> Result<Scenario, ImportError> {
    let cm = parse_cm(file, text)?;
    let n = net.nodes.unwrap_or(cm.nodes);
    if n < cm.nodes {
        return Err(ImportError::at(
            file,
            0,
            format!("--nodes {n} is smaller than the file's Nodes {}", cm.nodes),
            format!("use --nodes {} or more", cm.nodes),
        ));
    }
    if !(net.linkspeed_mbps.is_finite() && (1.0..=10_000_000.0).contains(&net.linkspeed_mbps)) {
        return Err(ImportError::at(
            file,
            0,
            format!("--linkspeed {} Mb/s", net.linkspeed_mbps),
            "e.g. --linkspeed 100000",
        ));
    }
    if !(net.link_delay_ns.is_finite() && (0.0..1e9).contains(&net.link_delay_ns)) {
        return Err(ImportError::at(file, 0, format!("--link-delay-ns {}", net.link_delay_ns), "e.g. 1000"));
    }
    let speed_bps = (net.linkspeed_mbps * 1e6).round() as u64;
    let delay_ps = (net.link_delay_ns * 1000.0).round() as u64;
    let mut nodes: Vec<NodeSpec> = (0..n).map(|i| NodeSpec { name: format!("h{i}"), is_switch: false }).collect();
    let mut links = Vec::new();
    let mut link =
        |a: usize, b: usize, what: &str| links.push(LinkSpec { a, b, speed_bps, delay_ps, origin: what.to_string() });
    let topo_desc = match net.tiers {
        1 => {
            let s = nodes.len();
            nodes.push(NodeSpec { name: "s0".into(), is_switch: true });
            for h in 0..n as usize {
                link(h, s, "host - switch");
            }
            format!("one switch, {n} hosts")
        }
        2 => {
            // htsim's default 2-tier fat tree: K ToRs of K/2 hosts, each linked to all K/2 spines.
            let mut k = 2u32;
            while (k as u64).pow(2) / 2 < n as u64 {
                k += 2;
            }
            let half = k / 2;
            let hosts = k * half;
            for i in n..hosts {
                nodes.push(NodeSpec { name: format!("h{i}"), is_switch: false });
            }
            let tor0 = nodes.len();
            for t in 0..k {
                nodes.push(NodeSpec { name: format!("tor{t}"), is_switch: true });
            }
            let spine0 = nodes.len();
            for sp in 0..half {
                nodes.push(NodeSpec { name: format!("spine{sp}"), is_switch: true });
            }
            for h in 0..hosts as usize {
                link(h, tor0 + h / half as usize, "host - ToR");
            }
            for t in 0..k as usize {
                for sp in 0..half as usize {
                    link(tor0 + t, spine0 + sp, "ToR - spine");
                }
            }
            format!("2-tier fat tree (K = {k}), {hosts} hosts")
        }
        3 => {
            let mut k = 2u32;
            while (k as u64).pow(3) / 4 < n as u64 {
                k += 2;
            }
            let half = k / 2;
            let hosts = k * k * k / 4;
            for i in n..hosts {
                nodes.push(NodeSpec { name: format!("h{i}"), is_switch: false });
            }
            let tor0 = nodes.len();
            for t in 0..k * half {
                nodes.push(NodeSpec { name: format!("tor{t}"), is_switch: true });
            }
            let agg0 = nodes.len();
            for a in 0..k * half {
                nodes.push(NodeSpec { name: format!("agg{a}"), is_switch: true });
            }
            let core0 = nodes.len();
            for c in 0..half * half {
                nodes.push(NodeSpec { name: format!("core{c}"), is_switch: true });
            }
            for h in 0..hosts as usize {
                link(h, tor0 + h / half as usize, "host - ToR");
            }
            for t in 0..(k * half) as usize {
                let pod = t / half as usize;
                for j in 0..half as usize {
                    link(tor0 + t, agg0 + pod * half as usize + j, "ToR - agg");
                }
            }
            for a in 0..(k * half) as usize {
                let j = a % half as usize;
                for c in 0..half as usize {
                    link(agg0 + a, core0 + j * half as usize + c, "agg - core");
                }
            }
            format!("{k}-ary fat tree, {hosts} hosts")
        }
        t => {
            return Err(ImportError::at(
                file,
                0,
                format!("--tiers {t}"),
                "use --tiers 1 (one switch), 2 (leaf-spine) or 3 (htsim's default fat tree)",
            ))
        }
    };
    let host_count = nodes.iter().filter(|x| !x.is_switch).count();
    let spare = host_count - n as usize;
    let flows: Vec<FlowSpec> = cm
        .connections
        .iter()
        .map(|c| FlowSpec {
            src: c.src as usize,
            dst: c.dst as usize,
            size_bytes: c.size,
            start_ps: (c.start_us * 1e6).round() as u64,
            origin: match c.id {
                Some(id) => format!("{}:{} id {id}", base(file), c.line),
                None => format!("{}:{}", base(file), c.line),
            },
        })
        .collect();
    let mut notes = vec![
        "a .cm file carries traffic only: as in htsim's RoCE runs (main_roce.cpp), PFC is on, nothing marks ECN and \
         the NICs run no congestion control (RoceSrc sends at line rate); switch buffers and NIC settings are \
         rocelab's defaults; edit them here"
            .to_string(),
        "htsim pauses at 15 and resumes at 12 packets of input queue (-pfc_thresholds); rocelab keeps its \
         computed headroom and dynamic PFC threshold, and 4096-byte RoCE packets (htsim's default -mtu is 9000, \
         above RoCE's largest path MTU)"
            .to_string(),
        format!(
            "network from the command line: {topo_desc}, {} Mb/s links, {} ns per link",
            net.linkspeed_mbps, net.link_delay_ns
        ),
    ];
    if spare > 0 {
        notes.push(format!(
            "{n} hosts do not fill the tree: {spare} more hosts (h{n}..) are built and stay idle (htsim would refuse N)"
        ));
    }
    if cm.priorities_ignored > 0 {
        notes.push(format!(
            "{} connections give `prio`: every flow rides the lossless RoCE class",
            cm.priorities_ignored
        ));
    }
    Ok(Scenario {
        name: name.to_string(),
        description: format!("imported from htsim connection matrix {}", base(file)),
        sources: vec![file.to_string()],
        nodes,
        links,
        flows,
        ns3_switch: None,
        mtu: None,
        dcqcn_on: false,
        dcqcn: Default::default(),
        transport: Default::default(),
        cc_table: None,
        header_overhead: None,
        ecn_by_speed: None,
        duration_us: None,
        seed: 1,
        faults: Vec::new(),
        notes,
    })
}

/// The fabric file's comments in htsim's terms.
pub const DIALECT: Dialect = Dialect {
    classes: "# Every htsim flow rides the lossless RoCE class (priority 3, PFC on, as htsim's LosslessInputQueue); \
              CNPs would ride priority 6, strict.",
    no_ecn: "# No ECN marking, as in htsim's RoCE runs; to try DCQCN, add `ecn = { kmin_bytes = 150000, \
             kmax_bytes = 1500000, pmax = 0.1 }` here and set `congestion_control = \"dcqcn\"` under [nic].",
    ecn_source: "# ECN thresholds per port speed in Gb/s.",
    no_cc: "# htsim's RoceSrc has no congestion control: it sends at line rate, PFC is the only brake",
    no_watchdog: Some("# htsim has no PFC watchdog."),
};

/// Reads a `.cm` file. `--topo` files (htsim's per-tier `.topo`) are refused for now.
pub fn import(cm: &Path, topo: Option<&Path>, net: &Network) -> Result<Scenario, ImportError> {
    if let Some(t) = topo {
        return Err(ImportError::at(
            &t.display().to_string(),
            0,
            "htsim .topo files are not imported yet",
            "describe the network with --nodes N --linkspeed MBPS [--tiers 1|3] [--link-delay-ns NS]",
        ));
    }
    let name = cm.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "htsim".into());
    import_str(&name, &cm.display().to_string(), &read_text(cm)?, net)
}

fn base(path: &str) -> String {
    Path::new(path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.to_string())
}
