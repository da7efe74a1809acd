//! Reading whitespace-separated inputs with line numbers, and ns-3 value strings.
//!
//! ns-3's `third.cc` reads its topology and flow files token by token (`>>`), so a value may
//! wrap to the next line; `Tokens` does the same but remembers each token's line for errors.

use crate::ImportError;

pub struct Tokens<'a> {
    file: &'a str,
    toks: Vec<(usize, &'a str)>,
    pos: usize,
    last_line: usize,
}

impl<'a> Tokens<'a> {
    pub fn new(file: &'a str, text: &'a str) -> Self {
        let mut toks = Vec::new();
        let mut last_line = 1;
        for (i, line) in text.lines().enumerate() {
            last_line = i + 1;
            for t in line.split_whitespace() {
                toks.push((i + 1, t));
            }
        }
        Tokens { file, toks, pos: 0, last_line }
    }

    pub fn file(&self) -> &'a str {
        self.file
    }

    /// The next token, or an error saying what was expected.
    pub fn next(&mut self, what: &str) -> Result<(usize, &'a str), ImportError> {
        match self.toks.get(self.pos) {
            Some(&t) => {
                self.pos += 1;
                Ok(t)
            }
            None => Err(ImportError::at(
                self.file,
                self.last_line,
                format!("the file ends where {what} was expected"),
                "the counts at the top of the file must match the lines that follow",
            )),
        }
    }

    pub fn next_parse<T: std::str::FromStr>(&mut self, what: &str) -> Result<(usize, T), ImportError> {
        let (line, t) = self.next(what)?;
        t.parse::<T>().map(|v| (line, v)).map_err(|_| {
            ImportError::at(
                self.file,
                line,
                format!("`{t}` is not a valid {what}"),
                format!("write {what} as a number"),
            )
        })
    }

    /// Line of the first token not consumed, if any.
    pub fn rest_line(&self) -> Option<usize> {
        self.toks.get(self.pos).map(|t| t.0)
    }
}

/// An ns-3 `DataRate` string (`100Gbps`, `50Mb/s`, `25Gb/s`, `1000000bps`, `10KBps`) in bit/s.
pub fn parse_rate(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'));
    let (num, unit) = match split {
        Some(i) => s.split_at(i),
        None => (s, "bps"),
    };
    let v: f64 = num.parse().ok()?;
    let (mult, rest): (f64, &str) = match unit.as_bytes().first()? {
        b'k' | b'K' => (1e3, &unit[1..]),
        b'M' => (1e6, &unit[1..]),
        b'G' => (1e9, &unit[1..]),
        b'T' => (1e12, &unit[1..]),
        _ => (1.0, unit),
    };
    let (mult, rest) = match rest.strip_prefix('i') {
        Some(r) if mult > 1.0 => (1024f64.powf(mult.log10() / 3.0), r),
        _ => (mult, rest),
    };
    let bits = match rest {
        "bps" | "b/s" => 1.0,
        "Bps" | "B/s" => 8.0,
        _ => return None,
    };
    let r = v * mult * bits;
    (r.is_finite() && r > 0.0 && r < 1e16).then(|| r.round() as u64)
}

/// An ns-3 `Time` string (`0.001ms`, `1us`, `1000ns`, `2s`; a bare number is seconds) in ps.
pub fn parse_time_ps(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'));
    let (num, unit) = match split {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num.parse().ok()?;
    let ps_per = match unit {
        "s" => 1e12,
        "ms" => 1e9,
        "us" => 1e6,
        "ns" => 1e3,
        "ps" => 1.0,
        "min" => 60e12,
        "h" => 3600e12,
        _ => return None,
    };
    let t = v * ps_per;
    (t.is_finite() && (0.0..1.8e19).contains(&t)).then(|| t.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100Gbps"), Some(100_000_000_000));
        assert_eq!(parse_rate("50Mb/s"), Some(50_000_000));
        assert_eq!(parse_rate("25Gb/s"), Some(25_000_000_000));
        assert_eq!(parse_rate("1000"), Some(1000));
        assert_eq!(parse_rate("1KBps"), Some(8000));
        assert_eq!(parse_rate("12.5Gbps"), Some(12_500_000_000));
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(parse_rate("100Gbit"), None);
        assert_eq!(parse_rate("-5Gbps"), None);
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_ps("0.001ms"), Some(1_000_000));
        assert_eq!(parse_time_ps("1us"), Some(1_000_000));
        assert_eq!(parse_time_ps("500ns"), Some(500_000));
        assert_eq!(parse_time_ps("2"), Some(2_000_000_000_000));
        assert_eq!(parse_time_ps("1fortnight"), None);
        assert_eq!(parse_time_ps("-1us"), None);
    }

    #[test]
    fn tokens_keep_lines() {
        let mut t = Tokens::new("f", "3 1\n\n 7");
        assert_eq!(t.next("a").unwrap(), (1, "3"));
        assert_eq!(t.next_parse::<u32>("b").unwrap(), (1, 1));
        assert_eq!(t.next_parse::<u32>("c").unwrap(), (3, 7));
        let e = t.next("d").unwrap_err().to_string();
        assert!(e.contains("f:3"), "{e}");
    }
}
