//! A dependency-free fuzz of every text parser: seeded pseudo-random bytes, and mutations of
//! the real fixtures (byte flips, deletions, duplications, splices, digit and separator
//! storms). The property: no parser panics, and every error names a line inside the input.
//! `ROCELAB_FUZZ_ITERS` raises the iteration count (default 3,000 per parser and corpus).

use rocelab_doctor::parse::{cumulus, ethtool, gpu, mlnx_qos, nccl, nccl_log, rdma, sonic, sysfs, ParseError};
use std::path::PathBuf;

/// xorshift64*: tiny, seeded, good enough to shake parsers.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const ALPHABET: &[u8] = b"0123456789,:-/ \t\n\r#abcdefghijklmnopqrstuvwxyzNA%.()_PFCRxTx|\xc3\xa9\xff\x00";

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(8) {
        let len = v.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] = ALPHABET[rng.below(ALPHABET.len())];
            }
            1 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below(40).min(len - i);
                v.drain(i..i + n);
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below(80).min(len - i);
                let chunk: Vec<u8> = v[i..i + n].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, chunk);
            }
            3 => {
                let at = rng.below(len + 1);
                let s: Vec<u8> = (0..rng.below(30)).map(|_| b"0123456789,"[rng.below(11)]).collect();
                v.splice(at..at, s);
            }
            4 if len > 0 => {
                // Truncate: a dump cut short.
                v.truncate(rng.below(len));
            }
            5 => {
                let at = rng.below(len + 1);
                v.splice(at..at, b"99999999999999999999999".iter().copied());
            }
            _ => {
                let at = rng.below(len + 1);
                let s: Vec<u8> = (0..rng.below(20)).map(|_| ALPHABET[rng.below(ALPHABET.len())]).collect();
                v.splice(at..at, s);
            }
        }
    }
    v
}

type Parser = fn(&str) -> Result<(), ParseError>;

fn parsers() -> Vec<(&'static str, Parser)> {
    vec![
        ("ethtool -S", |t| ethtool::parse_stats(t).map(drop)),
        ("ethtool -i", |t| ethtool::parse_driver_info(t).map(drop)),
        ("rdma statistic", |t| rdma::parse_statistic_show(t).map(drop)),
        ("hw counter file", |t| rdma::parse_counter_file("x", t).map(drop)),
        ("mlnx_qos", |t| mlnx_qos::parse(t).map(drop)),
        ("sysfs int", |t| sysfs::parse_int_file("x", t).map(drop)),
        ("sysfs trust", |t| sysfs::parse_trust_file(t).map(drop)),
        ("nccl", |t| nccl::parse(t, None).map(drop)),
        ("nccl streamed", |t| nccl::parse_reader(t.as_bytes(), None).map(drop)),
        ("sonic pfc", |t| sonic::parse_pfc_counters(t).map(drop)),
        ("sonic queue", |t| sonic::parse_queue_counters(t).map(drop)),
        ("sonic pg", |t| sonic::parse_pg_watermark(t).map(drop)),
        ("sonic pfcwd", |t| rocelab_doctor::parse::sonic_pfcwd::storm_samples(t).map(drop)),
        ("cumulus roce", |t| cumulus::parse_roce_counters(t).map(drop)),
        ("cumulus watchdog", |t| cumulus::parse_pfc_watchdog(t).map(drop)),
        ("arista queue", |t| rocelab_doctor::parse::arista::queue_samples(t).map(drop)),
        // Every registered switch source, as the dump reader calls it (all run; the first
        // error is the one checked).
        ("switch sources", |t| {
            let mut first = Ok(());
            for s in rocelab_doctor::sources::SWITCH_SOURCES {
                let r = rocelab_doctor::sources::read_path(&s.path.replace('*', "x"), t, "leaf1", 3).map(drop);
                if first.is_ok() {
                    first = r;
                }
            }
            first
        }),
        ("meta.json", |t| rocelab_doctor::dump::parse_meta(t).map(drop)),
        ("nvidia-smi topo", |t| gpu::parse_topo(t).map(drop)),
        ("modules", |t| {
            gpu::parse_modules(t);
            Ok(())
        }),
        ("nccl log", |t| {
            nccl_log::parse(t);
            Ok(())
        }),
    ]
}

fn corpus() -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parsers");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    // Real public outputs too (NCCL WARN lines, the old error column, SONiC queue counters).
    let public = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/public");
    let mut more: Vec<PathBuf> = std::fs::read_dir(&public).unwrap().map(|e| e.unwrap().path()).collect();
    more.sort();
    files.extend(more);
    let mut c: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let dump = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/healthy/gpu01-1796204467000");
    c.push(std::fs::read(dump.join("netdev/ens3np0/ethtool-S.txt")).unwrap());
    c.push(std::fs::read(dump.join("meta.json")).unwrap());
    c
}

#[test]
fn parsers_never_panic_and_errors_point_inside_the_input() {
    let iters: usize = std::env::var("ROCELAB_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(3_000);
    let corpus = corpus();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut execs = 0u64;
    for (name, parse) in parsers() {
        let check = |bytes: &[u8]| {
            let text = String::from_utf8_lossy(bytes);
            let lines = text.lines().count();
            let res = std::panic::catch_unwind(|| parse(&text));
            match res {
                Err(_) => panic!("{name} panicked on {:?}", text),
                Ok(Err(e)) => {
                    assert!(e.line <= lines.max(1) + 1, "{name}: error line {} beyond {lines} lines: {e}", e.line)
                }
                Ok(Ok(())) => {}
            }
        };
        for _ in 0..iters {
            // Pure noise, then mutations of each real fixture.
            let noise: Vec<u8> = (0..rng.below(300)).map(|_| ALPHABET[rng.below(ALPHABET.len())]).collect();
            check(&noise);
            let seed = &corpus[rng.below(corpus.len())];
            check(&mutate(&mut rng, seed));
            execs += 2;
        }
    }
    eprintln!("fuzz: {execs} parser executions");
}
