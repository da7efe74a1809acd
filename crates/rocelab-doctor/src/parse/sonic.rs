//! SONiC CLI tables: `show pfc counters`, `show queue counters`,
//! `show priority-group watermark shared|headroom`.
//!
//! All three print tabulate-style tables: a header, a dashed rule whose segments give the
//! column count (`Port Rx` is one column), then one row per port until a blank line.
//! Numbers may carry thousands separators and read `N/A` when the ASIC does not count.
//!
//! ```text
//!   Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7
//! -----------  ------  ------  ------  ------  ------  ------  ------  ------
//!   Ethernet0       0       0       0     412       0       0       0       0
//! ```

use super::{excerpt, parse_count, ParseError};
use serde::Serialize;
use std::collections::BTreeMap;

/// A table as printed: optional title line (`Ingress shared pool occupancy per PG:`),
/// header names, rows with their line numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub title: Option<String>,
    pub header: Vec<String>,
    pub rows: Vec<(usize, Vec<String>)>,
}

fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('-') && t.chars().all(|c| c == '-' || c == ' ')
}

/// Splits text into tables. `source` names the command in errors.
pub fn tables(source: &str, text: &str) -> Result<Vec<Table>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !is_rule(lines[i]) {
            i += 1;
            continue;
        }
        let rule = lines[i];
        // Column spans from the rule's dash runs.
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut start = None;
        for (k, c) in rule.char_indices() {
            match (c, start) {
                ('-', None) => start = Some(k),
                (' ', Some(s)) => {
                    spans.push((s, k));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            spans.push((s, rule.len()));
        }
        let Some(h) = (0..i).rev().find(|&k| !lines[k].trim().is_empty()) else {
            return Err(ParseError::new(source, i + 1, "table rule without a header line"));
        };
        let header_line = lines[h];
        let header: Vec<String> = spans
            .iter()
            .enumerate()
            .map(|(k, &(_, e))| {
                // Header cells may be wider than their rule on the left (right-aligned):
                // take from the end of the previous span to the end of this one.
                let from = if k == 0 { 0 } else { spans[k - 1].1 };
                let to = if k + 1 == spans.len() { header_line.len() } else { e };
                header_line.get(from.min(header_line.len())..to.min(header_line.len())).unwrap_or("").trim().to_string()
            })
            .collect();
        let title = (0..h)
            .rev()
            .find(|&k| !lines[k].trim().is_empty())
            .map(|k| lines[k].trim())
            .filter(|t| t.ends_with(':'))
            .map(|t| t.trim_end_matches(':').to_string());
        let mut rows = Vec::new();
        let mut k = i + 1;
        while k < lines.len() && !lines[k].trim().is_empty() && !is_rule(lines[k]) {
            // A following table's header is a non-blank line directly above a rule.
            if k + 1 < lines.len() && is_rule(lines[k + 1]) {
                break;
            }
            let cells: Vec<String> = lines[k].split_whitespace().map(str::to_string).collect();
            if cells.len() != spans.len() {
                return Err(ParseError::new(
                    source,
                    k + 1,
                    format!(
                        "expected {} columns, found {} in `{}`",
                        spans.len(),
                        cells.len(),
                        excerpt(lines[k].trim())
                    ),
                ));
            }
            rows.push((k + 1, cells));
            k += 1;
        }
        out.push(Table { title, header, rows });
        i = k;
    }
    if out.is_empty() {
        return Err(ParseError::new(source, 0, "no table found (expected a header and a `----` rule)"));
    }
    Ok(out)
}

fn cell(source: &str, n: usize, s: &str) -> Result<Option<u64>, ParseError> {
    if s == "N/A" || s == "-" {
        return Ok(None);
    }
    parse_count(s).map(Some).ok_or_else(|| ParseError::new(source, n, format!("not a counter: `{}`", excerpt(s))))
}

/// Pause frames per port and priority, per direction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PfcCounters {
    pub rx: BTreeMap<String, [Option<u64>; 8]>,
    pub tx: BTreeMap<String, [Option<u64>; 8]>,
}

pub fn parse_pfc_counters(text: &str) -> Result<PfcCounters, ParseError> {
    const SRC: &str = "show pfc counters";
    let mut out = PfcCounters::default();
    let mut found = false;
    for t in tables(SRC, text)? {
        let first = t.header.first().map(String::as_str).unwrap_or("");
        let dir = match first {
            "Port Rx" => &mut out.rx,
            "Port Tx" => &mut out.tx,
            _ => continue,
        };
        // PFC0..PFC7 may come in any order; later versions add storm columns, ignored here.
        let mut idx = [None; 8];
        for (c, name) in t.header.iter().enumerate() {
            if let Some(p) = name.strip_prefix("PFC").and_then(|p| p.parse::<usize>().ok()).filter(|p| *p < 8) {
                idx[p] = Some(c);
            }
        }
        if idx.iter().all(Option::is_none) {
            return Err(ParseError::new(
                SRC,
                t.rows.first().map(|r| r.0).unwrap_or(0),
                "table has no PFC0..PFC7 columns",
            ));
        }
        found = true;
        for (n, cells) in &t.rows {
            let mut v = [None; 8];
            for p in 0..8 {
                if let Some(c) = idx[p] {
                    v[p] = cell(SRC, *n, &cells[c])?;
                }
            }
            dir.insert(cells[0].clone(), v);
        }
    }
    if !found {
        return Err(ParseError::new(SRC, 0, "no `Port Rx` / `Port Tx` table"));
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueCounter {
    pub port: String,
    /// `UC0`..`UC9`, `MC0`..`MC9` (or `ALL0`.. on some platforms).
    pub queue: String,
    pub packets: Option<u64>,
    pub bytes: Option<u64>,
    pub drop_packets: Option<u64>,
    pub drop_bytes: Option<u64>,
}

pub fn parse_queue_counters(text: &str) -> Result<Vec<QueueCounter>, ParseError> {
    const SRC: &str = "show queue counters";
    let mut out = Vec::new();
    let mut found = false;
    for t in tables(SRC, text)? {
        let col = |name: &str| t.header.iter().position(|h| h == name);
        let (Some(port), Some(q)) = (col("Port"), col("TxQ")) else { continue };
        found = true;
        let (pk, by, dp, db) = (col("Counter/pkts"), col("Counter/bytes"), col("Drop/pkts"), col("Drop/bytes"));
        let get = |n: usize, cells: &[String], c: Option<usize>| -> Result<Option<u64>, ParseError> {
            match c {
                Some(c) => cell(SRC, n, &cells[c]),
                None => Ok(None),
            }
        };
        for (n, cells) in &t.rows {
            out.push(QueueCounter {
                port: cells[port].clone(),
                queue: cells[q].clone(),
                packets: get(*n, cells, pk)?,
                bytes: get(*n, cells, by)?,
                drop_packets: get(*n, cells, dp)?,
                drop_bytes: get(*n, cells, db)?,
            });
        }
    }
    if !found {
        return Err(ParseError::new(SRC, 0, "no table with `Port` and `TxQ` columns"));
    }
    out.sort_by(|a, b| (&a.port, &a.queue).cmp(&(&b.port, &b.queue)));
    Ok(out)
}

/// Priority-group watermarks in bytes: `pool` is `shared` or `headroom`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PgWatermarks {
    pub pool: String,
    pub ports: BTreeMap<String, [Option<u64>; 8]>,
}

pub fn parse_pg_watermark(text: &str) -> Result<PgWatermarks, ParseError> {
    const SRC: &str = "show priority-group watermark";
    let mut out = PgWatermarks::default();
    let mut found = false;
    for t in tables(SRC, text)? {
        if t.header.first().map(String::as_str) != Some("Port") {
            continue;
        }
        let mut idx = [None; 8];
        for (c, name) in t.header.iter().enumerate() {
            if let Some(p) = name.strip_prefix("PG").and_then(|p| p.parse::<usize>().ok()).filter(|p| *p < 8) {
                idx[p] = Some(c);
            }
        }
        if idx.iter().all(Option::is_none) {
            continue;
        }
        found = true;
        if let Some(title) = &t.title {
            let tl = title.to_ascii_lowercase();
            out.pool = if tl.contains("headroom") {
                "headroom".into()
            } else if tl.contains("shared") {
                "shared".into()
            } else {
                out.pool.clone()
            };
        }
        for (n, cells) in &t.rows {
            let mut v = [None; 8];
            for p in 0..8 {
                if let Some(c) = idx[p] {
                    v[p] = cell(SRC, *n, &cells[c])?;
                }
            }
            out.ports.insert(cells[0].clone(), v);
        }
    }
    if !found {
        return Err(ParseError::new(SRC, 0, "no table with `Port` and `PG0`..`PG7` columns"));
    }
    if out.pool.is_empty() {
        out.pool = "shared".into();
    }
    Ok(out)
}

/// `show pfc counters` as samples: pause frames per port, priority and direction.
pub fn pfc_samples(text: &str) -> Result<Vec<crate::metrics::Sample>, ParseError> {
    use crate::metrics::{Sample, PFC_PAUSE_FRAMES_TOTAL};
    let pfc = parse_pfc_counters(text)?;
    let mut out = Vec::new();
    for (dir, table) in [("rx", &pfc.rx), ("tx", &pfc.tx)] {
        for (port, vals) in table {
            for (p, v) in vals.iter().enumerate() {
                if let Some(v) = v {
                    let prio = p.to_string();
                    out.push(Sample::new(
                        PFC_PAUSE_FRAMES_TOTAL,
                        &[("port", port), ("priority", &prio), ("direction", dir)],
                        *v as f64,
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// `show queue counters` as samples: dropped packets per port and egress queue.
pub fn queue_samples(text: &str) -> Result<Vec<crate::metrics::Sample>, ParseError> {
    use crate::metrics::{Sample, DROPS_TOTAL};
    Ok(parse_queue_counters(text)?
        .into_iter()
        .filter_map(|q| {
            let v = q.drop_packets?;
            Some(Sample::new(DROPS_TOTAL, &[("port", &q.port), ("queue", &q.queue), ("reason", "buffer")], v as f64))
        })
        .collect())
}

/// `show priority-group watermark shared|headroom` as samples: peak bytes per port and
/// priority group. The pool comes from the table's title, or from the file name
/// (`pg-watermark-headroom.txt`) when the title is missing.
pub fn pg_watermark_samples(input: &crate::sources::Input) -> Result<Vec<crate::metrics::Sample>, ParseError> {
    use crate::metrics::{Sample, BUFFER_OCCUPANCY_BYTES};
    let mut wm = parse_pg_watermark(input.text)?;
    if input.name.contains("headroom") {
        wm.pool = "headroom".into();
    }
    let mut out = Vec::new();
    for (port, vals) in &wm.ports {
        for (pg, v) in vals.iter().enumerate() {
            if let Some(v) = v {
                let pg = format!("PG{pg}");
                out.push(Sample::new(
                    BUFFER_OCCUPANCY_BYTES,
                    &[("port", port), ("priority_group", &pg), ("pool", &wm.pool), ("stat", "peak")],
                    *v as f64,
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PFC: &str = "  Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7\n-----------  ------  ------  ------  ------  ------  ------  ------  ------\n  Ethernet0       0       0       0   1,412       0       0       0     N/A\n\n  Port Tx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7\n-----------  ------  ------  ------  ------  ------  ------  ------  ------\n  Ethernet0       0       0       0       7       0       0       0       0\n";

    #[test]
    fn pfc_tables() {
        let p = parse_pfc_counters(PFC).unwrap();
        assert_eq!(p.rx["Ethernet0"][3], Some(1412));
        assert_eq!(p.rx["Ethernet0"][7], None);
        assert_eq!(p.tx["Ethernet0"][3], Some(7));
    }

    #[test]
    fn short_row_is_an_error_with_its_line() {
        let bad = PFC.replace("      0     N/A", "");
        assert_eq!(parse_pfc_counters(&bad).unwrap_err().line, 3);
        assert_eq!(parse_pfc_counters("nothing here\n").unwrap_err().line, 0);
    }
}
