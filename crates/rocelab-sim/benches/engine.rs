//! Engine benchmarks: `cargo bench -p rocelab-sim [-- NAME...]`.
//! Prints data packets, packet-hops and events per wall second, peak RSS and wall time per
//! scenario (the same scenarios as `rocelab bench`). A benchmark, not a test: nothing asserts
//! on time.

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    for s in rocelab_sim::scenarios::all() {
        if !filter.is_empty() && !filter.iter().any(|f| s.name.contains(f.as_str())) {
            continue;
        }
        match rocelab_sim::scenarios::run(&s) {
            Ok(r) => println!("{}", r.line()),
            Err(e) => eprintln!("{}: {e}", s.name),
        }
    }
}
