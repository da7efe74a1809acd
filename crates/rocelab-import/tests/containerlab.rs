//! containerlab topologies from containerlab's own lab examples (tests/data/containerlab).

use rocelab_import::containerlab;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/containerlab").join(name)
}

#[test]
fn clos01_imports_and_loads() {
    let imp = containerlab::import(&data("clos01.clab.yml"), 400.0).unwrap();
    assert_eq!((imp.name.as_str(), imp.switches, imp.hosts, imp.links), ("clos01", 3, 2, 4));
    let m = rocelab_model::load_str("fabric.toml", &imp.toml).unwrap();
    assert_eq!(m.hosts().count(), 2);
    assert!(m.hosts().all(|h| m.host_speed(h).gbps() == 400.0));
    assert!(imp.toml.contains("a = \"client1\"\nb = \"leaf1\""), "{}", imp.toml);
}

#[test]
fn dual_homed_servers_become_one_host_per_interface() {
    // Cumulus EVPN multihoming lab: 8 CVX switches, 6 servers with eth1/eth2 to an MLAG pair,
    // 28 links (8 spine-leaf, 4 spine-border, 12 server, 4 MLAG peer links).
    let imp = containerlab::import(&data("symm-mlag.clab.yml"), 100.0).unwrap();
    assert_eq!((imp.switches, imp.hosts, imp.links), (8, 12, 28));
    let m = rocelab_model::load_str("fabric.toml", &imp.toml).unwrap();
    assert_eq!(m.hosts().count(), 12);
    assert!(imp.toml.contains("name = \"server01-eth1\"\nkind = \"host\"\ngpu_node = \"server01\""), "{}", imp.toml);
    assert!(imp.notes.iter().any(|n| n.contains("every link is 100 Gb/s")));
    // Deterministic.
    assert_eq!(containerlab::import(&data("symm-mlag.clab.yml"), 100.0).unwrap().toml, imp.toml);
}

/// Mutations of the examples never panic the hand-written YAML reader; every file it writes
/// loads (it checks that itself before returning).
#[test]
fn mutated_topologies_never_panic() {
    let seeds = [std::fs::read(data("clos01.clab.yml")).unwrap(), std::fs::read(data("symm-mlag.clab.yml")).unwrap()];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) % n.max(1) as u64) as usize
    };
    let alphabet = b" -:\"'[],#\t\nabz01{}";
    let mut ok = 0;
    for k in 0..1000 {
        let mut v = seeds[k % 2].clone();
        for _ in 0..1 + next(4) {
            let i = next(v.len());
            match next(3) {
                0 => v[i] = alphabet[next(alphabet.len())],
                1 => {
                    let n = next(20).min(v.len() - i);
                    v.drain(i..i + n);
                }
                _ => {
                    let n = next(40).min(v.len() - i);
                    let chunk = v[i..i + n].to_vec();
                    let at = next(v.len());
                    v.splice(at..at, chunk);
                }
            }
        }
        let text = String::from_utf8_lossy(&v).into_owned();
        let r = std::panic::catch_unwind(|| containerlab::from_yaml("m.yml", &text, 100.0));
        if r.unwrap_or_else(|_| panic!("panicked on:\n{text}")).is_ok() {
            ok += 1;
        }
    }
    assert!(ok > 0);
}
