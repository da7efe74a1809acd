//! Switch counter sources and the one normalized counter model they fill.
//!
//! Every switch output the doctor reads by file name in a dump (`switch/<name>/<file>`) is a
//! [`SwitchSource`]: the file name, the command that prints it, and a parser that turns its
//! text into [`Sample`]s of the shared metric schema (`docs/metrics.md`): per port, PFC pause
//! frames by priority and direction (`rocelab_pfc_pause_frames_total`), paused time
//! (`rocelab_pfc_paused_seconds_total`), drops per egress queue (`rocelab_drops_total` with
//! `queue` and `reason`), ECN marks, storm detections (`rocelab_pfc_storm_events_total`),
//! buffer watermarks. The dump reader, the exporter's metrics, the data-quality checks and the
//! doctor's switch rules read only these samples, so a new source is its parser and one line
//! in [`SWITCH_SOURCES`].
//!
//! Labels come without `node`: the dump reader puts the switch's name first.

use crate::metrics::Sample;
use crate::parse::{sonic, ParseError};

pub struct SwitchSource {
    /// File name inside `switch/<name>/`.
    pub file: &'static str,
    /// The command whose output the file holds, for the docs and messages.
    pub command: &'static str,
    pub read: fn(&str) -> Result<Vec<Sample>, ParseError>,
}

pub static SWITCH_SOURCES: &[SwitchSource] = &[
    SwitchSource { file: "pfc-counters.txt", command: "SONiC `show pfc counters`", read: sonic::pfc_samples },
    SwitchSource { file: "queue-counters.txt", command: "SONiC `show queue counters`", read: sonic::queue_samples },
    SwitchSource {
        file: "pfcwd-stats.txt",
        command: "SONiC `show pfcwd stats`",
        read: crate::parse::sonic_pfcwd::storm_samples,
    },
];

pub fn find(file: &str) -> Option<&'static SwitchSource> {
    SWITCH_SOURCES.iter().find(|s| s.file == file)
}

/// Reads one source's text into samples of switch `node` (`node` label first).
pub fn read(source: &SwitchSource, text: &str, node: &str) -> Result<Vec<Sample>, ParseError> {
    let mut v = (source.read)(text)?;
    for s in &mut v {
        s.labels.insert(0, ("node", node.to_string()));
    }
    Ok(v)
}
