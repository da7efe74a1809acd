//! NVUE configuration -> fabric file (tests/data/nvue, sources in its SOURCE.md): the file
//! loads, NVUE's RoCE defaults and every explicit setting land where they belong, YAML and
//! JSON read alike, and bad input is an error with its place.

use rocelab_import::nvue;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/nvue").join(name)
}

fn load(toml: &str) -> rocelab_model::Model {
    rocelab_model::load_str("fabric.toml", toml).unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

#[test]
fn roce_lossless_gets_nvues_documented_defaults() {
    let imp = nvue::import(&data("roce-lossless-startup.yaml"), 100.0).unwrap();
    assert_eq!((imp.switch.as_str(), imp.ports, imp.classes), ("leaf01", 4, 3));
    assert!(imp.notes.iter().any(|n| n.contains("link state down left out: swp5")), "{:?}", imp.notes);
    let m = load(&imp.toml);
    // Four hosts on 400G links, MTU 9216.
    assert_eq!(m.hosts().count(), 4);
    let h = m.hosts().next().unwrap();
    assert_eq!(m.host_speed(h).gbps(), 400.0);
    assert!(imp.toml.contains("speed_gbps = 400\nmtu = 9216"), "{}", imp.toml);
    let qos = &m.qos;
    let by_name = |n: &str| qos.classes.iter().find(|c| c.name == n).unwrap_or_else(|| panic!("no class {n}"));
    // RoCE: switch priority 3 (DSCP 24-31, with 26) -> traffic class 3, PFC, DWRR 50 %, ECN
    // 150,000..1,500,000 B at 100 %.
    let roce = by_name("roce");
    assert_eq!((roce.priority, roce.queue, roce.lossless, roce.weight), (3, 3, true, 50));
    assert_eq!(roce.dscp, (24..32).collect::<Vec<u8>>());
    assert!(imp.toml.contains("ecn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 1 }"), "{}", imp.toml);
    // CNP: priority 6 (DSCP 48-55) -> traffic class 6, strict.
    let cnp = by_name("cnp");
    assert_eq!((cnp.priority, cnp.queue, cnp.lossless), (6, 6, false));
    assert_eq!(cnp.dscp, (48..56).collect::<Vec<u8>>());
    assert!(imp.toml.contains(
        "name = \"cnp\"\ndscp = [48, 49, 50, 51, 52, 53, 54, 55]\npriority = 6\nqueue = 6\nscheduler = \"strict\""
    ));
    // Everything else in traffic class 0 on priority 0, DWRR 50 %; the six priorities that
    // share it are named.
    let rest = by_name("tc0");
    assert_eq!((rest.priority, rest.queue, rest.dscp.len(), rest.weight), (0, 0, 48, 50));
    assert!(
        imp.notes.iter().any(|n| n.contains("switch priorities 1,2,4,5,7 share traffic class 0")),
        "{:?}",
        imp.notes
    );
    assert_eq!(qos.pfc_mask, 0b0000_1000);
    assert!(m.config.qos.pfc_watchdog.enabled);
    // Deterministic.
    assert_eq!(nvue::import(&data("roce-lossless-startup.yaml"), 100.0).unwrap().toml, imp.toml);
}

#[test]
fn the_guides_move_of_roce_to_priority_2_is_followed() {
    // Cumulus Linux 5.12 user guide, "change the RoCE lossless switch priority from 3 to 2",
    // as a second `set` document on top of the RoCE configuration.
    let base = std::fs::read_to_string(data("roce-lossless-startup.yaml")).unwrap();
    let moved = format!(
        "{base}- set:\n    qos:\n      pfc:\n        default-global:\n          switch-priority:\n            '2': {{}}\n      egress-queue-mapping:\n        default-global:\n          switch-priority:\n            '2':\n              traffic-class: 3\n            '3':\n              traffic-class: 0\n      mapping:\n        default-global:\n          trust: both\n          dscp:\n            '26':\n              switch-priority: 2\n"
    );
    let imp = nvue::from_text("moved.yaml", &moved, 100.0).unwrap();
    let m = load(&imp.toml);
    let roce = m.qos.classes.iter().find(|c| c.name == "roce").unwrap();
    // Priority 2 (DSCP 16-23 and 26), lossless, still on egress queue (traffic class) 3.
    assert_eq!((roce.priority, roce.queue, roce.lossless), (2, 3, true));
    assert_eq!(roce.dscp, (16..24).chain([26]).collect::<Vec<u8>>());
    assert_eq!(m.qos.pfc_mask, 0b0000_0100);
    // Priority 3's other DSCPs fall into traffic class 0.
    let rest = m.qos.classes.iter().find(|c| c.name == "tc0").unwrap();
    assert!(rest.dscp.contains(&24) && !rest.dscp.contains(&26));
    assert!(imp.notes.iter().any(|n| n.contains("trust both")), "{:?}", imp.notes);
}

#[test]
fn yaml_and_json_of_one_configuration_import_alike() {
    // `nv config show` (YAML) and `nv config show -o json` print the same tree.
    let yaml = std::fs::read_to_string(data("roce-lossless-startup.yaml")).unwrap();
    let json = serde_json::to_string_pretty(&nvue::yaml_tree("c", &yaml).unwrap()).unwrap();
    assert!(json.starts_with('['));
    let (a, b) = (nvue::from_text("c", &yaml, 100.0).unwrap(), nvue::from_text("c", &json, 100.0).unwrap());
    assert_eq!(a.toml, b.toml);
}

#[test]
fn a_published_applied_configuration_without_roce_imports() {
    // Cumulus VX 5.5.1 as NVIDIA's automation workshop prints it: RoCE off, PCP trust,
    // switch priority n -> traffic class n, DWRR 12/13 %, ECN on traffic class 0 only, no
    // swp port configured.
    let imp = nvue::import(&data("air-workshop-applied.json"), 100.0).unwrap();
    assert_eq!((imp.switch.as_str(), imp.ports, imp.classes), ("cumulus", 2, 8));
    assert!(imp.notes.iter().any(|n| n.contains("no swp interface is configured")), "{:?}", imp.notes);
    assert!(imp.notes.iter().any(|n| n.contains("traffic pools (default-lossy 100%)")), "{:?}", imp.notes);
    assert!(imp.toml.starts_with("# Imported from ") && imp.toml.contains("(NVUE configuration, Cumulus Linux 5.5.1)"));
    let m = load(&imp.toml);
    assert_eq!(m.config.qos.trust, rocelab_model::config::Trust::Pcp);
    assert_eq!(m.qos.pfc_mask, 0);
    for c in &m.qos.classes {
        assert_eq!((c.queue, c.weight, c.lossless), (c.priority, if c.priority % 2 == 0 { 12 } else { 13 }, false));
        assert_eq!(c.dscp, (c.priority * 8..c.priority * 8 + 8).collect::<Vec<u8>>());
    }
    assert_eq!(imp.toml.matches("ecn = ").count(), 1);
    assert!(!m.config.qos.pfc_watchdog.enabled);
}

#[test]
fn bad_configurations_are_errors_with_their_place() {
    let cases = [
        (
            "- set:\n    interface:\n      swp1:\n        link:\n          speed: fast\n        type: swp\n",
            "swp1 link speed `fast`",
        ),
        ("- set:\n    qos:\n      mapping:\n        default-global:\n          trust: all\n", "trust `all`"),
        ("- set:\n\tqos: {}\n", "c.yaml:2:"),
        (
            "{\"qos\": {\"mapping\": {\"default-global\": {\"dscp\": {\"64\": {\"switch-priority\": 1}}}}}}",
            "`64` is out of range",
        ),
        (
            "{\"qos\": {\"mapping\": {\"default-global\": {\"dscp\": {\"26\": {\"switch-priority\": 6}}}}}}",
            "same traffic class 6",
        ),
        ("[1, 2]", "not a `header:` or `set:` document"),
        ("{\"qos\": ", "not JSON"),
    ];
    for (text, want) in cases {
        let e = nvue::from_text("c.yaml", text, 100.0).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
        assert!(e.contains("= help:"), "{e}");
    }
    assert!(nvue::from_text("c.yaml", "a: 1\n", 0.0).unwrap_err().to_string().contains("out of range"));
}

#[test]
fn mutated_configurations_never_panic() {
    // Seeded byte mutations (substitute, delete, duplicate a run) of both fixtures, YAML and
    // JSON: every result is an import or an error, never a panic.
    let seeds = [
        std::fs::read(data("roce-lossless-startup.yaml")).unwrap(),
        std::fs::read(data("air-workshop-applied.json")).unwrap(),
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1) as u64) as usize
    };
    let alphabet = b" -:\"'[]{},#\t\n0123GGswp";
    let (mut ok, mut err) = (0, 0);
    for k in 0..2000 {
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
        match nvue::from_text("m", &String::from_utf8_lossy(&v), 100.0) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    // Both outcomes occur: the mutations reach past the first parse error.
    assert!(ok > 100 && err > 100, "{ok} imported, {err} refused");
}
