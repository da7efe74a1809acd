//! Cumulus Linux NVUE: `nv show interface swpN qos roce counters` and
//! `nv show interface swpN qos pfc-watchdog`.
//!
//! NVUE prints a nested key/value listing under an `operational` column: a key alone on its
//! line opens a section, indentation nests, a key followed by a value is a leaf. Values may
//! carry a unit suffix, which the parser normalises: `Bytes`/`B`, `KB` (1024 B), `MB`, `GB`;
//! durations `us`/`usec` (the default for pause duration), `ms`, `s`.
//!
//! ```text
//!                                  operational
//! -------------------------------  -----------
//! port-stats
//!   rx-stats
//!     rx-pfc-stats
//!       pause-duration             8134
//!       pause-packets              41927
//!     rx-roce-stats
//!       buffer-max-usage           1.25 MB
//!       no-buffer-discard          0
//! ```
//! Leaves are returned with their full path: `port-stats/rx-stats/rx-pfc-stats/pause-packets`.

use super::{excerpt, ParseError};
use serde::Serialize;
use std::collections::BTreeMap;

/// Leaves as (line, path, raw value).
fn tree(source: &str, text: &str) -> Result<Vec<(usize, String, String)>, ParseError> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let t = raw.trim();
        // Column header (`operational  applied`) and its rule.
        if t.starts_with('-') && t.chars().all(|c| c == '-' || c == ' ') {
            continue;
        }
        if matches!(t.split_whitespace().next(), Some("operational") | Some("applied") | Some("description")) {
            continue;
        }
        if raw.contains('\t') {
            return Err(ParseError::new(source, n, "tab in indentation; NVUE indents with spaces"));
        }
        let indent = raw.len() - raw.trim_start().len();
        let mut parts = t.splitn(2, char::is_whitespace);
        let key = parts.next().unwrap_or("").to_string();
        let value = parts.next().map(str::trim).unwrap_or("").to_string();
        while stack.last().is_some_and(|(d, _)| *d >= indent) {
            stack.pop();
        }
        if value.is_empty() {
            stack.push((indent, key));
        } else {
            let mut path: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
            path.push(&key);
            out.push((n, path.join("/"), value));
        }
    }
    if out.is_empty() {
        return Err(ParseError::new(source, 0, "no `key value` lines found"));
    }
    Ok(out)
}

/// A value normalised to bytes (sizes), microseconds (durations) or a plain count.
pub fn parse_value(source: &str, n: usize, v: &str) -> Result<f64, ParseError> {
    let mut it = v.split_whitespace();
    let num = it.next().unwrap_or("");
    let unit = it.next();
    if it.next().is_some() {
        return Err(ParseError::new(source, n, format!("expected `number [unit]`, found `{}`", excerpt(v))));
    }
    let x: f64 = num
        .replace(',', "")
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| ParseError::new(source, n, format!("not a number: `{}`", excerpt(num))))?;
    let factor = match unit {
        None | Some("Bytes") | Some("B") | Some("bytes") | Some("us") | Some("usec") | Some("packets") => 1.0,
        Some("KB") => 1024.0,
        Some("MB") => 1024.0 * 1024.0,
        Some("GB") => 1024.0 * 1024.0 * 1024.0,
        Some("ms") => 1e3,
        Some("s") | Some("sec") => 1e6,
        Some(u) => return Err(ParseError::new(source, n, format!("unknown unit `{}`", excerpt(u)))),
    };
    Ok(x * factor)
}

/// RoCE counters of one switch port by NVUE path; bytes, µs or counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RoceCounters {
    pub values: BTreeMap<String, f64>,
}

impl RoceCounters {
    /// Sum of the leaves whose path ends with `suffix` (e.g. `tx-pfc-stats/pause-packets`).
    pub fn sum_suffix(&self, suffix: &str) -> Option<f64> {
        let mut it = self.values.iter().filter(|(k, _)| k.ends_with(suffix)).peekable();
        it.peek()?;
        Some(it.map(|(_, v)| *v).sum())
    }
}

pub fn parse_roce_counters(text: &str) -> Result<RoceCounters, ParseError> {
    const SRC: &str = "nv show interface qos roce counters";
    let mut values = BTreeMap::new();
    for (n, path, v) in tree(SRC, text)? {
        values.insert(path, parse_value(SRC, n, &v)?);
    }
    Ok(RoceCounters { values })
}

/// PFC watchdog state per section (traffic class or the port itself).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PfcWatchdog {
    /// Section path -> (status `OK`/`DEADLOCK`, deadlock count).
    pub entries: BTreeMap<String, (String, u64)>,
}

impl PfcWatchdog {
    pub fn deadlocked(&self) -> bool {
        self.entries.values().any(|(s, _)| s.eq_ignore_ascii_case("deadlock"))
    }
    pub fn deadlock_count(&self) -> u64 {
        self.entries.values().map(|(_, c)| *c).sum()
    }
}

pub fn parse_pfc_watchdog(text: &str) -> Result<PfcWatchdog, ParseError> {
    const SRC: &str = "nv show interface qos pfc-watchdog";
    let mut w = PfcWatchdog::default();
    for (n, path, v) in tree(SRC, text)? {
        let (section, key) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
        match key {
            "status" => {
                let s = v.split_whitespace().next().unwrap_or("").to_string();
                if !s.eq_ignore_ascii_case("ok") && !s.eq_ignore_ascii_case("deadlock") {
                    return Err(ParseError::new(SRC, n, format!("status is OK or DEADLOCK, found `{}`", excerpt(&v))));
                }
                w.entries.entry(section.to_string()).or_insert((String::new(), 0)).0 = s.to_ascii_uppercase();
            }
            "deadlock-count" => {
                let c = super::parse_count(&v)
                    .ok_or_else(|| ParseError::new(SRC, n, format!("bad deadlock count `{}`", excerpt(&v))))?;
                w.entries.entry(section.to_string()).or_insert((String::new(), 0)).1 = c;
            }
            _ => {}
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_with_units() {
        let c = parse_roce_counters("        operational\n----    -----------\nport-stats\n  rx-stats\n    rx-roce-stats\n      buffer-max-usage   1.5 KB\n      no-buffer-discard  3\n  tx-stats\n    tx-ecn-stats\n      ecn-marked-packets  1,200\n").unwrap();
        assert_eq!(c.values["port-stats/rx-stats/rx-roce-stats/buffer-max-usage"], 1536.0);
        assert_eq!(c.sum_suffix("ecn-marked-packets"), Some(1200.0));
    }

    #[test]
    fn bad_unit_has_line() {
        let e = parse_roce_counters("a\n  b   3 parsecs\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(parse_roce_counters("").unwrap_err().line, 0);
    }

    #[test]
    fn watchdog() {
        let w =
            parse_pfc_watchdog("traffic-class\n  3\n    status          DEADLOCK\n    deadlock-count  2\n").unwrap();
        assert!(w.deadlocked());
        assert_eq!(w.deadlock_count(), 2);
    }
}
