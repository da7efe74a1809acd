//! `config_db.json` -> fabric file, on SONiC's own rendered sample configs (tests/data/sonic,
//! sources in its SOURCE.md): the file loads, and every imported value is where it belongs.

use rocelab_import::sonic;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sonic").join(name)
}

#[test]
fn sonic_sample_config_becomes_a_fabric_that_loads() {
    let imp = sonic::import(&data("config_db.json")).unwrap();
    assert_eq!((imp.switch.as_str(), imp.ports, imp.classes), ("leaf1", 4, 7));
    let model = rocelab_model::load_str("fabric.toml", &imp.toml).unwrap_or_else(|e| panic!("{e}\n{}", imp.toml));
    // One switch, four hosts at 100G, MTU 9100, 5 m cables.
    assert_eq!(model.hosts().count(), 4);
    let h = model.hosts().next().unwrap();
    assert_eq!(model.host_speed(h).gbps(), 100.0);
    // AZURE: DSCP 3 -> TC 3 and DSCP 4 -> TC 4, both lossless (pfc_enable "3,4"), each on its
    // own queue with scheduler.1 (DWRR 15) and AZURE_LOSSLESS ECN (1,048,576..2,097,152 B, 5 %).
    let qos = &model.qos;
    let by_prio =
        |p: u8| qos.classes.iter().find(|c| c.priority == p).unwrap_or_else(|| panic!("no class on priority {p}"));
    for p in [3u8, 4] {
        let c = by_prio(p);
        assert!(c.lossless, "priority {p}");
        assert_eq!((c.queue, c.weight), (p, 15));
        assert_eq!(c.dscp, vec![p]);
    }
    assert!(
        imp.toml.contains(
            "ecn = { kmin_bytes = 1048576, kmax_bytes = 2097152, pmax = 0.05 }   # WRED_PROFILE|AZURE_LOSSLESS"
        ),
        "{}",
        imp.toml
    );
    // DSCP 48 -> TC 6 is the CNP class; 46 -> TC 5, 5 -> TC 2, 8 -> TC 0; the 58 others -> TC 1.
    assert_eq!(by_prio(6).name, "cnp");
    assert_eq!(by_prio(5).dscp, vec![46]);
    assert_eq!(by_prio(1).dscp.len(), 64 - 6);
    assert_eq!((by_prio(2).dscp.clone(), by_prio(0).dscp.clone()), (vec![5], vec![8]));
    assert!(!by_prio(1).lossless && by_prio(1).weight == 14);
    assert_eq!(qos.pfc_mask, 0b0001_1000);
    // Buffers: the largest pool, α = 2^dynamic_th.
    assert!(imp.toml.contains("buffer_bytes = 13945824"), "{}", imp.toml);
    assert!(imp
        .toml
        .contains("ingress_lossless_alpha = 128   # BUFFER_PROFILE|ingress_lossless_profile dynamic_th = 7"));
    assert!(imp.toml.contains("egress_lossy_alpha = 8   # BUFFER_PROFILE|q_lossy_profile dynamic_th = 3"));
    // The PFC watchdog as configured; the shared headroom pool is a note.
    assert!(imp.toml.contains("[qos.pfc_watchdog]   # PFC_WD\nenabled = true\ndetection_ms = 200\nrestoration_ms = 200\npoll_ms = 200\naction = \"drop\""), "{}", imp.toml);
    assert!(imp.notes.iter().any(|n| n.contains("shared headroom pool (xoff 1032192 B)")), "{:?}", imp.notes);
    // Deterministic: the same input gives the same bytes.
    assert_eq!(sonic::import(&data("config_db.json")).unwrap().toml, imp.toml);
}

#[test]
fn ports_that_disagree_are_noted_and_a_broken_reference_is_an_error() {
    let text = std::fs::read_to_string(data("config_db.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["PORT_QOS_MAP"]["Ethernet16"]["pfc_enable"] = "3".into();
    v["PORT"]["Ethernet8"]["admin_status"] = "down".into();
    let imp = sonic::from_json("c.json", &v.to_string()).unwrap();
    assert_eq!(imp.ports, 3);
    assert!(
        imp.notes
            .iter()
            .any(|n| n == "ports differ in pfc_enable: `3,4` (most ports) is imported; also `3` on 1 port(s)"),
        "{:?}",
        imp.notes
    );
    assert!(imp.notes.iter().any(|n| n.contains("admin_status down left out: Ethernet8")), "{:?}", imp.notes);
    v["QUEUE"]["Ethernet4|3"]["scheduler"] = "[SCHEDULER|nope]".into();
    v["QUEUE"]["Ethernet12|3"]["scheduler"] = "[SCHEDULER|nope]".into();
    v["QUEUE"]["Ethernet16|3"]["scheduler"] = "[SCHEDULER|nope]".into();
    let e = sonic::from_json("c.json", &v.to_string()).unwrap_err().to_string();
    assert!(e.contains("SCHEDULER|nope, which is not defined"), "{e}");
    let e = sonic::from_json("c.json", "{\n  \"PORT\": [\n").unwrap_err().to_string();
    assert!(e.starts_with("error: c.json:3: not JSON"), "{e}");
}

/// Mutations of the sample (seeded, dependency-free): the importer never panics, and every
/// file it writes loads.
#[test]
fn mutated_configs_never_panic() {
    let seed = std::fs::read_to_string(data("config_db.json")).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1) as u64) as usize
    };
    let alphabet = b"0123456789-,|[]{}\":. aAeEz";
    let mut loaded = 0;
    let mut failed_load: Vec<String> = Vec::new();
    for _ in 0..400 {
        let mut v = seed.clone().into_bytes();
        for _ in 0..1 + next(4) {
            let i = next(v.len());
            match next(3) {
                0 => v[i] = alphabet[next(alphabet.len())],
                1 => {
                    let n = next(30).min(v.len() - i);
                    v.drain(i..i + n);
                }
                _ => v.splice(i..i, b"99999999999999999999".iter().copied()).for_each(drop),
            }
        }
        let text = String::from_utf8_lossy(&v);
        let out = std::panic::catch_unwind(|| sonic::from_json("m.json", &text));
        let imp = out.unwrap_or_else(|_| panic!("panicked on {text}"));
        if let Ok(imp) = imp {
            let r = std::panic::catch_unwind(|| rocelab_model::load_str("fabric.toml", &imp.toml).is_ok());
            if r.expect("load panicked") {
                loaded += 1;
            } else {
                failed_load.push(rocelab_model::load_str("fabric.toml", &imp.toml).unwrap_err().to_string());
            }
        }
    }
    eprintln!("sonic mutations: {loaded} of 400 imported and loaded; {} imported and did not load", failed_load.len());
    // An import that succeeds writes a file that loads.
    assert!(failed_load.is_empty(), "{failed_load:?}");
    assert!(loaded > 0, "no mutation imported and loaded");
}
