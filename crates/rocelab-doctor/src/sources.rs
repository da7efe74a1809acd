//! Switch counter sources and the one normalized counter model they fill.
//!
//! Every switch output the doctor reads from a dump (`switch/<name>/...`) is a
//! [`SwitchSource`]: where its files sit, the command that prints them, and a parser that
//! turns the text into [`Sample`]s of the shared metric schema (`docs/metrics.md`): per port,
//! PFC pause frames by priority and direction (`rocelab_pfc_pause_frames_total`), paused time
//! (`rocelab_pfc_paused_seconds_total`), drops per egress queue (`rocelab_drops_total` with
//! `queue` and `reason`), ECN marks, storm and watchdog detections
//! (`rocelab_pfc_storm_events_total`), buffer watermarks (`rocelab_buffer_occupancy_bytes`).
//! The dump reader, the exporter's metrics, the data-quality checks and the doctor's switch
//! rules read only these samples, so a new source is its parser and one line in
//! [`SWITCH_SOURCES`]. The NIC side (`ethtool -S`, RDMA `hw_counters`) fills the same
//! schema in [`crate::metrics::from_snapshot`].
//!
//! A source's `path` is a file name (`pfc-counters.txt`), a prefix (`pg-watermark-*.txt`:
//! one file per pool), or a per-port directory (`roce-counters/*.txt`: one file per port,
//! the file's stem is the port). Labels come without `node`: [`read`] puts the switch's
//! name first.

use crate::metrics::Sample;
use crate::parse::{arista, cumulus, sonic, ParseError};

/// What a source's parser is given besides the text.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    pub text: &'a str,
    /// The file name inside `switch/<name>/` (`pg-watermark-headroom.txt`), or for a
    /// per-port directory the file's stem, which is the port (`swp1`).
    pub name: &'a str,
    /// Priority of counters that count "the RoCE class" without naming its priority
    /// (Cumulus `qos roce counters`): `--roce-priority`, 3 by default as in NVUE's
    /// `nv set qos roce` (PFC on switch priority 3).
    pub roce_priority: u8,
}

pub struct SwitchSource {
    /// Where the files sit inside `switch/<name>/`: `file.txt`, `prefix-*.txt` or `dir/*.txt`.
    pub path: &'static str,
    /// The command whose output the file holds, for the docs and messages.
    pub command: &'static str,
    pub read: fn(&Input) -> Result<Vec<Sample>, ParseError>,
}

pub static SWITCH_SOURCES: &[SwitchSource] = &[
    SwitchSource {
        path: "pfc-counters.txt",
        command: "SONiC `show pfc counters`",
        read: |i| sonic::pfc_samples(i.text),
    },
    SwitchSource {
        path: "queue-counters.txt",
        command: "SONiC `show queue counters`",
        read: |i| sonic::queue_samples(i.text),
    },
    SwitchSource {
        path: "pfcwd-stats.txt",
        command: "SONiC `show pfcwd stats`",
        read: |i| crate::parse::sonic_pfcwd::storm_samples(i.text),
    },
    SwitchSource {
        path: "pg-watermark-*.txt",
        command: "SONiC `show priority-group watermark shared|headroom`",
        read: sonic::pg_watermark_samples,
    },
    SwitchSource {
        path: "roce-counters/*.txt",
        command: "Cumulus `nv show interface <swp> qos roce counters`",
        read: cumulus::roce_samples,
    },
    SwitchSource {
        path: "pfc-watchdog/*.txt",
        command: "Cumulus `nv show interface <swp> qos pfc-watchdog`",
        read: cumulus::watchdog_samples,
    },
    SwitchSource {
        path: "eos-queue-counters.txt",
        command: "Arista EOS `show interfaces counters queue detail`",
        read: |i| arista::queue_samples(i.text),
    },
];

/// The source that reads `rel` (a path inside `switch/<name>/`), and the name its parser
/// is given: the file name, or the port for a per-port directory.
pub fn find(rel: &str) -> Option<(&'static SwitchSource, String)> {
    SWITCH_SOURCES.iter().find_map(|s| matches(s.path, rel).map(|name| (s, name)))
}

fn matches(pattern: &str, rel: &str) -> Option<String> {
    if let Some(dir) = pattern.strip_suffix("/*.txt") {
        let stem = rel.strip_prefix(dir)?.strip_prefix('/')?.strip_suffix(".txt")?;
        return (!stem.is_empty() && !stem.contains('/')).then(|| stem.to_string());
    }
    if let Some((pre, post)) = pattern.split_once('*') {
        let ok = rel.len() > pre.len() + post.len() && rel.starts_with(pre) && rel.ends_with(post);
        return (ok && !rel.contains('/')).then(|| rel.to_string());
    }
    (pattern == rel).then(|| rel.to_string())
}

/// Reads one source's text into samples of switch `node` (`node` label first).
pub fn read(source: &SwitchSource, input: &Input, node: &str) -> Result<Vec<Sample>, ParseError> {
    let mut v = (source.read)(input)?;
    for s in &mut v {
        s.labels.insert(0, ("node", node.to_string()));
    }
    Ok(v)
}

/// Reads the text of `rel` (a path inside `switch/<node>/`) with the source registered
/// for it.
pub fn read_path(rel: &str, text: &str, node: &str, roce_priority: u8) -> Result<Vec<Sample>, ParseError> {
    let Some((src, name)) = find(rel) else {
        return Err(ParseError::new(rel, 0, "no switch source reads this file (docs/doctor.md lists them)"));
    };
    read(src, &Input { text, name: &name, roce_priority }, node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_files_prefixes_and_port_directories() {
        assert_eq!(
            find("pfc-counters.txt").map(|(s, n)| (s.path, n)),
            Some(("pfc-counters.txt", "pfc-counters.txt".into()))
        );
        assert_eq!(find("pg-watermark-headroom.txt").map(|(s, _)| s.path), Some("pg-watermark-*.txt"));
        assert_eq!(
            find("roce-counters/swp1.txt").map(|(s, n)| (s.path, n)),
            Some(("roce-counters/*.txt", "swp1".into()))
        );
        assert!(find("roce-counters/.txt").is_none());
        assert!(find("roce-counters/a/b.txt").is_none());
        assert!(find("pg-watermark-.txt").is_none());
        assert!(find("notes.txt").is_none());
    }
}
