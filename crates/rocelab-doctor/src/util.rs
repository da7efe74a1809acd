//! Small helpers: bounded file reads, UTC timestamps without a date crate, atomic writes.

use std::io::{BufRead, Read};
use std::path::Path;

/// The most a sysfs file, counter file or captured tool output may hold; larger is not a
/// counter and is refused rather than read into memory.
pub const MAX_TEXT_BYTES: u64 = 8 << 20;

/// A word as a POSIX shell reads it back unchanged: as is when it holds only characters no
/// shell treats specially, else in single quotes (a `'` inside becomes `'\''`). Every
/// copy-paste command the doctor prints goes through this: netdev and host names come from
/// dumps, and the hints are run as root.
pub fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | ',' | '=' | '@' | '%' | '+')
        });
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Text for a terminal: control characters other than newline (ANSI escapes, carriage
/// returns, backspaces from a host name or a dump) shown as `\x1b`, `\r`, ... instead of being
/// interpreted.
pub fn escape_controls(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The longest line the streaming readers keep; the rest of a longer line is skipped (no
/// counter, result row or NCCL message is anywhere near this long).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Calls `f(line_number, line)` for every line of `r` (1-based, without the line end;
/// invalid UTF-8 replaced) until `f` returns false. Memory stays at one line however large
/// the input: a line longer than [`MAX_LINE_BYTES`] is cut there.
pub fn for_each_line(mut r: impl std::io::BufRead, mut f: impl FnMut(usize, &str) -> bool) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut n = 0usize;
    loop {
        buf.clear();
        let got = (&mut r).take(MAX_LINE_BYTES as u64).read_until(b'\n', &mut buf)?;
        if got == 0 {
            return Ok(());
        }
        if buf.last() != Some(&b'\n') && got == MAX_LINE_BYTES {
            // Skip the rest of an overlong line.
            let mut sink = Vec::new();
            loop {
                sink.clear();
                let more = (&mut r).take(MAX_LINE_BYTES as u64).read_until(b'\n', &mut sink)?;
                if more == 0 || sink.last() == Some(&b'\n') {
                    break;
                }
            }
        }
        n += 1;
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if !f(n, &String::from_utf8_lossy(&buf)) {
            return Ok(());
        }
    }
}

/// Reads a text file of at most [`MAX_TEXT_BYTES`]; invalid UTF-8 is replaced, not fatal
/// (the parser then reports the line).
pub fn read_small(path: &Path) -> std::io::Result<String> {
    let f = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    f.take(MAX_TEXT_BYTES + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_TEXT_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "file too large for a counter dump"));
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// `2026-12-02T09:41:07Z` from Unix milliseconds (proleptic Gregorian, UTC).
pub fn iso8601_utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem / 60) % 60, rem % 60)
}

/// The same instant in the compact form used in directory names: `20261202T094107Z`.
pub fn compact_utc(unix_ms: u64) -> String {
    iso8601_utc(unix_ms).replace(['-', ':'], "")
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Formats a count with thousands separators for human reports: 1290418 -> "1,290,418".
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of is newer than the workspace's rust-version
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601_utc(1_796_204_467_000), "2026-12-02T09:41:07Z");
        assert_eq!(compact_utc(1_796_204_467_000), "20261202T094107Z");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_290_418), "1,290,418");
    }
}

/// `10s`, `500ms`, `2m`, `1h`, or plain seconds (`10`, `0.5`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * mult < 1e9 => Ok(std::time::Duration::from_secs_f64(v * mult)),
        _ => Err(format!("`{s}` is not a duration (examples: 10s, 500ms, 2m)")),
    }
}

#[cfg(test)]
mod duration_tests {
    #[test]
    fn durations() {
        use std::time::Duration;
        assert_eq!(super::parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(super::parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(super::parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(super::parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(super::parse_duration("-1s").is_err());
        assert!(super::parse_duration("ten").is_err());
    }
}
