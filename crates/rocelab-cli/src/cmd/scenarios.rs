//! `rocelab scenarios --list`: every stress scenario kind with its parameters and defaults.

use crate::cmd::simulate::Format;
use crate::common::VerbResult;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// List every kind, its headline metric and its parameters with their defaults.
    #[arg(long)]
    list: bool,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub fn run(a: Args) -> VerbResult {
    // Listing is all this verb does; `--list` is accepted for the checklist's wording.
    let _ = a.list;
    match a.format {
        Format::Text => print!("{}", rocelab_scenario::catalog::list_text()),
        Format::Json => {
            print!("{}", crate::output::envelope("scenarios.list", &rocelab_scenario::catalog::list_json()))
        }
    }
    Ok(ExitCode::SUCCESS)
}
