//! The collective scenario's bound on a dual-port NIC: every port of the NICs the channels
//! cross (it counted the NIC once at one port's rate and reported 150 % of it).

use rocelab_model::load_str;

#[test]
fn a_dual_port_nics_collective_stays_within_both_ports() {
    // 2 GPU servers, each one NIC with two 200G ports to a switch (2 × 200G).
    let mut t = String::from("[fabric]\nname = \"dual-port\"\n[topology.explicit]\n");
    t += "[[topology.explicit.node]]\nname = \"sw\"\nkind = \"switch\"\n";
    for h in 0..2 {
        t += &format!(
            "[[topology.explicit.node]]\nname = \"gpu{h}-nic0\"\nkind = \"host\"\ngpu_node = \"gpu{h}\"\nrail = 0\n"
        );
    }
    for h in 0..2 {
        for _ in 0..2 {
            t += &format!(
                "[[topology.explicit.link]]\na = \"gpu{h}-nic0\"\nb = \"sw\"\nspeed_gbps = 200\nlength_m = 3\n"
            );
        }
    }
    t += "[[scenario]]\nkind = \"collective\"\nname = \"ar\"\nsize_bytes = 67108864\n";
    let m = load_str("dual-port.toml", &t).unwrap_or_else(|e| panic!("{e}"));
    let r = rocelab_scenario::run(&m, &m.config.scenario[0], "scenario[0]", 1).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(r.params["busbw_bound_gbps"], 400.0);
    let share = r.headline.value.unwrap();
    let busbw = r.metrics["busbw_gbytes_per_s"].unwrap();
    // The share is busbw over both ports, never above 1; a 64 MiB ring is bandwidth-bound.
    assert!((share - busbw * 8.0 / 400.0).abs() < 1e-9, "{share} vs {busbw} GB/s");
    assert!(share > 0.4 && share <= 1.0, "{}", r.render_text());
}
