//! `rocelab import ns3|htsim|sonic|containerlab|nvue`: turn another simulator's scenario, a
//! switch's configuration or a lab topology into a rocelab fabric file.
//!
//! Writes `OUT/fabric.toml` (commented; traffic included) and prints what could not be carried
//! over exactly (unknown keys, settings rocelab models differently) as warnings on stderr; the
//! same notes open the fabric file. `--run` (ns3) then simulates it and writes rocelab's outputs
//! plus ns-3's FCT and PFC files next to them; `rocelab simulate --ns3-config` does the same in
//! one step. The work is in `rocelab_import`; docs/import.md documents the mappings.

use crate::common::{located, write_atomic, Failure, VerbResult};
use crate::output::{envelope, write_set, Format};
use rocelab_import::{fabric, htsim, ns3, ImportError, Scenario};
use rocelab_model::Model;
use rocelab_model::SimTime;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// An HPCC ns-3 scenario: config.txt and the topology and flow files it names.
    Ns3(Ns3Args),
    /// An htsim connection matrix (.cm) on a generated network.
    Htsim(HtsimArgs),
    /// A SONiC switch's config_db.json: its QoS, buffers and PFC as a fabric file.
    Sonic(SonicArgs),
    /// A containerlab topology (*.clab.yml): its nodes and links as an explicit fabric.
    Containerlab(ClabArgs),
    /// A Cumulus Linux NVUE configuration (`nv config show -o json`, `nv config show`,
    /// /etc/nvue.d/startup.yaml): its RoCE, PFC, ECN and scheduling as a fabric file.
    Nvue(NvueArgs),
}

#[derive(clap::Args)]
struct NvueArgs {
    /// The configuration, JSON or YAML.
    config: PathBuf,
    /// Speed in Gb/s of ports whose speed the configuration leaves to autonegotiation.
    #[arg(long, default_value_t = 100.0)]
    speed_gbps: f64,
    /// Output directory for fabric.toml.
    #[arg(long, short, default_value = "rocelab-import")]
    out: PathBuf,
    /// No notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
struct ClabArgs {
    /// The topology file.
    topology: PathBuf,
    /// Speed of every link in Gb/s (containerlab links carry none).
    #[arg(long, default_value_t = 100.0)]
    speed_gbps: f64,
    /// Output directory for fabric.toml.
    #[arg(long, short, default_value = "rocelab-import")]
    out: PathBuf,
    /// No notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
struct SonicArgs {
    /// config_db.json (`show runningconfiguration all` prints it).
    config_db: PathBuf,
    /// Output directory for fabric.toml.
    #[arg(long, short, default_value = "rocelab-import")]
    out: PathBuf,
    /// No notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
struct Ns3Args {
    /// The ns-3 config file (mix/config.txt).
    #[arg(long)]
    config: PathBuf,
    /// Topology file (default: the config's TOPOLOGY_FILE).
    #[arg(long)]
    topology: Option<PathBuf>,
    /// Flow file (default: the config's FLOW_FILE).
    #[arg(long)]
    flows: Option<PathBuf>,
    /// Output directory for fabric.toml (and, with --run, the results).
    #[arg(long, short, default_value = "rocelab-import")]
    out: PathBuf,
    /// Also simulate the imported fabric and write ns-3-style FCT and PFC files.
    #[arg(long)]
    run: bool,
    /// Seed of the run (with --run).
    #[arg(long)]
    seed: Option<u64>,
    /// What is printed: text, or one JSON document (the fabric's counts and, with --run, the
    /// run's summary).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// No progress or notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
struct HtsimArgs {
    /// The connection matrix (Nodes N, Connections C, `src->dst [id K] start T size S` lines).
    #[arg(long)]
    cm: PathBuf,
    /// An htsim .topo file (not imported yet; use --nodes/--linkspeed).
    #[arg(long)]
    topo: Option<PathBuf>,
    /// Hosts in the network (default: the file's Nodes).
    #[arg(long)]
    nodes: Option<u32>,
    /// Link speed in Mb/s (htsim's unit).
    #[arg(long, default_value_t = 100_000.0)]
    linkspeed: f64,
    /// 3: a k-ary fat tree, htsim's default; 2: its leaf-spine; 1: one switch.
    #[arg(long, default_value_t = 3)]
    tiers: u32,
    /// One-way delay of every link, in ns.
    #[arg(long, default_value_t = 1000.0)]
    link_delay_ns: f64,
    /// Output directory for fabric.toml (and, with --run, the results).
    #[arg(long, short, default_value = "rocelab-import")]
    out: PathBuf,
    /// Also simulate the imported fabric (as `rocelab simulate OUT/fabric.toml`) and write its
    /// summary.json, flows.csv and metrics.prom beside fabric.toml.
    #[arg(long)]
    run: bool,
    /// Seed of the run (with --run).
    #[arg(long, requires = "run")]
    seed: Option<u64>,
    /// What is printed: text, or one JSON document (the fabric's counts and, with --run, the
    /// run's summary).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// No progress or notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

fn failure(e: ImportError) -> Failure {
    Failure::bad_input(e.to_string())
}

fn notes(s: &Scenario, quiet: bool) {
    if !quiet {
        for n in &s.notes {
            eprintln!("warning: {n}");
        }
    }
}

/// Writes `OUT/fabric.toml` alone, as the output set of an import without `--run`.
fn write_fabric(s: &Scenario, dialect: &fabric::Dialect, out: &Path, format: Format) -> Result<PathBuf, Failure> {
    let path = out.join("fabric.toml");
    write_set(out, &[("fabric.toml", fabric::to_toml_with(s, dialect).as_bytes())])?;
    announce(s, &path, format, None);
    Ok(path)
}

/// The imported fabric as a model, loaded from its text under the name it will have in `out`
/// (the run's files, fabric.toml included, are then written as one set).
fn load_imported(s: &Scenario, dialect: &fabric::Dialect, out: &Path) -> Result<(String, PathBuf, Model), Failure> {
    let text = fabric::to_toml_with(s, dialect);
    let path = out.join("fabric.toml");
    let model = rocelab_model::load_str(&path.display().to_string(), &text)?;
    Ok((text, path, model))
}

/// What was imported (and, with `--run`, the run's report) on standard output.
fn announce(s: &Scenario, path: &Path, format: Format, run: Option<&rocelab_sim::RunReport>) {
    let hosts = s.nodes.iter().filter(|n| !n.is_switch).count();
    let switches = s.nodes.iter().filter(|n| n.is_switch).count();
    match format {
        Format::Text => {
            println!(
                "wrote {} ({hosts} hosts, {switches} switches, {} links, {} flows)",
                path.display(),
                s.links.len(),
                s.flows.len()
            );
            if let Some(r) = run {
                print!("{}", r.render_text());
            }
        }
        Format::Json => {
            let summary = run.and_then(|r| serde_json::from_str::<serde_json::Value>(&r.to_json()).ok());
            let doc = serde_json::json!({
                "fabric": path.display().to_string(),
                "hosts": hosts,
                "switches": switches,
                "links": s.links.len(),
                "flows": s.flows.len(),
                "run": summary,
            });
            crate::output::print_json("import.result", &doc);
        }
    }
}

pub fn run(a: Args) -> VerbResult {
    match a.what {
        What::Ns3(n) => {
            if n.run {
                return simulate_ns3(
                    &n.config,
                    n.topology.as_deref(),
                    n.flows.as_deref(),
                    &n.out,
                    n.seed,
                    None,
                    n.quiet,
                    n.format,
                );
            }
            let imp = ns3::import(&n.config, n.topology.as_deref(), n.flows.as_deref()).map_err(failure)?;
            notes(&imp.scenario, n.quiet);
            write_fabric(&imp.scenario, &fabric::NS3, &n.out, n.format)?;
            Ok(ExitCode::SUCCESS)
        }
        What::Htsim(h) => {
            let net = htsim::Network {
                nodes: h.nodes,
                linkspeed_mbps: h.linkspeed,
                tiers: h.tiers,
                link_delay_ns: h.link_delay_ns,
            };
            let s = htsim::import(&h.cm, h.topo.as_deref(), &net).map_err(failure)?;
            notes(&s, h.quiet);
            if !h.run {
                write_fabric(&s, &htsim::DIALECT, &h.out, h.format)?;
                return Ok(ExitCode::SUCCESS);
            }
            let (text, path, model) = load_imported(&s, &htsim::DIALECT, &h.out)?;
            let mut opts = rocelab_sim::options_from_model(&model);
            if let Some(seed) = h.seed {
                opts.seed = seed;
            }
            let (rep, _, wall) = crate::cmd::simulate::run_traffic(&model, &path, opts, h.quiet, None)?;
            let summary = envelope("simulate.summary", &rep.to_json());
            let (flows, prom) = (rep.flows_csv(), rep.prometheus());
            write_set(
                &h.out,
                &[
                    ("fabric.toml", text.as_bytes()),
                    ("summary.json", summary.as_bytes()),
                    ("flows.csv", flows.as_bytes()),
                    ("metrics.prom", prom.as_bytes()),
                ],
            )?;
            announce(&s, &path, h.format, Some(&rep));
            if h.format == Format::Text {
                println!("  results in {}/", h.out.display());
            }
            crate::cmd::simulate::finish_traffic(&rep, wall, h.quiet)
        }
        What::Sonic(a) => {
            let imp = rocelab_import::sonic::import(&a.config_db).map_err(failure)?;
            let what = format!("switch {}, {} ports, {} classes", imp.switch, imp.ports, imp.classes);
            write_imported(&a.out, a.quiet, &imp.notes, &imp.toml, &what)
        }
        What::Containerlab(a) => {
            let imp = rocelab_import::containerlab::import(&a.topology, a.speed_gbps).map_err(failure)?;
            let what = format!("{} hosts, {} switches, {} links", imp.hosts, imp.switches, imp.links);
            write_imported(&a.out, a.quiet, &imp.notes, &imp.toml, &what)
        }
        What::Nvue(a) => {
            let imp = rocelab_import::nvue::import(&a.config, a.speed_gbps).map_err(failure)?;
            let what = format!("switch {}, {} ports, {} classes", imp.switch, imp.ports, imp.classes);
            write_imported(&a.out, a.quiet, &imp.notes, &imp.toml, &what)
        }
    }
}

/// The end of a config importer (SONiC, containerlab, NVUE): its notes as warnings (unless
/// quiet), `fabric.toml` written atomically into `out`, and one line saying what it holds.
fn write_imported(out: &Path, quiet: bool, notes: &[String], toml: &str, what: &str) -> VerbResult {
    if !quiet {
        for n in notes {
            eprintln!("warning: {n}");
        }
    }
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::bad_input(format!("error: cannot create {}: {e}", out.display())))?;
    let path = out.join("fabric.toml");
    write_atomic(&path, toml.as_bytes())?;
    println!("wrote {} ({what})", path.display());
    Ok(ExitCode::SUCCESS)
}

/// Imports an ns-3 scenario into `out`, runs it, and writes rocelab's outputs (summary.json,
/// flows.csv, metrics.prom) plus the ns-3 FCT and PFC files (named as the config names them).
/// Used by `rocelab import ns3 --run` and `rocelab simulate --ns3-config`.
// The flags of two verbs (`import ns3 --run`, `simulate --ns3-config`), passed as they are.
#[allow(clippy::too_many_arguments)]
pub fn simulate_ns3(
    config: &Path,
    topology: Option<&Path>,
    flows: Option<&Path>,
    out: &Path,
    seed: Option<u64>,
    duration_us: Option<f64>,
    quiet: bool,
    format: Format,
) -> VerbResult {
    let imp = ns3::import(config, topology, flows).map_err(failure)?;
    notes(&imp.scenario, quiet);
    let (text, path, model) = load_imported(&imp.scenario, &fabric::NS3, out)?;
    let mut opts = rocelab_sim::options_from_model(&model);
    if let Some(s) = seed {
        opts.seed = s;
    }
    if let Some(d) = duration_us {
        if !(d.is_finite() && d > 0.0) {
            return Err(Failure::bad_input(format!("error: --duration-us must be a positive number of µs, got {d}")));
        }
        opts.duration = Some(SimTime::from_secs_f64(d * 1e-6));
    }
    let wall = std::time::Instant::now();
    let spinner = (!quiet).then(|| crate::common::Stages::start(&format!("simulate {}", path.display())));
    if let Some(s) = &spinner {
        s.stage("running the imported scenario");
    }
    let r = ns3::run(&imp, &model, opts).map_err(|d| located(&path, d))?;
    drop(spinner);
    let summary = envelope("simulate.summary", &r.report.to_json());
    let (flows_csv, prom) = (r.report.flows_csv(), r.report.prometheus());
    write_set(
        out,
        &[
            ("fabric.toml", text.as_bytes()),
            ("summary.json", summary.as_bytes()),
            ("flows.csv", flows_csv.as_bytes()),
            ("metrics.prom", prom.as_bytes()),
            (&imp.fct_file, r.fct.as_bytes()),
            (&imp.pfc_file, r.pfc.as_bytes()),
        ],
    )?;
    announce(&imp.scenario, &path, format, Some(&r.report));
    // Also where ns-3 itself writes them, so scripts that read ns-3's outputs find them; a
    // file already there (ns-3's own results, to compare with) is never overwritten.
    if let Some((fct, pfc)) = &imp.ns3_outputs {
        for (path, text) in [(fct, &r.fct), (pfc, &r.pfc)] {
            if path.exists() {
                eprintln!(
                    "warning: {} exists (ns-3's own output?): not overwritten; rocelab's copy is in {}",
                    path.display(),
                    out.display()
                );
                continue;
            }
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Failure::bad_input(format!("error: cannot create {}: {e}", dir.display())))?;
            }
            write_atomic(path, text.as_bytes())?;
        }
    }
    if format == Format::Json {
        return crate::cmd::simulate::finish_traffic(&r.report, wall.elapsed(), quiet);
    }
    println!(
        "  results in {}/ (ns-3 layouts: {}, {})",
        out.display(),
        out.join(&imp.fct_file).display(),
        out.join(&imp.pfc_file).display()
    );
    if let Some((fct, pfc)) = &imp.ns3_outputs {
        println!("  and where ns-3 writes them: {}, {}", fct.display(), pfc.display());
    }
    crate::cmd::simulate::finish_traffic(&r.report, wall.elapsed(), quiet)
}
