//! TOP004 on rail-optimized fabrics built by the generator and on a hand-cabled dual-ToR.

use rocelab_lint::{lint, Finding, Options};

fn rail(extra: &str) -> String {
    format!(
        "[topology.rail_optimized]\ngpu_nodes = 4\nrails = 1\nnodes_per_su = 2\n{extra}\n\
         host_link = {{ speed_gbps = 200, length_m = 3 }}\nleaf_link = {{ speed_gbps = 200, length_m = 20 }}\n"
    )
}

fn top004(text: &str) -> Vec<Finding> {
    let m = rocelab_model::load_str("t.toml", text).unwrap_or_else(|e| panic!("fixture must load:\n{e}"));
    lint(&m, "t.toml", text, &Options::default()).findings.into_iter().filter(|f| f.code == "TOP004").collect()
}

#[test]
fn one_plane_over_a_dual_tor_is_flagged_at_the_key_with_the_tors_named() {
    let text = rail("dual_tor = true");
    let fs = top004(&text);
    assert_eq!(fs.len(), 1, "{fs:?}");
    let f = &fs[0];
    assert_eq!((f.path.as_str(), f.line), ("topology.rail_optimized.dual_tor", 5));
    assert!(
        f.message.contains("su0-rail0-tor0, su0-rail0-tor1") || f.message.contains("su1-rail0-tor0, su1-rail0-tor1"),
        "{}",
        f.message
    );
    assert!(f.hint.contains("planes = 2"), "{}", f.hint);
}

#[test]
fn two_planes_and_single_homed_nics_are_quiet() {
    assert!(top004(&rail("dual_tor = true\nplanes = 2")).is_empty());
    assert!(top004(&rail("")).is_empty());
    // Both ports to one ToR: nothing to choose between.
    assert!(top004(&rail("ports_per_nic = 2")).is_empty());
}

#[test]
fn a_hand_cabled_dual_tor_under_shared_spines_is_flagged_too() {
    let mut t = String::from("[topology.explicit]\n");
    for s in ["tor0", "tor1", "tor2", "tor3", "spine0", "spine1"] {
        t += &format!("[[topology.explicit.node]]\nname = \"{s}\"\nkind = \"switch\"\n");
    }
    let mut links = Vec::new();
    for (h, pair) in [("a", ["tor0", "tor1"]), ("b", ["tor2", "tor3"])] {
        t += &format!("[[topology.explicit.node]]\nname = \"{h}\"\nkind = \"host\"\n");
        links.extend(pair.iter().map(|tor| (h.to_string(), tor.to_string())));
    }
    for tor in ["tor0", "tor1", "tor2", "tor3"] {
        for sp in ["spine0", "spine1"] {
            links.push((tor.to_string(), sp.to_string()));
        }
    }
    for (a, b) in links {
        t += &format!("[[topology.explicit.link]]\na = \"{a}\"\nb = \"{b}\"\nspeed_gbps = 200\n");
    }
    let fs = top004(&t);
    assert_eq!(fs.len(), 1, "{fs:?}");
    assert_eq!(fs[0].path, "topology.explicit");
}

#[test]
fn the_shipped_hpn_example_is_clean() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hpn-dual-plane.toml");
    let r = rocelab_lint::lint_file(&p, &Options::default()).expect("example loads");
    assert!(r.findings.is_empty(), "{:?}", r.findings.iter().map(|f| &f.message).collect::<Vec<_>>());
}
