//! `rocelab topo FILE`: the fabric summary (text, JSON or Graphviz DOT).

use crate::common::{load_fabric_shown, Stages, VerbResult};
use rocelab_model::summary;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Json,
    Dot,
}

#[derive(clap::Args)]
pub struct Args {
    /// The fabric file.
    file: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub fn run(a: Args) -> VerbResult {
    let stages = Stages::start(&format!("topo {}", a.file.display()));
    let model = load_fabric_shown(&a.file, &stages)?;
    stages.stage("summarizing");
    let out = match a.format {
        Format::Text => summary::render_text(&summary::summarize(&model)),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&summary::summarize(&model)).expect("summary serializes");
            s.push('\n');
            crate::output::envelope("topo.summary", &s)
        }
        Format::Dot => summary::render_dot(&model),
    };
    drop(stages);
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
