//! `ethtool -S <netdev>` (statistics) and `ethtool -i <netdev>` (driver information).
//!
//! `-S` prints `NIC statistics:` and then one `     name: value` line per counter; on mlx5
//! the per-priority PFC counters (`rx_prio3_pause`, `tx_prio3_pause_duration`, ...) exist
//! only for priorities with PFC enabled, so a missing counter means "not counted", not zero.

use super::{excerpt, parse_count, ParseError};
use serde::Serialize;
use std::collections::BTreeMap;

const SRC_S: &str = "ethtool -S";
const SRC_I: &str = "ethtool -i";

/// Counters of one netdev, by their driver names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EthtoolStats {
    pub counters: BTreeMap<String, u64>,
    /// The text had no `NIC statistics:` header: a filtered copy (`ethtool -S eth0 | grep
    /// pause`), so a counter it does not list is unknown, not absent.
    pub filtered: bool,
    /// What the text holds that was not taken at face value (a last line cut short, a
    /// counter printed twice), in words; the dump reader turns them into notes.
    pub warnings: Vec<String>,
}

impl EthtoolStats {
    pub fn get(&self, name: &str) -> Option<u64> {
        self.counters.get(name).copied()
    }

    /// Priorities (0-7) for which the driver reports per-priority pause counters.
    pub fn pause_priorities(&self) -> Vec<u8> {
        (0u8..8)
            .filter(|p| {
                self.counters.contains_key(&format!("rx_prio{p}_pause"))
                    || self.counters.contains_key(&format!("tx_prio{p}_pause"))
            })
            .collect()
    }
}

/// One `name: value` line, or why it is not one.
fn counter_line(line: &str) -> Result<(&str, u64), String> {
    // Counter names never contain ": ", values never contain ':'; split on the last colon.
    let Some((name, value)) = line.rsplit_once(':') else {
        return Err(format!("expected `name: value`, found `{}`", excerpt(line)));
    };
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("bad counter name in `{}`", excerpt(line)));
    }
    match parse_count(value) {
        Some(v) => Ok((name, v)),
        None => Err(format!("counter `{name}` has a non-numeric value `{}`", excerpt(value.trim()))),
    }
}

/// Parses `ethtool -S` output, whole or filtered (`| grep pause`: counter lines without the
/// header). A text that does not end in a newline was cut short (ethtool ends every line), so
/// its last line is not trusted: a value cut mid-number would read as a smaller one. A
/// counter printed twice keeps its first value and is reported.
pub fn parse_stats(text: &str) -> Result<EthtoolStats, ParseError> {
    let mut stats = EthtoolStats::default();
    let mut first_line: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen_header = false;
    let cut = !text.is_empty() && !text.ends_with('\n');
    let total = text.lines().count();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if cut && n == total {
            stats.warnings.push(format!(
                "line {n} is cut short (no newline at the end of the file): `{}` not used",
                excerpt(line)
            ));
            break;
        }
        if seen_header && line == "NIC statistics:" {
            // Another output glued after the first (`ethtool -S eth0 >> file` run twice):
            // mixing two instants would be wrong, so the first one is kept and this is said.
            let more = text.lines().skip(i).filter(|l| l.trim() == "NIC statistics:").count();
            stats.warnings.push(format!(
                "{} `ethtool -S` outputs glued together (a second `NIC statistics:` at line {n}): the first is used, lines {n}-{total} are not",
                more + 1
            ));
            break;
        }
        if !seen_header {
            if line == "NIC statistics:" {
                seen_header = true;
                continue;
            }
            if counter_line(line).is_err() {
                return Err(ParseError::new(
                    SRC_S,
                    n,
                    format!("expected `NIC statistics:` or a `name: value` counter line, found `{}`", excerpt(line)),
                ));
            }
            seen_header = true;
            stats.filtered = true;
            stats.warnings.push(
                "no `NIC statistics:` header: a filtered copy (e.g. `ethtool -S <if> | grep pause`); only the counters it lists are read".into(),
            );
        }
        let (name, v) = counter_line(line).map_err(|m| ParseError::new(SRC_S, n, m))?;
        if let Some(prev) = first_line.get(name) {
            let had = stats.counters[name];
            stats.warnings.push(if had == v {
                format!("counter `{name}` is printed twice (lines {prev} and {n}) with the same value")
            } else {
                format!("counter `{name}` is printed twice with different values (line {prev}: {had}, line {n}: {v}); the first is used")
            });
            continue;
        }
        first_line.insert(name.to_string(), n);
        stats.counters.insert(name.to_string(), v);
    }
    if !seen_header {
        return Err(ParseError::new(SRC_S, 0, "empty output (no `NIC statistics:` header and no counter)"));
    }
    Ok(stats)
}

/// `ethtool -i`: driver name and version, firmware version, PCI address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DriverInfo {
    pub driver: String,
    pub version: String,
    /// As printed, e.g. `28.39.1002 (MT_0000000834)`.
    pub firmware_version: String,
    pub bus_info: String,
}

impl DriverInfo {
    /// The firmware release without the board id: `28.39.1002`.
    pub fn firmware(&self) -> &str {
        self.firmware_version.split_whitespace().next().unwrap_or("")
    }

    /// The board id (PSID) in parentheses, if printed: `MT_0000000834`. Firmware versions are
    /// only comparable between boards of one kind.
    pub fn board_id(&self) -> Option<&str> {
        let s = self.firmware_version.split_once('(')?.1;
        Some(s.split_once(')').map(|(a, _)| a).unwrap_or(s).trim())
    }
}

pub fn parse_driver_info(text: &str) -> Result<DriverInfo, ParseError> {
    let mut info = DriverInfo::default();
    let mut have_driver = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(ParseError::new(SRC_I, n, format!("expected `key: value`, found `{}`", excerpt(line))));
        };
        let value = value.trim().to_string();
        match key.trim() {
            "driver" => {
                if value.is_empty() {
                    return Err(ParseError::new(SRC_I, n, "empty driver name"));
                }
                info.driver = value;
                have_driver = true;
            }
            "version" => info.version = value,
            "firmware-version" => info.firmware_version = value,
            "bus-info" => info.bus_info = value,
            // expansion-rom-version, supports-statistics, ...: not needed.
            _ => {}
        }
    }
    if !have_driver {
        return Err(ParseError::new(SRC_I, 0, "no `driver:` line"));
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_keep_every_counter() {
        let s = parse_stats("NIC statistics:\n     rx_prio3_pause: 41927\n     tx_prio3_pause: 1,290\n").unwrap();
        assert_eq!(s.get("rx_prio3_pause"), Some(41927));
        assert_eq!(s.get("tx_prio3_pause"), Some(1290));
        assert_eq!(s.pause_priorities(), vec![3]);
    }

    #[test]
    fn stats_errors_carry_line_numbers() {
        let e = parse_stats("NIC statistics:\n  a: 1\n  b: x\n").unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse_stats("garbage\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse_stats("Some header:\n     rx_prio3_pause: 1\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse_stats("NIC statistics:\n  no colon here\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(parse_stats("").unwrap_err().line, 0);
    }

    #[test]
    fn grep_pause_output_is_read_and_said_to_be_filtered() {
        // `ethtool -S ens3np0 | grep pause`, as shared in field reports.
        let s = parse_stats("     rx_prio3_pause: 41927\n     rx_prio3_pause_duration: 8134\n     tx_prio3_pause: 1290418\n     tx_pause_storm_warning_events: 0\n").unwrap();
        assert!(s.filtered);
        assert_eq!(s.get("tx_prio3_pause"), Some(1_290_418));
        assert_eq!(s.warnings.len(), 1);
        assert!(s.warnings[0].contains("no `NIC statistics:` header"), "{:?}", s.warnings);
        assert!(!parse_stats("NIC statistics:\n     a: 1\n").unwrap().filtered);
    }

    #[test]
    fn a_file_cut_mid_line_drops_the_last_line_and_says_so() {
        let s = parse_stats("NIC statistics:\n     rx_prio3_pause: 41927\n     rx_prio3_pause_duration: 81").unwrap();
        assert_eq!(s.get("rx_prio3_pause"), Some(41927));
        assert_eq!(s.get("rx_prio3_pause_duration"), None);
        assert!(s.warnings[0].contains("line 3 is cut short"), "{:?}", s.warnings);
        // Cut inside a name: not an error either, the line is simply not used.
        let s = parse_stats("NIC statistics:\n     rx_prio3_pause: 41927\n     rx_prio3_pau").unwrap();
        assert_eq!(s.counters.len(), 1);
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn a_counter_printed_twice_is_reported() {
        let s = parse_stats("NIC statistics:\n     rx_discards_phy: 5\n     tx_bytes: 1\n     rx_discards_phy: 9\n")
            .unwrap();
        assert_eq!(s.get("rx_discards_phy"), Some(5));
        assert_eq!(s.warnings, vec!["counter `rx_discards_phy` is printed twice with different values (line 2: 5, line 4: 9); the first is used".to_string()]);
    }

    #[test]
    fn driver_info_board_id() {
        let d = parse_driver_info(
            "driver: mlx5_core\nversion: 24.04\nfirmware-version: 28.39.1002 (MT_0000000834)\nbus-info: 0000:17:00.0\n",
        )
        .unwrap();
        assert_eq!(d.firmware(), "28.39.1002");
        assert_eq!(d.board_id(), Some("MT_0000000834"));
        assert!(parse_driver_info("version: 1\n").is_err());
    }
}
