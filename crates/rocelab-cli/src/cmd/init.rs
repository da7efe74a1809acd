//! `rocelab init [--template NAME] [PATH]`: write a commented starter fabric file.

use crate::common::{write_atomic, Failure, VerbResult};
use rocelab_model::templates::{template, CHECKLIST, TEMPLATES};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Template: rail-optimized (default), leaf-spine, rail-1024.
    #[arg(long, short, default_value = "rail-optimized")]
    template: String,
    /// Replace PATH if it exists.
    #[arg(long)]
    force: bool,
    /// List the templates and exit.
    #[arg(long)]
    list: bool,
    /// Where to write the file.
    #[arg(default_value = "fabric.toml")]
    path: PathBuf,
    /// What is printed: text (the next steps, on stderr), or a JSON document naming the file.
    #[arg(long, value_enum, default_value = "text")]
    format: crate::output::Format,
}

pub fn run(a: Args) -> VerbResult {
    if a.list {
        if a.format == crate::output::Format::Json {
            let list: Vec<_> =
                TEMPLATES.iter().map(|t| serde_json::json!({ "template": t.name, "about": t.about })).collect();
            crate::output::print_json("init.templates", &serde_json::json!({ "templates": list }));
            return Ok(ExitCode::SUCCESS);
        }
        for t in TEMPLATES {
            println!("{:<16} {}", t.name, t.about);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(t) = template(&a.template) else {
        let names: Vec<&str> = TEMPLATES.iter().map(|t| t.name).collect();
        let guess = crate::output::did_you_mean(&a.template, names.iter().copied())
            .map(|n| format!("did you mean `{n}`? "))
            .unwrap_or_default();
        return Err(Failure::bad_input(format!(
            "error: unknown template `{}`\n  = help: {guess}use one of: {}",
            a.template,
            names.join(", ")
        )));
    };
    if a.path.exists() && !a.force {
        return Err(Failure::bad_input(format!(
            "error: {} already exists\n  = help: pass --force to replace it, or give another path",
            a.path.display()
        )));
    }
    write_atomic(&a.path, format!("{}{CHECKLIST}", t.text).as_bytes())?;
    let p = a.path.display();
    if a.format == crate::output::Format::Json {
        crate::output::print_json("init.result", &serde_json::json!({ "wrote": p.to_string(), "template": t.name }));
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("wrote {p} ({}); next: rocelab topo {p}, rocelab lint {p}, rocelab simulate {p}", t.about);
    Ok(ExitCode::SUCCESS)
}
