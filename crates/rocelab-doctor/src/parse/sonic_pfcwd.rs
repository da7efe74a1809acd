//! SONiC `show pfcwd stats`: the PFC watchdog's storm detections per port and queue.
//!
//! ```text
//!       QUEUE       STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP    RX LAST OK/DROP
//! -----------  -----------  -------------------------  ------------  ------------  -----------------  -----------------
//! Ethernet0:3      stormed                        1/0       100/300       100/300              0/200              0/200
//! ```
//! (sonic-utilities `scripts/pfcwd` prints it; the rows above are its test's expected output,
//! `tests/pfcwd_test.py`). Each row becomes `rocelab_pfc_storm_events_total{port, priority}`
//! with the detections, and `rocelab_pfc_watchdog_stormed` 1 while its STATUS is `stormed`;
//! the queue is the priority (SONiC maps PFC priority p to queue p).

use super::{excerpt, parse_count, ParseError};
use crate::metrics::{Sample, PFC_STORM_EVENTS_TOTAL, PFC_WATCHDOG_STORMED};

const SRC: &str = "show pfcwd stats";

pub fn storm_samples(text: &str) -> Result<Vec<Sample>, ParseError> {
    // (STORM DETECTED/RESTORED column, STATUS column)
    let mut col: Option<(usize, Option<usize>)> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with("---") {
            continue;
        }
        if t.starts_with("QUEUE") {
            // Columns are separated by two or more spaces; names hold single spaces.
            let names: Vec<&str> = t.split("  ").map(str::trim).filter(|s| !s.is_empty()).collect();
            let Some(storm) = names.iter().position(|c| *c == "STORM DETECTED/RESTORED") else {
                return Err(ParseError::new(SRC, n, "no `STORM DETECTED/RESTORED` column"));
            };
            col = Some((storm, names.iter().position(|c| *c == "STATUS")));
            continue;
        }
        let Some((c, status)) = col else {
            return Err(ParseError::new(SRC, n, format!("a row before the header: `{}`", excerpt(t))));
        };
        let cells: Vec<&str> = t.split_whitespace().collect();
        let (Some(queue), Some(cell)) = (cells.first(), cells.get(c)) else {
            return Err(ParseError::new(SRC, n, format!("a row without column {}: `{}`", c + 1, excerpt(t))));
        };
        let Some((port, q)) =
            queue.rsplit_once(':').filter(|(p, q)| !p.is_empty() && q.parse::<u8>().is_ok_and(|q| q < 8))
        else {
            return Err(ParseError::new(SRC, n, format!("`{}` is not PORT:QUEUE", excerpt(queue))));
        };
        let detected = cell.split('/').next().and_then(parse_count);
        let Some(d) = detected else {
            return Err(ParseError::new(SRC, n, format!("`{}` is not DETECTED/RESTORED", excerpt(cell))));
        };
        out.push(Sample::new(PFC_STORM_EVENTS_TOTAL, &[("port", port), ("priority", q)], d as f64));
        if let Some(st) = status.and_then(|k| cells.get(k)) {
            let stormed = if st.eq_ignore_ascii_case("stormed") { 1.0 } else { 0.0 };
            out.push(Sample::new(PFC_WATCHDOG_STORMED, &[("port", port), ("priority", q)], stormed));
        }
    }
    if col.is_none() {
        return Err(ParseError::new(SRC, 0, "no `QUEUE ... STORM DETECTED/RESTORED` header"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::{diagnose, Options, Severity};
    use crate::snapshot::{Snapshot, SwitchData};

    /// sonic-utilities `tests/pfcwd_test.py`, `pfcwd_show_stats_output`.
    const STATS: &str = "      QUEUE       STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP    RX LAST OK/DROP
-----------  -----------  -------------------------  ------------  ------------  -----------------  -----------------
Ethernet0:3      stormed                        1/0       100/300       100/300              0/200              0/200
Ethernet4:3  operational                        2/2       100/100       100/100                0/0                0/0
Ethernet8:4      stormed                        3/2       100/300       100/300              0/200              0/200
";

    #[test]
    fn storms_per_port_and_priority() {
        let s = storm_samples(STATS).unwrap();
        let got: Vec<(String, f64)> = s.iter().map(|x| (x.series(), x.value)).collect();
        assert_eq!(got[0], ("rocelab_pfc_storm_events_total{port=\"Ethernet0\",priority=\"3\"}".into(), 1.0));
        assert_eq!(got[1], ("rocelab_pfc_watchdog_stormed{port=\"Ethernet0\",priority=\"3\"}".into(), 1.0));
        assert_eq!((got[3].1, got[4].1), (0.0, 3.0));
        assert_eq!(storm_samples("junk\n").unwrap_err().line, 1);
    }

    /// Registered: a dump's `pfcwd-stats.txt` feeds the metrics and the doctor's rules with
    /// no other change (Ethernet8 priority 4: 3 detections, then 5 a minute later). Ethernet0
    /// priority 3 has detected one storm and restored none: stormed through the whole window,
    /// with no new detection in it, which is an ongoing storm too.
    #[test]
    fn a_new_storm_is_a_finding() {
        let snap = |t: u64, text: &str| {
            let mut s = Snapshot { host: "leaf1".into(), taken_at_unix_ms: t, ..Default::default() };
            let counters = crate::sources::read_path("pfcwd-stats.txt", text, "leaf1", 3).unwrap();
            s.switches.insert("leaf1".into(), SwitchData { counters });
            s
        };
        let later = STATS.replace(
            "Ethernet8:4      stormed                        3/2",
            "Ethernet8:4      stormed                        5/2",
        );
        let d = diagnose(vec![snap(0, STATS), snap(60_000, &later)], &Options::default());
        let got: Vec<(&str, Severity, &str)> =
            d.findings.iter().map(|f| (f.code, f.severity, f.subject.as_str())).collect();
        assert_eq!(got, vec![("pfc-storm", Severity::Error, "Ethernet0"), ("pfc-storm", Severity::Error, "Ethernet8")]);
        assert!(
            d.findings[0].message.contains("holds priority 3 in a storm now (no new detection"),
            "{}",
            d.findings[0].message
        );
        assert!(
            d.findings[1].message.contains("detected 2 storm(s) on priority 4, and holds it in a storm now"),
            "{}",
            d.findings[1].message
        );
    }
}
