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
///
/// When the listing has its column rule (`-----  -----------  ----`), the value is read from
/// the `operational` column only: NVUE prints an `applied` and a `description` column beside
/// it (`buffer-max-usage   144 Bytes   Max Ingress Pool-buffer usage ...`), and the words of
/// a description are not part of the value.
fn tree(source: &str, text: &str) -> Result<Vec<(usize, String, String)>, ParseError> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    // (start of the value column, start of the column after it) once the rule is seen.
    let mut cols: Option<(usize, Option<usize>)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let t = raw.trim();
        // Column header (`operational  applied`) and its rule.
        if t.starts_with('-') && t.chars().all(|c| c == '-' || c == ' ') {
            if cols.is_none() {
                let starts: Vec<usize> = raw
                    .char_indices()
                    .filter(|&(k, c)| c == '-' && (k == 0 || raw.as_bytes()[k - 1] == b' '))
                    .map(|(k, _)| k)
                    .collect();
                if starts.len() >= 2 {
                    cols = Some((starts[1], starts.get(2).copied()));
                }
            }
            continue;
        }
        if matches!(t.split_whitespace().next(), Some("operational") | Some("applied") | Some("description")) {
            continue;
        }
        if raw.contains('\t') {
            return Err(ParseError::new(source, n, "tab in indentation; NVUE indents with spaces"));
        }
        let indent = raw.len() - raw.trim_start().len();
        let (key, value) = match cols.and_then(|(vs, ve)| split_columns(raw, vs, ve)) {
            Some(kv) => kv,
            None => {
                let mut parts = t.splitn(2, char::is_whitespace);
                let key = parts.next().unwrap_or("").to_string();
                (key, parts.next().map(str::trim).unwrap_or("").to_string())
            }
        };
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

/// Key (left of the value column) and value (the value column, up to the next column).
/// `None` when the line does not fit the columns (a key running into the value column,
/// non-ASCII text), so the caller falls back to splitting on the first blank.
fn split_columns(raw: &str, vs: usize, ve: Option<usize>) -> Option<(String, String)> {
    let key = raw.get(..vs.min(raw.len()))?.trim();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return None;
    }
    if raw.len() <= vs {
        return Some((key.to_string(), String::new()));
    }
    if vs == 0 || raw.as_bytes()[vs - 1] != b' ' {
        return None;
    }
    // A value wider than its column runs on to the next blank-separated gap: cut at the
    // next column only where two blanks precede it.
    let end = ve.filter(|&e| e < raw.len() && raw.get(..e).is_some_and(|p| p.ends_with("  "))).unwrap_or(raw.len());
    Some((key.to_string(), raw.get(vs..end)?.trim().to_string()))
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

/// `qos roce counters` of one port (`input.name`) in the normalized model. The counters
/// are those of the RoCE class, on `input.roce_priority`:
/// - PFC pause frames and duration (µs → s) per direction, from `{rx,tx}-pfc-stats`;
/// - ECN-marked packets (`tx-ecn-stats`), on the RoCE queue;
/// - buffer drops of RoCE traffic: `rx-roce-stats/no-buffer-discard` plus
///   `tx-roce-stats/unicast-no-buffer-discard`. Non-RoCE and CNP discards are not counted
///   as the RoCE queue's: they are other classes (the lossy pool and the CNP queue);
/// - peak occupancy of the RoCE priority group (`rx-roce-stats/pg-max-usage`) and of its
///   egress traffic class (`tx-roce-stats/tc-max-usage`).
pub fn roce_samples(input: &crate::sources::Input) -> Result<Vec<crate::metrics::Sample>, ParseError> {
    use crate::metrics::*;
    let c = parse_roce_counters(input.text)?;
    let (port, prio) = (input.name, input.roce_priority.to_string());
    let mut out = Vec::new();
    for dir in ["rx", "tx"] {
        let l = [("port", port), ("priority", prio.as_str()), ("direction", dir)];
        if let Some(v) = c.sum_suffix(&format!("{dir}-pfc-stats/pause-packets")) {
            out.push(Sample::new(PFC_PAUSE_FRAMES_TOTAL, &l, v));
        }
        if let Some(v) = c.sum_suffix(&format!("{dir}-pfc-stats/pause-duration")) {
            out.push(Sample::new(PFC_PAUSED_SECONDS_TOTAL, &l, v / 1e6));
        }
    }
    if let Some(v) = c.sum_suffix("tx-ecn-stats/ecn-marked-packets") {
        out.push(Sample::new(ECN_MARKED_PACKETS_TOTAL, &[("port", port), ("queue", &prio)], v));
    }
    let drops =
        [c.sum_suffix("rx-roce-stats/no-buffer-discard"), c.sum_suffix("tx-roce-stats/unicast-no-buffer-discard")];
    if drops.iter().any(Option::is_some) {
        let v = drops.iter().flatten().sum();
        out.push(Sample::new(DROPS_TOTAL, &[("port", port), ("queue", &prio), ("reason", "buffer")], v));
    }
    if let Some(v) = c.sum_suffix("rx-roce-stats/pg-max-usage") {
        let pg = format!("PG{prio}");
        out.push(Sample::new(
            BUFFER_OCCUPANCY_BYTES,
            &[("port", port), ("priority_group", &pg), ("pool", "shared"), ("stat", "peak")],
            v,
        ));
    }
    if let Some(v) = c.sum_suffix("tx-roce-stats/tc-max-usage") {
        out.push(Sample::new(
            BUFFER_OCCUPANCY_BYTES,
            &[("port", port), ("queue", &prio), ("pool", "egress"), ("stat", "peak")],
            v,
        ));
    }
    Ok(out)
}

/// `qos pfc-watchdog` of one port in the normalized model, per traffic class: deadlock
/// detections (`rocelab_pfc_storm_events_total{kind="deadlock"}`) and whether it is in
/// DEADLOCK now (`rocelab_pfc_watchdog_stormed`). A section that names no class counts on
/// the RoCE priority.
pub fn watchdog_samples(input: &crate::sources::Input) -> Result<Vec<crate::metrics::Sample>, ParseError> {
    use crate::metrics::{Sample, PFC_STORM_EVENTS_TOTAL, PFC_WATCHDOG_STORMED};
    let w = parse_pfc_watchdog(input.text)?;
    // priority -> (detections, deadlocked now)
    let mut by_prio: BTreeMap<String, (u64, bool)> = BTreeMap::new();
    for (section, (status, count)) in &w.entries {
        let p = section.rsplit('/').next().filter(|s| s.parse::<u8>().is_ok_and(|p| p < 8));
        let p = p.map(str::to_string).unwrap_or_else(|| input.roce_priority.to_string());
        let e = by_prio.entry(p).or_insert((0, false));
        e.0 += count;
        e.1 |= status.eq_ignore_ascii_case("deadlock");
    }
    let mut out = Vec::new();
    for (p, (c, now)) in by_prio {
        let l = [("port", input.name), ("priority", p.as_str())];
        out.push(Sample::new(PFC_STORM_EVENTS_TOTAL, &[l[0], l[1], ("kind", "deadlock")], c as f64));
        out.push(Sample::new(PFC_WATCHDOG_STORMED, &l, if now { 1.0 } else { 0.0 }));
    }
    Ok(out)
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

    #[test]
    fn watchdog_in_the_normalized_model() {
        let text = "traffic-class\n  3\n    status          DEADLOCK\n    deadlock-count  2\n  4\n    status          OK\n    deadlock-count  0\n";
        let input = crate::sources::Input { text, name: "swp1", roce_priority: 3 };
        let got: Vec<(String, f64)> = watchdog_samples(&input).unwrap().iter().map(|s| (s.series(), s.value)).collect();
        assert_eq!(
            got,
            [
                ("rocelab_pfc_storm_events_total{port=\"swp1\",priority=\"3\",kind=\"deadlock\"}".to_string(), 2.0),
                ("rocelab_pfc_watchdog_stormed{port=\"swp1\",priority=\"3\"}".to_string(), 1.0),
                ("rocelab_pfc_storm_events_total{port=\"swp1\",priority=\"4\",kind=\"deadlock\"}".to_string(), 0.0),
                ("rocelab_pfc_watchdog_stormed{port=\"swp1\",priority=\"4\"}".to_string(), 0.0),
            ]
        );
    }
}
