//! `[[traffic]]`, `[[fault]]` and `[[workload]]` are checked when the file loads, so every
//! verb refuses a bad table the same way: exit 2 and the same file:line:column error. And no
//! table the engine would refuse gets past the load (thousands of generated tables, each
//! loaded, then handed to the engine's own checks).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).current_dir(repo()).output().expect("run rocelab")
}

/// Two leaves under one spine, two hosts each (host0..host3), 100G; line 7 is the first after it.
const BASE: &str = "\
[topology.leaf_spine]
leaves = 2
spines = 1
hosts_per_leaf = 2
host_link = { speed_gbps = 100 }
fabric_link = { speed_gbps = 100 }
";

fn temp(name: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-tables-at-load-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Absurd and wrong values, one table each, with where the error must point.
const BAD: &[(&str, &str, &str)] = &[
    // The three the issue names: an unknown host, a size of 0, 40 senders on a 4-host fabric.
    (
        "[[traffic]]\npattern = \"flow\"\nsrc = \"host9\"\ndst = \"host1\"\nsize_bytes = 1000\n",
        "9:7",
        "no host named `host9`",
    ),
    (
        "[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host1\"\nsize_bytes = 0\n",
        "11:14",
        "a flow of 0 bytes",
    ),
    (
        "[[traffic]]\npattern = \"incast\"\ndst = \"host0\"\nsenders = 40\nsize_bytes = 1\n",
        "10:11",
        "incast of 40 senders",
    ),
    ("[[traffic]]\npattern = \"all-to-all\"\nsize_bytes = 9223372036854775807\n", "9:14", "more than the 1 TB"),
    ("[[traffic]]\npattern = \"all-to-all\"\nsize_bytes = 1\nstart_us = 1e300\n", "10:12", "start time"),
    ("[[traffic]]\npattern = \"all-to-all\"\nsize_bytes = 1\nqps = 4294967295\n", "10:7", "queue pairs per flow"),
    ("[[fault]]\nkind = \"link-down\"\nat_us = 1e300\na = \"leaf0\"\nb = \"spine0\"\n", "9:9", "not a valid time"),
    (
        "[[fault]]\nkind = \"link-flap\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"\nperiod_us = 1e11\ncount = 100000\n",
        "12:13",
        "end beyond",
    ),
    (
        "[[fault]]\nkind = \"switch-reboot\"\nat_us = 1\na = \"spine9\"\nduration_us = 5\n",
        "10:5",
        "no node named `spine9`",
    ),
    // `simulate --collective sendrecv --min-bytes 1024G` reached a panic; in a file it is a
    // located error.
    ("[[workload]]\ncollective = \"sendrecv\"\nmin_bytes = \"1024G\"\nchannels = 1\n", "9:13", "more than the 1 TB"),
    ("[[workload]]\ncollective = \"all_reduce\"\nchannels = 4294967295\n", "9:12", "channels = 4294967295"),
    (
        "[[workload]]\ncollective = \"all_reduce\"\nqps_per_connection = 4294967295\n",
        "9:22",
        "qps_per_connection = 4294967295",
    ),
    // Two classes on one queue, set up differently.
    (
        "[[qos.class]]\nname = \"roce\"\ndscp = [26]\npriority = 3\ncarries = [\"rdma\"]\n\
         [[qos.class]]\nname = \"cnp\"\ndscp = [48]\npriority = 3\nscheduler = \"strict\"\ncarries = [\"cnp\"]\n",
        "15:12",
        "classes `roce` and `cnp` share egress queue 3",
    ),
];

#[test]
fn every_verb_refuses_a_bad_table_with_the_same_located_error() {
    for (i, (table, at, words)) in BAD.iter().enumerate() {
        let p = temp(&format!("bad{i}.toml"), &format!("{BASE}{table}"));
        let f = p.to_str().unwrap();
        let out = temp(&format!("out{i}"), "");
        let _ = std::fs::remove_file(&out);
        let mut first_lines = Vec::new();
        for args in [
            vec!["lint", f],
            vec!["topo", f],
            vec!["validate", "-q", f],
            vec!["simulate", "-q", "--no-files", f],
            vec!["simulate", "-q", "--out", out.to_str().unwrap(), f],
        ] {
            let o = rocelab(&args);
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert_eq!(o.status.code(), Some(2), "{args:?} on {table}: {err}");
            let line = err.lines().find(|l| l.contains(": error: ")).unwrap_or_default().to_string();
            assert!(line.starts_with(&format!("{f}:{at}: error: ")) && line.contains(words), "{args:?}: {err}");
            assert!(err.contains("= help: "), "{args:?}: {err}");
            first_lines.push(line);
        }
        assert!(first_lines.windows(2).all(|w| w[0] == w[1]), "{first_lines:?}");
    }
}

/// The same bound on the command line: `--min-bytes 1024G` used to reach a panic in the
/// send/recv workload.
#[test]
fn a_collective_larger_than_the_engine_takes_is_bad_input() {
    for args in [&["--min-bytes", "1024G"][..], &["--min-bytes", "1G", "--max-bytes", "2048G"][..]] {
        let o = rocelab(
            &[
                &[
                    "simulate",
                    "-q",
                    "--no-files",
                    "examples/leaf-spine-small.toml",
                    "--collective",
                    "sendrecv",
                    "--channels",
                    "1",
                ][..],
                args,
            ]
            .concat(),
        );
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("more than the 1 TB (10^12 B) message the engine takes") && err.contains("= help: "),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A small seeded generator (SplitMix64), so the test needs no crate.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    /// One of `good` nine times in ten, else one of `bad`: most generated files then have at
    /// most one or two mistakes, and some have none.
    fn value<'a>(&mut self, good: &[&'a str], bad: &[&'a str]) -> &'a str {
        if bad.is_empty() || !self.next().is_multiple_of(10) {
            self.pick(good)
        } else {
            self.pick(bad)
        }
    }
}

/// Writes `key = value` for each key: for a key the table's kind reads, one of its values (a
/// good one nine times in ten); for a key it does not read, nothing nine times in ten (a stray
/// key is a mistake too).
fn keys(r: &mut Mix, t: &mut String, reads: &dyn Fn(&str) -> bool, keys: &[(&str, &[&str], &[&str])]) {
    for (key, good, bad) in keys {
        let v = if reads(key) {
            r.value(good, bad)
        } else if r.next().is_multiple_of(10) {
            r.pick(good)
        } else {
            ""
        };
        if !v.is_empty() {
            *t += &format!("{key} = {v}\n");
        }
    }
}

fn traffic_table(r: &mut Mix) -> String {
    let pattern = r.pick(&["flow", "incast", "permutation", "all-to-all"]);
    let mut t = format!("[[traffic]]\npattern = \"{pattern}\"\n");
    let reads = |key: &str| match key {
        "src" => pattern == "flow",
        "dst" => pattern == "flow" || pattern == "incast",
        "hosts" => pattern != "flow",
        "senders" => pattern == "incast",
        _ => true,
    };
    // (key, good values, bad values); "" leaves the key out.
    let table: [(&str, &[&str], &[&str]); 8] = [
        ("src", &["\"host0\"", "\"host3\""], &["\"host9\"", "\"leaf0\"", ""]),
        ("dst", &["\"host1\"", "\"host2\"", "\"host0\""], &["\"host9\"", "\"spine0\"", ""]),
        ("hosts", &["", "[\"host*\"]", "[\"host0\", \"host1\", \"host2\"]"], &["[\"nic*\"]", "[\"host1\"]"]),
        ("senders", &["", "1", "2"], &["0", "3", "40", "4294967295"]),
        ("size_bytes", &["1", "1000", "1000000000000"], &["0", "1000000000001", "9223372036854775807"]),
        ("start_us", &["", "0.0", "5.0", "999999999.0"], &["-1.0", "1e9", "1e300", "nan", "inf"]),
        ("class", &["", "\"roce\"", "\"cnp\""], &["\"gold\""]),
        ("qps", &["", "1", "4", "1024"], &["0", "1025", "4294967295"]),
    ];
    keys(r, &mut t, &reads, &table);
    t
}

fn fault_table(r: &mut Mix) -> String {
    let kinds = [
        "link-down",
        "link-up",
        "host-stall",
        "host-resume",
        "switch-reboot",
        "link-flap",
        "ecmp-reseed",
        "ecmp-hash-fields",
        "route-withdraw",
        "route-restore",
    ];
    let kind = r.pick(&kinds);
    let mut t = format!("[[fault]]\nkind = \"{kind}\"\n");
    let reads = |key: &str| match key {
        "b" => kind.starts_with("link-") || kind.starts_with("route-"),
        "duration_us" => kind == "switch-reboot",
        "period_us" | "count" => kind == "link-flap",
        "seed" => kind == "ecmp-reseed",
        "fields" => kind == "ecmp-hash-fields",
        _ => true,
    };
    let table: [(&str, &[&str], &[&str]); 8] = [
        ("at_us", &["0.0", "1.0", "5e11"], &["-1.0", "1e12", "nan", "inf"]),
        ("a", &["\"leaf0\"", "\"host0\"", "\"*\"", "\"spine0\""], &["\"nowhere\""]),
        ("b", &["\"spine0\"", "\"leaf0\""], &["\"leaf1\"", "\"host3\"", ""]),
        ("duration_us", &["4.0", "1e11"], &["0.0", "-1.0", "1e12", "6e11", ""]),
        ("period_us", &["4.0", "1e6"], &["0.0", "-1.0", "0.000001", "1e11", ""]),
        ("count", &["3", "100000"], &["0", "100001", ""]),
        ("seed", &["7"], &[""]),
        ("fields", &["[\"dst-ip\"]"], &[""]),
    ];
    keys(r, &mut t, &reads, &table);
    t
}

/// What the engine refuses for its tables, the load has refused already: for every generated
/// file that loads, the engine's own expansion of `[[traffic]]` and resolution of `[[fault]]`
/// accept it. (A file that does not load is a located error, never a panic.)
#[test]
fn no_table_the_engine_refuses_gets_past_the_load() {
    let mut r = Mix(31);
    let (mut loaded, mut refused) = (0, 0);
    for _ in 0..4000 {
        let mut text = String::from(BASE);
        text += &traffic_table(&mut r);
        if r.next().is_multiple_of(2) {
            text += &fault_table(&mut r);
        }
        match rocelab_model::load_str("g.toml", &text) {
            Ok(m) => {
                loaded += 1;
                let flows = rocelab_sim::traffic::expand(&m, &m.config.traffic, 1);
                assert!(
                    flows.as_ref().is_ok_and(|f| !f.is_empty()),
                    "the engine refuses what loaded:\n{text}\n{flows:?}"
                );
                let faults = rocelab_sim::engine::resolve_faults(&m);
                assert!(faults.is_ok(), "the engine refuses what loaded:\n{text}\n{faults:?}");
                assert_eq!(m.intent.traffic[0].flows(), flows.unwrap().len() as u64, "{text}");
            }
            Err(e) => {
                refused += 1;
                let e = e.to_string();
                assert!(e.starts_with("g.toml:") && e.contains(": error: ") && e.contains("= help: "), "{e}");
            }
        }
    }
    // Both sides of the property are exercised.
    println!("loaded {loaded}, refused {refused}");
    assert!(loaded > 500 && refused > 500, "loaded {loaded}, refused {refused}");
}

fn workload_table(r: &mut Mix) -> String {
    let mut t = format!(
        "[[workload]]\ncollective = \"{}\"\n",
        r.pick(&["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"])
    );
    let table: [(&str, &[&str], &[&str]); 10] = [
        ("min_bytes", &["", "1", "\"64K\"", "\"1M\""], &["0", "\"1024G\"", "\"x\""]),
        ("max_bytes", &["", "\"4M\""], &["\"2T\"", "\"1K\""]),
        ("step_factor", &["", "2", "4"], &["0", "1"]),
        ("nodes", &["", "1", "2"], &["0", "3"]),
        ("channels", &["", "1", "4"], &["0", "257"]),
        ("qps_per_connection", &["", "1", "4"], &["0", "129"]),
        ("chunk_bytes", &["", "\"128K\""], &["0"]),
        ("root", &["", "0", "3"], &["16", "4294967295"]),
        ("algo", &["", "\"ring\"", "\"auto\""], &["\"tree\"", "\"nvls\""]),
        ("proto", &["", "\"LL\"", "\"ll128\"", "\"Simple\"", "\"auto\""], &["\"ll64\""]),
    ];
    keys(r, &mut t, &|_| true, &table);
    t += r.value(&["", "", "placement = \"nics\"\n"], &["placement = \"gpus\"\n"]);
    t
}

/// The same for `[[workload]]`: whatever loads, the collective's own checks (`prepare`, with
/// the values `simulate` hands it) accept, at the smallest and largest size of the sweep; on a
/// fabric of hosts and on one of GPU nodes.
#[test]
fn no_workload_the_collective_refuses_gets_past_the_load() {
    let rail = "[topology.rail_optimized]\ngpu_nodes = 2\nrails = 2\nnodes_per_su = 2\n\
                host_link = { speed_gbps = 400 }\nleaf_link = { speed_gbps = 400 }\n[gpu_node]\ngpus = 2\n";
    let mut r = Mix(7);
    let (mut loaded, mut refused) = (0, 0);
    for i in 0..1500 {
        let text = format!("{}{}", if i % 2 == 0 { BASE } else { rail }, workload_table(&mut r));
        let m = match rocelab_model::load_str("w.toml", &text) {
            Ok(m) => m,
            Err(e) => {
                refused += 1;
                assert!(e.to_string().starts_with("w.toml:"), "{e}");
                continue;
            }
        };
        loaded += 1;
        let rocelab_model::intent::WorkloadRun::Collective { op, min_bytes, .. } = &m.intent.workloads[0].run else {
            unreachable!()
        };
        // As `simulate` resolves a `[[workload]]`: the flags' defaults, the table's keys over them.
        let req = rocelab_workload::CollectiveRequest::new(op, *min_bytes)
            .with_workload(&m.config.workload[0], 0)
            .unwrap_or_else(|d| panic!("the request refuses what loaded:\n{text}\n{d:?}"));
        let (spec, sizes) = req.spec(&m).unwrap_or_else(|d| panic!("the sweep refuses what loaded:\n{text}\n{d:?}"));
        for bytes in [sizes[0], *sizes.last().unwrap()] {
            let spec = rocelab_workload::CollectiveSpec { bytes, ..spec.clone() };
            if let Err(d) = rocelab_workload::prepare(&m, &spec, 1) {
                panic!("the collective refuses what loaded:\n{text}\n{d:?}");
            }
        }
    }
    println!("loaded {loaded}, refused {refused}");
    assert!(loaded > 200 && refused > 200, "loaded {loaded}, refused {refused}");
}
