//! Load + summarize time of large fabrics (`cargo bench -p rocelab-model --bench topo_scale`).
//!
//! No framework: the figure of interest is one wall time per fabric (parse, build, route,
//! summarize), printed with the fabric's size. The 24,576-GPU fabric is Llama 3 scale
//! (`benches/fabrics/llama3-24k.toml`); pass other files as arguments to time them instead.
//! A bench is not a timed test: nothing here asserts a time.

use rocelab_model::{load_file, summary};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // `cargo bench` passes `--bench`; anything else that is not a flag is a fabric file.
    let mut files: Vec<PathBuf> =
        std::env::args().skip(1).filter(|a| !a.starts_with("--")).map(PathBuf::from).collect();
    if files.is_empty() {
        files = vec![root.join("examples/rail-1024gpu.toml"), root.join("benches/fabrics/llama3-24k.toml")];
    }
    for f in files {
        let runs = 3;
        let mut best = f64::INFINITY;
        let mut line = String::new();
        for _ in 0..runs {
            let t0 = Instant::now();
            let m = load_file(&f).unwrap_or_else(|e| panic!("{e}"));
            let t_load = t0.elapsed().as_secs_f64();
            let s = summary::summarize(&m);
            let total = t0.elapsed().as_secs_f64();
            if total < best {
                best = total;
                line = format!(
                    "{}: {} NICs, {} switches, {} links, {} ECMP groups: load {:.3} s + summarize {:.3} s = {:.3} s",
                    f.file_name().unwrap().to_string_lossy(),
                    s.hosts,
                    s.switches,
                    s.links,
                    s.ecmp_groups,
                    t_load,
                    total - t_load,
                    total
                );
            }
        }
        println!("{line} (best of {runs})");
    }
}
