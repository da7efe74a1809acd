//! RDMA port counters: the `hw_counters` directory (`/sys/class/infiniband/<dev>/ports/<n>/
//! hw_counters/<name>`, one integer per file) and `rdma statistic show`, which prints the same
//! counters for every port on one line: `link mlx5_1/1 rx_write_requests 0 ... np_cnp_sent 12`.

use super::{excerpt, parse_count, ParseError};
use std::collections::BTreeMap;
use std::path::Path;

const SRC_STAT: &str = "rdma statistic show";

/// Counter values keyed by name.
pub type Counters = BTreeMap<String, u64>;

/// One `hw_counters/<name>` file: a single unsigned integer and a newline.
pub fn parse_counter_file(name: &str, text: &str) -> Result<u64, ParseError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(first) = lines.next() else {
        return Err(ParseError::new(name, 0, "empty counter file"));
    };
    if lines.next().is_some() {
        return Err(ParseError::new(name, 2, "a counter file holds one value"));
    }
    parse_count(first)
        .ok_or_else(|| ParseError::new(name, 1, format!("not a counter value: `{}`", excerpt(first.trim()))))
}

/// Reads every file of a `hw_counters` directory. Sub-directories and unreadable files
/// (some counters are root-only on older kernels) are skipped, malformed values are errors.
pub fn read_hw_counters(dir: &Path) -> Result<Counters, ParseError> {
    let mut out = Counters::new();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| ParseError::new(&dir.display().to_string(), 0, format!("cannot list: {e}")))?;
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if !p.is_file() {
            continue;
        }
        let Some(name) = p.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
        // `lifespan` is a setting (ms between kernel reads), not a counter.
        if name == "lifespan" {
            continue;
        }
        let Ok(text) = crate::util::read_small(&p) else { continue };
        let v = parse_counter_file(&name, &text).map_err(|e| e.in_file(&p))?;
        out.insert(name, v);
    }
    Ok(out)
}

/// One port's line of `rdma statistic show`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortStatistics {
    pub device: String,
    pub port: u32,
    pub counters: Counters,
    /// Values not taken at face value (a counter printed twice, a port listed twice, a last
    /// value cut short), in words.
    pub warnings: Vec<String>,
}

/// Parses `rdma statistic show`. A text without its final newline was cut short: the last
/// value of the last line is not trusted (a number cut mid-way reads as a smaller one).
pub fn parse_statistic_show(text: &str) -> Result<Vec<PortStatistics>, ParseError> {
    let mut out: Vec<PortStatistics> = Vec::new();
    let cut = !text.is_empty() && !text.ends_with('\n');
    let total = text.lines().count();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let mut tok = raw.split_whitespace();
        let Some(first) = tok.next() else { continue };
        if first != "link" {
            return Err(ParseError::new(
                SRC_STAT,
                n,
                format!("expected `link DEV/PORT name value ...`, found `{}`", excerpt(raw.trim())),
            ));
        }
        let Some(link) = tok.next() else {
            return Err(ParseError::new(SRC_STAT, n, "`link` without DEV/PORT"));
        };
        let Some((device, port)) = link.split_once('/') else {
            return Err(ParseError::new(SRC_STAT, n, format!("expected DEV/PORT, found `{}`", excerpt(link))));
        };
        let Ok(port) = port.parse::<u32>() else {
            return Err(ParseError::new(SRC_STAT, n, format!("bad port number in `{}`", excerpt(link))));
        };
        if device.is_empty() {
            return Err(ParseError::new(SRC_STAT, n, "empty device name"));
        }
        let mut counters = Counters::new();
        let mut warnings = Vec::new();
        if out.iter().any(|p| p.device == device && p.port == port) {
            warnings.push(format!("line {n}: {device}/{port} is listed again; the first line is used"));
        }
        let mut pairs: Vec<(&str, Option<&str>)> = Vec::new();
        while let Some(name) = tok.next() {
            pairs.push((name, tok.next()));
        }
        if cut && n == total {
            if let Some((name, value)) = pairs.pop() {
                warnings.push(format!(
                    "line {n} is cut short (no newline at the end of the file): `{} {}` not used",
                    excerpt(name),
                    excerpt(value.unwrap_or(""))
                ));
            }
        }
        for (name, value) in pairs {
            let Some(value) = value else {
                return Err(ParseError::new(SRC_STAT, n, format!("counter `{}` has no value", excerpt(name))));
            };
            let Some(v) = parse_count(value) else {
                return Err(ParseError::new(
                    SRC_STAT,
                    n,
                    format!("counter `{}` has a non-numeric value `{}`", excerpt(name), excerpt(value)),
                ));
            };
            if let Some(had) = counters.get(name) {
                warnings.push(format!(
                    "line {n}: counter `{}` is printed twice ({had}, then {v}); the first is used",
                    excerpt(name)
                ));
                continue;
            }
            counters.insert(name.to_string(), v);
        }
        out.push(PortStatistics { device: device.to_string(), port, counters, warnings });
    }
    // Stable: a port listed twice keeps its first line first.
    out.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_file() {
        assert_eq!(parse_counter_file("np_cnp_sent", "12\n").unwrap(), 12);
        assert_eq!(parse_counter_file("x", "").unwrap_err().line, 0);
        assert_eq!(parse_counter_file("x", "abc\n").unwrap_err().line, 1);
        assert_eq!(parse_counter_file("x", "1\n2\n").unwrap_err().line, 2);
    }

    #[test]
    fn statistic_lines() {
        let v = parse_statistic_show("link mlx5_1/1 np_cnp_sent 12 rp_cnp_handled 3\n\nlink mlx5_0/1 np_cnp_sent 0\n")
            .unwrap();
        assert_eq!(v[0].device, "mlx5_0");
        assert_eq!(v[1].counters["rp_cnp_handled"], 3);
        assert_eq!(parse_statistic_show("link mlx5_0/1 a 1 b\n").unwrap_err().line, 1);
        assert_eq!(parse_statistic_show("\nlink mlx5_0 a 1\n").unwrap_err().line, 2);
        assert_eq!(parse_statistic_show("qp 7 a 1\n").unwrap_err().line, 1);
    }

    #[test]
    fn statistic_duplicates_and_cuts_are_reported() {
        let v =
            parse_statistic_show("link mlx5_0/1 np_cnp_sent 12 np_cnp_sent 99\nlink mlx5_0/1 np_cnp_sent 5\n").unwrap();
        assert_eq!(v[0].counters["np_cnp_sent"], 12);
        assert!(v[0].warnings[0].contains("printed twice (12, then 99)"), "{:?}", v[0].warnings);
        assert!(v[1].warnings[0].contains("listed again"), "{:?}", v[1].warnings);
        let v = parse_statistic_show("link mlx5_0/1 np_cnp_sent 12 rp_cnp_handled 3").unwrap();
        assert_eq!(v[0].counters.get("rp_cnp_handled"), None);
        assert!(v[0].warnings[0].contains("cut short"), "{:?}", v[0].warnings);
    }
}
