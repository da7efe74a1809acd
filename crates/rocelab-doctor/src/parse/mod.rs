//! Parsers for the real outputs the doctor reads, one module per format.
//!
//! Each parser takes the text exactly as the tool printed it and returns a typed value or a
//! [`ParseError`] naming the line. They never panic and never allocate without bound beyond
//! the input itself. Unknown counters are kept (a newer driver adds names); unknown *layouts*
//! are errors, so a truncated or foreign file is reported instead of read as zeros.

pub mod arista;
pub mod cumulus;
pub mod ethtool;
pub mod gpu;
pub mod mlnx_qos;
pub mod nccl;
pub mod nccl_log;
pub mod rdma;
pub mod sonic;
pub mod sonic_pfcwd;
pub mod sysfs;

use std::fmt;

/// A malformed input: which source, which line (1-based; 0 when the whole input is at fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub source: String,
    pub line: usize,
    pub message: String,
}

impl ParseError {
    pub fn new(source: &str, line: usize, message: impl Into<String>) -> Self {
        ParseError { source: source.to_string(), line, message: message.into() }
    }

    /// Names the file the text came from, so the error reads `path:line: message`.
    pub fn in_file(mut self, path: &std::path::Path) -> Self {
        self.source = path.display().to_string();
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}:{}: {}", self.source, self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses a counter value as printed by Linux tools and switch CLIs: digits, optionally with
/// thousands separators (`1,290,418`). Returns `None` for anything else (`N/A`, `-`, signs).
pub fn parse_count(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    let mut digits = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '0'..='9' => {
                v = v.checked_mul(10)?.checked_add((c as u8 - b'0') as u64)?;
                digits += 1;
            }
            // A separator must sit between digits: "1,234" but not ",12" or "12,".
            ',' if i > 0 && i + 1 < s.len() => {}
            _ => return None,
        }
    }
    (digits > 0).then_some(v)
}

/// Truncates a line for an error message so a binary blob does not flood the terminal.
pub(crate) fn excerpt(line: &str) -> String {
    excerpt_n(line, 60)
}

pub(crate) fn excerpt_n(line: &str, n: usize) -> String {
    let mut s: String = line.chars().take(n).collect();
    if line.chars().count() > n {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_and_without_separators() {
        assert_eq!(parse_count("0"), Some(0));
        assert_eq!(parse_count(" 1,290,418 "), Some(1_290_418));
        assert_eq!(parse_count("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_count("18446744073709551616"), None);
        assert_eq!(parse_count("N/A"), None);
        assert_eq!(parse_count("-1"), None);
        assert_eq!(parse_count(",12"), None);
        assert_eq!(parse_count(""), None);
    }

    #[test]
    fn error_reads_file_colon_line() {
        let e = ParseError::new("ethtool -S", 3, "bad").in_file(std::path::Path::new("a/b.txt"));
        assert_eq!(e.to_string(), "a/b.txt:3: bad");
    }
}
