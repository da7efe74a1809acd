//! `rocelab plan` (in progress: this module is replaced when its issue lands).

use crate::common::{Failure, VerbResult};

#[derive(clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

pub fn run(_a: Args) -> VerbResult {
    Err(Failure::bad_input(
        "error: `rocelab plan` is not available in this build yet",
    ))
}
