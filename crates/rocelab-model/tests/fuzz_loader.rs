//! A seeded fuzzer for the fabric loader: no input may make it panic.
//!
//! Seeds are the files in `examples/` plus a few small fixtures of every topology kind. Each
//! case stacks 1-4 structured mutations (byte flips, token insertions, line deletions,
//! duplications and swaps, swapped values, numbers replaced by edge cases, truncation) or is a
//! pure random string, then runs `load_str` and, when the file still loads, `summarize` and
//! `render_dot`, all under `catch_unwind`. Some cases go through `load_file` with raw bytes to
//! cover the UTF-8 path. Failing inputs are written to the temp directory for replay.
//!
//! `cargo test -p rocelab-model --test fuzz_loader` runs a modest count. For a long run:
//! `ROCELAB_FUZZ_ITERS=200000 cargo test --release -p rocelab-model --test fuzz_loader -- --nocapture`
//! (`ROCELAB_FUZZ_SEED` picks another sequence), or `cargo test ... -- --ignored` for the long
//! default. No dependency: a xorshift generator is enough to be reproducible.

use rocelab_model::summary::{render_dot, render_text, summarize};
use rocelab_model::{load_file, load_str};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

/// xorshift64*: small, fast, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn token(&mut self, xs: &[&'static str]) -> &'static str {
        xs[self.below(xs.len())]
    }
}

/// Tokens that stress a TOML parser and the validator.
const TOKENS: &[&str] = &[
    "=",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    ".",
    "\"",
    "'",
    "#",
    "\n",
    " ",
    "-",
    "+",
    "0",
    "1",
    "9",
    "e",
    "_",
    "nan",
    "inf",
    "-inf",
    "true",
    "\"\"",
    "\"x\"",
    "[]",
    "{}",
    "\\",
    "\u{e9}",
    "\u{1F600}",
    "\t",
    "\r\n",
    "[topology.explicit]",
    "[[topology.explicit.node]]",
    "[[topology.explicit.link]]",
    "[[qos.class]]",
    "[topology.fat_tree]",
    "[switch_models.x]",
    "[nic_profiles.p]",
    "[[nic_assign]]",
    "[nic.qos]",
];

/// Values that sit on edges: zero, negatives, overflow of u8/u16/u32, floats where ints go.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "8",
    "63",
    "64",
    "255",
    "256",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "-1",
    "-0",
    "0.5",
    "1.5",
    "1e3",
    "1e300",
    "-1e300",
    "nan",
    "inf",
    "9223372036854775807",
    "\"4\"",
    "[]",
];

/// Small valid fabrics of each kind (the examples are added to these).
const FIXTURES: &[&str] = &[
    "[topology.fat_tree]\nk = 4\nlink = { speed_gbps = 100, length_m = 10 }\n",
    "[topology.rail_optimized]\ngpu_nodes = 8\nrails = 2\nnodes_per_su = 2\nsus_per_pod = 2\n\
     pod_oversubscription = 2\nhost_link = { speed_gbps = 400 }\nleaf_link = { speed_gbps = 400 }\n",
    "[[topology.explicit.node]]\nname = \"s\"\nkind = \"switch\"\n[[topology.explicit.node]]\nname = \"h1\"\n\
     kind = \"host\"\ngpu_node = \"g\"\nrail = 0\n[[topology.explicit.node]]\nname = \"h2\"\nkind = \"host\"\n\
     [[topology.explicit.link]]\na = \"h1\"\nb = \"s\"\nspeed_gbps = 100\n[[topology.explicit.link]]\n\
     a = \"h2\"\nb = \"s\"\nspeed_gbps = 100\ndelay_ns = 50\nmtu = 9000\n",
    "[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\nhost_link = { speed_gbps = 25 }\n\
     fabric_link = { speed_gbps = 100 }\n[[nic_assign]]\nhosts = [\"host*\"]\nprofile = \"old\"\n\
     [nic_profiles.old]\nfirmware = \"1\"\n[nic_profiles.old.dcqcn]\nvariant = \"paper\"\n\
     [[qos.class]]\nname = \"roce\"\ndscp = [26]\npriority = 3\nlossless = true\n\
     ecn_per_speed.\"100\" = { kmin_bytes = 1, kmax_bytes = 2, pmax = 1 }\n\
     [[qos.class]]\nname = \"cnp\"\ndscp = [48]\npriority = 6\nscheduler = \"strict\"\n",
];

fn seeds() -> Vec<String> {
    let mut out: Vec<String> = FIXTURES.iter().map(|s| s.to_string()).collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("examples/").map(|e| e.unwrap().path()).collect();
    files.sort();
    for p in files.into_iter().filter(|p| p.is_file()) {
        let text = std::fs::read_to_string(&p).unwrap();
        // Only small fabrics: mutating a huge one would spend the budget on one file. A node
        // count (not a load time) keeps the seed list, and so the sequence, deterministic.
        if load_str("seed", &text).is_ok_and(|m| m.nodes.len() <= 5_000) {
            out.push(text);
        }
    }
    out
}

fn lines(s: &str) -> Vec<String> {
    s.split_inclusive('\n').map(str::to_string).collect()
}

/// Byte offset of a random char boundary in `s`.
fn boundary(rng: &mut Rng, s: &str) -> usize {
    let mut i = rng.below(s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(rng: &mut Rng, s: &mut String, pool: &[String]) {
    match rng.below(11) {
        0 => {
            // Replace one character with a random printable one.
            if !s.is_empty() {
                let i = boundary(rng, s).min(s.len() - 1);
                let i = (0..=i).rev().find(|&j| s.is_char_boundary(j)).unwrap_or(0);
                let len = s[i..].chars().next().map(char::len_utf8).unwrap_or(0);
                let c = (b' ' + rng.below(95) as u8) as char;
                s.replace_range(i..i + len, &c.to_string());
            }
        }
        1 => {
            let i = boundary(rng, s);
            s.insert_str(i, rng.token(TOKENS));
        }
        2 | 3 => {
            // Replace a number (or any value) with an edge case.
            let ls = lines(s);
            let candidates: Vec<usize> = (0..ls.len()).filter(|&i| ls[i].contains('=')).collect();
            if let Some(&i) = candidates.get(rng.below(candidates.len())) {
                let mut l = ls[i].clone();
                let digits: Vec<usize> = l.char_indices().filter(|(_, c)| c.is_ascii_digit()).map(|(j, _)| j).collect();
                if !digits.is_empty() && rng.below(2) == 0 {
                    let start = digits[rng.below(digits.len())];
                    let end = l[start..].find(|c: char| !c.is_ascii_digit() && c != '.').map_or(l.len(), |e| start + e);
                    l.replace_range(start..end, rng.token(NUMBERS));
                } else if let Some(eq) = l.find('=') {
                    l = format!("{}= {}\n", &l[..eq], rng.token(NUMBERS));
                }
                let mut ls = ls;
                ls[i] = l;
                *s = ls.concat();
            }
        }
        4 => {
            let mut ls = lines(s);
            if !ls.is_empty() {
                ls.remove(rng.below(ls.len()));
            }
            *s = ls.concat();
        }
        5 => {
            let mut ls = lines(s);
            if !ls.is_empty() {
                let i = rng.below(ls.len());
                let l = ls[i].clone();
                ls.insert(rng.below(ls.len() + 1), l);
            }
            *s = ls.concat();
        }
        6 => {
            let mut ls = lines(s);
            if ls.len() > 1 {
                let (a, b) = (rng.below(ls.len()), rng.below(ls.len()));
                ls.swap(a, b);
            }
            *s = ls.concat();
        }
        7 => {
            // Swap the values of two `key = value` lines.
            let mut ls = lines(s);
            let kv: Vec<usize> = (0..ls.len()).filter(|&i| ls[i].contains(" = ")).collect();
            if kv.len() > 1 {
                let (a, b) = (kv[rng.below(kv.len())], kv[rng.below(kv.len())]);
                let (ka, va) = ls[a].split_once(" = ").map(|(k, v)| (k.to_string(), v.to_string())).unwrap();
                let (kb, vb) = ls[b].split_once(" = ").map(|(k, v)| (k.to_string(), v.to_string())).unwrap();
                ls[a] = format!("{ka} = {vb}");
                ls[b] = format!("{kb} = {va}");
                if !ls[a].ends_with('\n') {
                    ls[a].push('\n');
                }
                if !ls[b].ends_with('\n') {
                    ls[b].push('\n');
                }
            }
            *s = ls.concat();
        }
        8 => {
            let i = boundary(rng, s);
            s.truncate(i);
        }
        9 => {
            // Splice in a line from another seed (tables and keys from other topology kinds).
            let other = lines(rng.pick(pool).as_str());
            if !other.is_empty() {
                let l = other[rng.below(other.len())].clone();
                let mut ls = lines(s);
                ls.insert(rng.below(ls.len() + 1), l);
                *s = ls.concat();
            }
        }
        _ => {
            // Delete a random span.
            let a = boundary(rng, s);
            let b = boundary(rng, s);
            let (a, b) = (a.min(b), a.max(b));
            if b - a < 64 {
                s.replace_range(a..b, "");
            }
        }
    }
}

fn random_text(rng: &mut Rng) -> String {
    let n = rng.below(200);
    let mut s = String::new();
    for _ in 0..n {
        if rng.below(3) == 0 {
            s.push_str(rng.token(TOKENS));
        } else {
            s.push(char::from_u32(rng.below(0x250) as u32).unwrap_or('?'));
        }
    }
    s
}

/// Loads `text`; when it loads, summarizes and renders it too. Returns whether it loaded.
fn exercise(text: &str) -> bool {
    match load_str("fuzz.toml", text) {
        Ok(m) => {
            let s = summarize(&m);
            let _ = render_text(&s);
            let _ = render_dot(&m);
            let _ = serde_json::to_string(&s).unwrap();
            true
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.toml:"), "diagnostic without a location: {msg}");
            false
        }
    }
}

struct Report {
    runs: u64,
    loaded: u64,
    panics: Vec<String>,
}

fn run(iters: u64, seed: u64) -> Report {
    let pool = seeds();
    let mut rng = Rng::new(seed);
    let mut rep = Report { runs: 0, loaded: 0, panics: vec![] };
    let dir = std::env::temp_dir().join(format!("rocelab-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Panics are caught and reported below; keep the default hook from printing each one.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for i in 0..iters {
        let mut text = if rng.below(20) == 0 { random_text(&mut rng) } else { rng.pick(&pool).clone() };
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut text, &pool);
        }
        let raw = i % 64 == 0;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if raw {
                // Raw bytes through the file path: flip a byte to anything, UTF-8 or not.
                let mut bytes = text.clone().into_bytes();
                if !bytes.is_empty() {
                    let j = rng.below(bytes.len());
                    bytes[j] = rng.next() as u8;
                }
                let p = dir.join("raw.toml");
                std::fs::write(&p, &bytes).unwrap();
                load_file(&p).is_ok()
            } else {
                exercise(&text)
            }
        }));
        rep.runs += 1;
        match outcome {
            Ok(true) => rep.loaded += 1,
            Ok(false) => {}
            Err(e) => {
                let what = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let p = dir.join(format!("crash-{seed}-{i}.toml"));
                std::fs::write(&p, &text).unwrap();
                rep.panics.push(format!("iteration {i}: {what} (input saved to {})", p.display()));
            }
        }
    }
    std::panic::set_hook(hook);
    rep
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn check(iters: u64) {
    let seed = env_u64("ROCELAB_FUZZ_SEED").unwrap_or(0x5eed);
    let t0 = Instant::now();
    let rep = run(iters, seed);
    eprintln!(
        "fuzz_loader: {} executions ({} loaded) in {:.1} s, seed {seed:#x}, {} panics",
        rep.runs,
        rep.loaded,
        t0.elapsed().as_secs_f64(),
        rep.panics.len()
    );
    assert!(rep.panics.is_empty(), "the loader panicked:\n{}", rep.panics.join("\n"));
    // Mutations must not all be rejected, or the fuzzer would never reach validation.
    assert!(rep.loaded * 50 >= rep.runs, "only {} of {} mutated files loaded", rep.loaded, rep.runs);
}

#[test]
fn loader_never_panics() {
    check(env_u64("ROCELAB_FUZZ_ITERS").unwrap_or(3_000));
}

#[test]
#[ignore = "long run: cargo test --release -p rocelab-model --test fuzz_loader -- --ignored"]
fn loader_never_panics_long() {
    check(env_u64("ROCELAB_FUZZ_ITERS").unwrap_or(500_000));
}

#[test]
fn rng_is_reproducible() {
    let (mut a, mut b) = (Rng::new(7), Rng::new(7));
    assert!((0..100).all(|_| a.next() == b.next()));
}
