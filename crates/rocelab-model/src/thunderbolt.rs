//! Thunderbolt host-to-host links (`link = "thunderbolt4" | "thunderbolt5"` on an explicit
//! topology's link): the homelab's network, two workstations joined by one cable, no switch.
//!
//! A preset sets the link's data rate: the PCIe data rate the Thunderbolt tunnel carries, 32
//! Gb/s for Thunderbolt 4 (Intel's Thunderbolt 4 specification: 40 Gb/s link, 32 Gb/s PCIe)
//! and 64 Gb/s for Thunderbolt 5 (Intel's Thunderbolt 5 technology brief: 80 Gb/s symmetric,
//! 120/40 Gb/s Bandwidth Boost, 64 Gb/s PCIe). The routing tables and both engines assume a
//! host attaches to a switch, so the loader carries the cable through a two-port pass-through
//! node of its own, named `tb:<a>-<b>`: the bandwidth is the cable's, and each packet is
//! serialized once more at it (a 4 KiB packet: 0.5 µs at 64 Gb/s), which a real cable does
//! not do.

/// A Thunderbolt preset's data rate, Gb/s, by the name a link gives.
pub fn rate_gbps(name: &str) -> Option<f64> {
    match name {
        "thunderbolt4" | "tb4" => Some(32.0),
        "thunderbolt5" | "tb5" => Some(64.0),
        _ => None,
    }
}

/// The names `link` takes.
pub const NAMES: &[&str] = &["thunderbolt4", "thunderbolt5"];

/// The pass-through node's name for a cable from `a` to `b`.
pub fn bridge_name(a: &str, b: &str) -> String {
    format!("tb:{a}-{b}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_presets_are_the_pcie_data_rates() {
        assert_eq!(super::rate_gbps("thunderbolt4"), Some(32.0));
        assert_eq!(super::rate_gbps("thunderbolt5"), Some(64.0));
        assert_eq!(super::rate_gbps("usb4"), None);
    }
}
