//! Fabrics the collective tests share.

use rocelab_model::{load_str, Model};

/// 8 hosts on 2 leaves at 100G, 2 spines at 400G: non-blocking for a ring (each host sends
/// one stream and receives one); `extra` is appended to the file (faults, NIC settings).
pub fn ring8(extra: &str) -> Model {
    let text = format!(
        r#"[fabric]
name = "ring8"
[topology.leaf_spine]
leaves = 2
spines = 2
hosts_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = 400, length_m = 30 }}
{extra}"#
    );
    load_str("ring8.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}
