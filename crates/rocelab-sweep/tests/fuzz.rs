//! A mangled sweep spec is an error naming the spec, never a panic: byte-level mutations of a
//! valid spec (keys, selectors, values) through `Sweep::load`, which parses the spec and sets
//! the first point's values in the fabric file.

use std::path::PathBuf;

const SPEC: &str = "fabric = \"fabric.toml\"\nonly = [\"incast\"]\n[grid]\n\"qos.class[roce].ecn.kmin_bytes\" = [50000, 150000]\n\"qos.class[0].weight\" = [10]\n\"nic.mtu\" = [4096]\n";

#[test]
fn a_mangled_spec_is_an_error_never_a_panic() {
    let d = std::env::temp_dir().join(format!("rocelab-sweep-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let ex = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-16gpu-workloads.toml");
    std::fs::copy(ex, d.join("fabric.toml")).unwrap();
    let spec = d.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let good = rocelab_sweep::Sweep::load(&spec).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(good.points.len(), 2);
    let mut rng = rocelab_sim::rng::Rng::new(0xF022, 0);
    let mut next = || rng.next_u64();
    let (mut ok, mut err) = (0, 0);
    for _ in 0..1500 {
        let mut b = SPEC.as_bytes().to_vec();
        for _ in 0..1 + next() % 3 {
            let i = (next() % b.len() as u64) as usize;
            match next() % 3 {
                0 => b[i] = b"[]\".=0a9\n,x"[(next() % 11) as usize],
                1 => {
                    b.remove(i);
                }
                _ => b.insert(i, b"[]\".=0a9\n,x"[(next() % 11) as usize]),
            }
        }
        std::fs::write(&spec, &b).unwrap();
        match rocelab_sweep::Sweep::load(&spec) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(e.contains("spec.toml"), "{e}");
                err += 1;
            }
        }
    }
    println!("{ok} mangled specs loaded, {err} refused");
    assert!(ok > 0 && err > 0);
    let _ = std::fs::remove_dir_all(&d);
}
