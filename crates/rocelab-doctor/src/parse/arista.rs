//! Arista EOS `show interfaces counters queue detail`: egress queue drops per port and
//! traffic class.
//!
//! ```text
//! Egress Queue Counters
//! Port               Traffic   DropPrec   DestType        OutEnqPkts      OutEnqOctets       OutDropPkts     OutDropOctets
//!                     Class
//! Et4/2/1                TC7      DP0-3         UC                 0                 0                 1               110
//! ```
//! (the layout of the public sample in networktocode/ntc-templates,
//! `tests/arista_eos/show_interfaces_counters_queue_detail_grep_egress/`). A port and traffic
//! class may have several rows (drop precedences, unicast and multicast); each becomes
//! `rocelab_drops_total{port, queue, reason="buffer"}` summed per port and class, with the
//! queue named `TC<n>` for unicast and `MC<n>` for multicast rows (SONiC's `UC`/`MC`
//! convention: only unicast queues carry RoCE). Sections without an `OutDropPkts` column
//! (ingress counters) are skipped.

use super::{excerpt, parse_count, ParseError};
use crate::metrics::{Sample, DROPS_TOTAL};
use std::collections::BTreeMap;

const SRC: &str = "show interfaces counters queue detail";

pub fn queue_samples(text: &str) -> Result<Vec<Sample>, ParseError> {
    // (number of cells in a row, traffic-class column, dest-type column, drop column)
    let mut cols: Option<(usize, usize, Option<usize>, usize)> = None;
    let mut seen_header = false;
    let mut drops: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let cells: Vec<&str> = line.split_whitespace().collect();
        match cells.first() {
            None => continue,
            Some(&"Port") => {
                // "Traffic Class" spans two header lines: the first gives one cell per column.
                let at = |name: &str| cells.iter().position(|c| *c == name);
                cols = match (at("Traffic"), at("OutDropPkts")) {
                    (Some(tc), Some(d)) => Some((cells.len(), tc, at("DestType"), d)),
                    _ => None,
                };
                seen_header |= cols.is_some();
                continue;
            }
            Some(&"Class") if cells.len() == 1 => continue,
            _ => {}
        }
        let Some((width, tc, dest, d)) = cols else { continue };
        if cells.len() != width {
            // A section title ("Egress Queue Counters") between tables ends the rows.
            if cells.iter().all(|c| c.chars().all(char::is_alphabetic)) {
                cols = None;
                continue;
            }
            return Err(ParseError::new(
                SRC,
                n,
                format!("expected {width} columns, found {} in `{}`", cells.len(), excerpt(line.trim())),
            ));
        }
        let class = cells[tc].strip_prefix("TC").filter(|c| c.parse::<u8>().is_ok_and(|c| c < 8)).ok_or_else(|| {
            ParseError::new(SRC, n, format!("traffic class `{}` is not TC0..TC7", excerpt(cells[tc])))
        })?;
        let v = parse_count(cells[d])
            .ok_or_else(|| ParseError::new(SRC, n, format!("OutDropPkts `{}` is not a counter", excerpt(cells[d]))))?;
        let kind = match dest.map(|c| cells[c]) {
            Some("MC") => "MC",
            _ => "TC",
        };
        *drops.entry((cells[0].to_string(), format!("{kind}{class}"))).or_insert(0) += v;
    }
    if !seen_header {
        return Err(ParseError::new(SRC, 0, "no `Port ... Traffic ... OutDropPkts` header"));
    }
    Ok(drops
        .into_iter()
        .map(|((port, q), v)| {
            Sample::new(DROPS_TOTAL, &[("port", &port), ("queue", &q), ("reason", "buffer")], v as f64)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "Egress Queue Counters\nPort               Traffic   DropPrec   DestType        OutEnqPkts      OutEnqOctets       OutDropPkts     OutDropOctets\n                    Class\n";

    #[test]
    fn rows_sum_per_port_and_class() {
        let t = format!("{HEAD}Et1      TC3   DP0   UC   10   100   4   400\nEt1      TC3   DP1   UC   10   100   1,000   400\nEt1      TC3   DP0   MC   10   100   2   400\n");
        let v = queue_samples(&t).unwrap();
        let got: Vec<(String, f64)> = v.iter().map(|s| (s.series(), s.value)).collect();
        assert_eq!(
            got,
            [
                ("rocelab_drops_total{port=\"Et1\",queue=\"MC3\",reason=\"buffer\"}".to_string(), 2.0),
                ("rocelab_drops_total{port=\"Et1\",queue=\"TC3\",reason=\"buffer\"}".to_string(), 1004.0)
            ]
        );
    }

    #[test]
    fn bad_rows_name_their_line() {
        let t = format!("{HEAD}Et1      TC3   DP0   UC   10   100   x   400\n");
        assert_eq!(queue_samples(&t).unwrap_err().line, 4);
        let t = format!("{HEAD}Et1      TC9   DP0   UC   10   100   1   400\n");
        assert_eq!(queue_samples(&t).unwrap_err().line, 4);
        let t = format!("{HEAD}Et1      TC3   DP0   UC   10\n");
        assert_eq!(queue_samples(&t).unwrap_err().line, 4);
        assert_eq!(queue_samples("Port  Name  Status\n").unwrap_err().line, 0);
    }

    /// The public sample (ntc-templates, see tests/fixtures/public/SOURCE.md): 20 unicast
    /// rows on 18 ports, one drop each on Et4/2/1 and Et4/4/1 TC7.
    const PUBLIC: &str = include_str!("../../tests/fixtures/public/arista-eos-queue-counters.txt");

    #[test]
    fn the_public_sample_reads_and_reaches_the_rules() {
        let v = queue_samples(PUBLIC).unwrap();
        assert_eq!(v.len(), 20);
        let dropped: Vec<String> = v.iter().filter(|s| s.value > 0.0).map(Sample::series).collect();
        assert_eq!(
            dropped,
            [
                "rocelab_drops_total{port=\"Et4/2/1\",queue=\"TC7\",reason=\"buffer\"}",
                "rocelab_drops_total{port=\"Et4/4/1\",queue=\"TC7\",reason=\"buffer\"}"
            ]
        );
        // Registered: a dump's `eos-queue-counters.txt` reaches the doctor's rules with no
        // other change. A minute later Et4/2/1 TC7 has dropped 5,000 more; TC7 is not a
        // declared lossless queue here, so it is ordinary congestion (a warning).
        let snap = |t: u64, text: &str| {
            let mut s = crate::Snapshot { host: "spine1".into(), taken_at_unix_ms: t, ..Default::default() };
            let counters = crate::sources::read_path("eos-queue-counters.txt", text, "spine1", 3).unwrap();
            s.switches.insert("spine1".into(), crate::snapshot::SwitchData { counters });
            s
        };
        let later = PUBLIC.replacen("                 1               110", "              5001            550110", 1);
        let d = crate::diagnose::diagnose(
            vec![snap(0, PUBLIC), snap(60_000, &later)],
            &crate::diagnose::Options::default(),
        );
        let got: Vec<(&str, &str, &str)> =
            d.findings.iter().map(|f| (f.code, f.node.as_str(), f.subject.as_str())).collect();
        assert_eq!(got, [("switch-drops", "spine1", "Et4/2/1 TC7")]);
        assert!(d.findings[0].message.starts_with("5,000 packets dropped"), "{}", d.findings[0].message);
    }
}
