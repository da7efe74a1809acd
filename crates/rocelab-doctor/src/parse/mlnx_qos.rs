//! `mlnx_qos -i <netdev>`: the host's QoS state as NVIDIA's tool prints it — trust state,
//! DSCP→priority table, the PFC `enabled` row, receive-buffer split and per-TC scheduling.
//!
//! ```text
//! Priority trust state: dscp
//! dscp2prio mapping:
//!         prio:3 dscp:31,30,29,28,27,26,25,24,
//! PFC configuration:
//!         priority    0   1   2   3   4   5   6   7
//!         enabled     0   0   0   1   0   0   0   0
//! tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%
//!          priority:  3
//! ```
//! Lines the doctor does not need (DCBX mode, cable length, ...) are skipped; a known line
//! with a malformed value is an error.

use super::{excerpt, ParseError};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

const SRC: &str = "mlnx_qos -i";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MlnxQos {
    /// `dscp` or `pcp`.
    pub trust: Option<String>,
    /// DSCP -> priority, as the table prints it.
    pub dscp_to_priority: BTreeMap<u8, u8>,
    /// Priorities with PFC enabled.
    pub pfc_enabled: Option<BTreeSet<u8>>,
    /// Receive buffer index per priority (`buffer` row).
    pub prio_to_buffer: Option<Vec<u8>>,
    pub receive_buffer_bytes: Vec<u64>,
    /// Per traffic class: scheduling and the priorities mapped to it.
    pub tcs: BTreeMap<u8, TcInfo>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TcInfo {
    /// `strict`, `ets` or `vendor`.
    pub tsa: String,
    pub bw_percent: Option<u32>,
    pub priorities: Vec<u8>,
}

fn row_of_eight(n: usize, what: &str, rest: &str) -> Result<Vec<u8>, ParseError> {
    let vals: Result<Vec<u8>, _> = rest.split_whitespace().map(str::parse::<u8>).collect();
    match vals {
        Ok(v) if v.len() == 8 => Ok(v),
        _ => Err(ParseError::new(
            SRC,
            n,
            format!("`{what}` row must hold 8 small integers, found `{}`", excerpt(rest.trim())),
        )),
    }
}

pub fn parse(text: &str) -> Result<MlnxQos, ParseError> {
    let mut q = MlnxQos::default();
    let mut current_tc: Option<u8> = None;
    let mut saw_anything = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(v) =
            line.strip_prefix("Priority trust state:").or_else(|| line.strip_prefix("Priority trust mode:"))
        {
            let v = v.trim();
            if v != "dscp" && v != "pcp" {
                return Err(ParseError::new(SRC, n, format!("unknown trust state `{}`", excerpt(v))));
            }
            q.trust = Some(v.to_string());
            saw_anything = true;
        } else if let Some(rest) = line.strip_prefix("prio:") {
            // `prio:3 dscp:31,30,...,24,`
            let Some((p, d)) = rest.split_once("dscp:") else {
                return Err(ParseError::new(
                    SRC,
                    n,
                    format!("expected `prio:N dscp:a,b,...`, found `{}`", excerpt(line)),
                ));
            };
            let prio: u8 = p
                .trim()
                .parse()
                .ok()
                .filter(|p| *p < 8)
                .ok_or_else(|| ParseError::new(SRC, n, format!("bad priority `{}`", excerpt(p.trim()))))?;
            for part in d.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let dscp: u8 = part
                    .parse()
                    .ok()
                    .filter(|d| *d < 64)
                    .ok_or_else(|| ParseError::new(SRC, n, format!("bad DSCP `{}`", excerpt(part))))?;
                q.dscp_to_priority.insert(dscp, prio);
            }
            saw_anything = true;
        } else if let Some(rest) = line.strip_prefix("enabled") {
            let row = row_of_eight(n, "enabled", rest)?;
            if row.iter().any(|v| *v > 1) {
                return Err(ParseError::new(SRC, n, "`enabled` row takes 0 or 1"));
            }
            q.pfc_enabled = Some(row.iter().enumerate().filter(|(_, v)| **v == 1).map(|(p, _)| p as u8).collect());
            saw_anything = true;
        } else if let Some(rest) = line.strip_prefix("buffer ").or_else(|| line.strip_prefix("buffer\t")) {
            q.prio_to_buffer = Some(row_of_eight(n, "buffer", rest)?);
        } else if let Some(rest) = line.strip_prefix("Receive buffer size (bytes):") {
            let vals: Result<Vec<u64>, _> =
                rest.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::parse::<u64>).collect();
            q.receive_buffer_bytes =
                vals.map_err(|_| ParseError::new(SRC, n, format!("bad buffer sizes `{}`", excerpt(rest.trim()))))?;
        } else if let Some(rest) = line.strip_prefix("tc:") {
            // `tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%`
            let mut parts = rest.split(',');
            let head = parts.next().unwrap_or("");
            let tc_str = head.split_whitespace().next().unwrap_or("");
            let tc: u8 = tc_str
                .parse()
                .ok()
                .filter(|t| *t < 8)
                .ok_or_else(|| ParseError::new(SRC, n, format!("bad traffic class `{}`", excerpt(tc_str))))?;
            let mut info = TcInfo::default();
            for p in parts {
                let p = p.trim();
                if let Some(t) = p.strip_prefix("tsa:") {
                    info.tsa = t.trim().to_string();
                } else if let Some(b) = p.strip_prefix("bw:") {
                    let b = b.trim().trim_end_matches('%');
                    info.bw_percent = Some(
                        b.parse().map_err(|_| ParseError::new(SRC, n, format!("bad bandwidth `{}`", excerpt(b))))?,
                    );
                }
            }
            q.tcs.insert(tc, info);
            current_tc = Some(tc);
            saw_anything = true;
        } else if let Some(rest) = line.strip_prefix("priority:") {
            let Some(tc) = current_tc else {
                return Err(ParseError::new(SRC, n, "`priority:` line before any `tc:` line"));
            };
            for part in rest.split_whitespace() {
                let p: u8 = part
                    .trim_end_matches(',')
                    .parse()
                    .ok()
                    .filter(|p| *p < 8)
                    .ok_or_else(|| ParseError::new(SRC, n, format!("bad priority `{}`", excerpt(part))))?;
                if let Some(info) = q.tcs.get_mut(&tc) {
                    info.priorities.push(p);
                }
            }
        }
        // Everything else (`DCBX mode`, `Cable len`, `priority 0 1 ..` header, ...) is skipped.
    }
    if !saw_anything {
        return Err(ParseError::new(
            SRC,
            0,
            "no trust state, DSCP table, PFC row or TC found: not `mlnx_qos -i` output",
        ));
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_example() {
        let q = parse("Priority trust state: dscp\n  prio:3 dscp:27,26,25,24,\nPFC configuration:\n  priority 0 1 2 3 4 5 6 7\n  enabled  0 0 0 1 0 0 0 0\ntc: 3 ratelimit: unlimited, tsa: ets, bw: 50%\n   priority:  3\n").unwrap();
        assert_eq!(q.trust.as_deref(), Some("dscp"));
        assert_eq!(q.dscp_to_priority[&26], 3);
        assert_eq!(q.pfc_enabled, Some([3u8].into_iter().collect()));
        assert_eq!(q.tcs[&3].bw_percent, Some(50));
        assert_eq!(q.tcs[&3].priorities, vec![3]);
    }

    #[test]
    fn malformed_rows() {
        assert_eq!(parse("enabled 0 0 1\n").unwrap_err().line, 1);
        assert_eq!(parse("Priority trust state: dscp\nprio:9 dscp:1,\n").unwrap_err().line, 2);
        assert_eq!(parse("prio:1 dscp:64,\n").unwrap_err().line, 1);
        assert_eq!(parse("priority: 3\n").unwrap_err().line, 1);
        assert_eq!(parse("hello\n").unwrap_err().line, 0);
    }
}
