//! `rocelab exporter`: serve live RDMA counters as Prometheus metrics on `/metrics`.

use crate::common::{load_fabric, write_atomic, Failure, VerbResult};
use rocelab_doctor::collect::CollectOptions;
use rocelab_doctor::exporter::{Exporter, ExporterConfig};
use rocelab_doctor::tools::Tools;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on; loopback unless you say otherwise (there is no authentication).
    #[arg(long, default_value = rocelab_doctor::exporter::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Root of the sysfs tree to read (a fake tree in tests).
    #[arg(long, default_value = "/sys")]
    sysfs_root: PathBuf,
    /// `node` label (default: this host's name); use the fabric file's name.
    #[arg(long)]
    node: Option<String>,
    /// How long a scrape waits for the first collection (later scrapes get the last page at once).
    #[arg(long, default_value = "10s", value_parser = rocelab_doctor::util::parse_duration)]
    scrape_timeout: Duration,
    /// Time between collections in the background.
    #[arg(long, default_value = "5s", value_parser = rocelab_doctor::util::parse_duration)]
    collect_interval: Duration,
    /// Deadline for each run of ethtool, mlnx_qos or rdma.
    #[arg(long, default_value = "5s", value_parser = rocelab_doctor::util::parse_duration)]
    tool_timeout: Duration,
    /// Connections open at once; more get 503 (idle ones are closed after 10 s, a request
    /// head must arrive within 2 s).
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// Read sysfs only; do not run ethtool, mlnx_qos, rdma or nvidia-smi.
    #[arg(long)]
    no_tools: bool,
    /// Priority of switch-side RoCE counters.
    #[arg(long, default_value_t = 3)]
    roce_priority: u8,
    /// Write Prometheus alerting rules for these metrics to FILE and exit (thresholds from
    /// --fabric: lossless priorities, line rate, MTU, NICs per node, PFC watchdog).
    #[arg(long, value_name = "FILE")]
    alert_rules: Option<PathBuf>,
    /// Fabric file the alert thresholds come from (needed with --alert-rules).
    #[arg(long, value_name = "FILE", requires = "alert_rules")]
    fabric: Option<PathBuf>,
}

fn write_alert_rules(out: &std::path::Path, fabric: Option<&std::path::Path>) -> VerbResult {
    let Some(fabric) = fabric else {
        return Err(Failure::bad_input(
            "error: --alert-rules needs --fabric FILE: the thresholds come from the fabric's priorities and line rates",
        ));
    };
    let model = load_fabric(fabric)?;
    let intent = rocelab_doctor::intent::from_model(&model, &fabric.display().to_string());
    let wd = &model.config.qos.pfc_watchdog;
    let inputs = rocelab_doctor::alerts::AlertInputs::from_intent(&intent, wd.enabled.then_some(wd.detection_ms));
    let text = rocelab_doctor::alerts::alert_rules(&inputs, &rocelab_doctor::diagnose::Thresholds::default());
    write_atomic(out, text.as_bytes())?;
    println!("wrote alerting rules to {}; check them with `promtool check rules {}`", out.display(), out.display());
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: Args) -> VerbResult {
    if let Some(out) = &a.alert_rules {
        return write_alert_rules(out, a.fabric.as_deref());
    }
    if a.max_connections == 0 {
        return Err(Failure::bad_input("error: --max-connections must be at least 1"));
    }
    if a.scrape_timeout.is_zero() {
        return Err(Failure::bad_input("error: --scrape-timeout must be positive"));
    }
    let cfg = ExporterConfig {
        listen: a.listen,
        collect: CollectOptions {
            sysfs_root: a.sysfs_root,
            host: a.node,
            tools: if a.no_tools { Tools::none() } else { Tools::discover() },
            tool_timeout: a.tool_timeout.min(a.scrape_timeout),
            proc_root: PathBuf::from("/proc"),
            nccl_logs: Vec::new(),
            gpu_path: false,
        },
        max_connections: a.max_connections,
        scrape_timeout: a.scrape_timeout,
        collect_interval: a.collect_interval.max(Duration::from_millis(100)),
        roce_priority: a.roce_priority.min(7),
        ..ExporterConfig::default()
    };
    let exporter =
        Exporter::bind(cfg).map_err(|e| Failure::bad_input(format!("error: cannot listen on {}: {e}", a.listen)))?;
    let addr = exporter.local_addr().map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    if !addr.ip().is_loopback() {
        eprintln!("warning: serving on {addr}, reachable from the network; the exporter has no authentication");
    }
    eprintln!("serving http://{addr}/metrics (Ctrl-C to stop)");
    exporter.serve().map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
