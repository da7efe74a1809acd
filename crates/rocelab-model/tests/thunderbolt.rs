//! Thunderbolt host-to-host links: the preset sets the PCIe data rate, the cable joins two
//! hosts, and a wrong use is a located error.

fn fabric(link: &str) -> String {
    format!(
        r#"[fabric]
name = "tb"
[[topology.explicit.node]]
name = "ws0"
kind = "host"
[[topology.explicit.node]]
name = "ws1"
kind = "host"
[[topology.explicit.link]]
a = "ws0"
b = "ws1"
{link}
"#
    )
}

#[test]
fn a_thunderbolt_cable_joins_two_hosts_at_its_pcie_data_rate() {
    for (name, gbps) in [("thunderbolt4", 32.0), ("thunderbolt5", 64.0)] {
        let m = rocelab_model::load_str("tb.toml", &fabric(&format!("link = \"{name}\""))).unwrap();
        let ws0 = m.node_by_name("ws0").unwrap();
        let port = m.node(ws0).first_port_id();
        assert_eq!(m.ports[port.idx()].speed.gbps(), gbps, "{name}");
        // The cable's pass-through node, and nothing else between the two.
        let peer = m.ports[m.ports[port.idx()].peer.idx()].node;
        assert_eq!(m.node(peer).name, "tb:ws0-ws1");
        assert_eq!(m.nodes.len(), 3);
    }
}

#[test]
fn a_wrong_thunderbolt_link_is_a_located_error() {
    let e = rocelab_model::load_str("tb.toml", &fabric("link = \"usb4\"")).unwrap_err().to_string();
    assert!(e.contains("link[0].link") && e.contains("unknown link preset `usb4`"), "{e}");
    let e = rocelab_model::load_str("tb.toml", &fabric("link = \"thunderbolt5\"\nspeed_gbps = 40"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("speed_gbps = 40 beside link"), "{e}");
    // Two hosts without a preset still need a switch between them.
    let e = rocelab_model::load_str("tb.toml", &fabric("speed_gbps = 100")).unwrap_err().to_string();
    assert!(e.contains("joins two hosts"), "{e}");
}
