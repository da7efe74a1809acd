//! A collective as a user asks for it — `rocelab simulate --collective` flags, a fabric file's
//! `[[workload]]` table, or both (the table's keys over the flags') — checked and turned into
//! the sweep's sizes and a [`CollectiveSpec`].
//!
//! Every value is typed here, once: a `[[workload]]` key the flags would refuse is refused with
//! its key path (`workload[2].algo`), which the CLI turns into file:line:column.

use crate::{parse_op, sweep_sizes, Algo, CollectiveSpec, Proto, DEFAULT_CHUNK_BYTES};
use rocelab_model::config::{SizeInput, WorkloadConfig};
use rocelab_model::Diagnostic;

/// The knobs of a collective run, as `rocelab simulate`'s flags name them.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveRequest {
    /// nccl-tests' name (`all_reduce`, `alltoall_perf`, ...).
    pub collective: String,
    /// The sweep (nccl-tests' -b, -e, -f); `max_bytes` `None`: one size.
    pub min_bytes: u64,
    pub max_bytes: Option<u64>,
    pub step_factor: u64,
    /// `None`: NCCL's count ([`CollectiveSpec::resolve`]).
    pub channels: Option<u32>,
    /// The first K GPU nodes; `None`: all.
    pub nodes: Option<u32>,
    pub qps_per_connection: u32,
    pub split_data_on_qps: bool,
    /// Simple's step.
    pub chunk_bytes: u64,
    pub root: u32,
    /// Every host NIC a rank (`--placement nics`) instead of the fabric's own placement.
    pub nics: bool,
    pub pxn: bool,
    /// `None`: NCCL's choice.
    pub algo: Option<Algo>,
    pub proto: Option<Proto>,
    /// GPUs one host thread launches each call on, without CUDA graphs (nccl-tests' `-g N`
    /// in one process): each call then takes at least N × 5.5 µs (`crate::launch`); `None`:
    /// a thread per GPU, no floor.
    pub gpus_per_thread: Option<u32>,
}

impl CollectiveRequest {
    /// NCCL's defaults for `collective` at `min_bytes`: one size, NCCL's own choices.
    pub fn new(collective: &str, min_bytes: u64) -> CollectiveRequest {
        CollectiveRequest {
            collective: collective.to_string(),
            min_bytes,
            max_bytes: None,
            step_factor: 2,
            channels: None,
            nodes: None,
            qps_per_connection: 1,
            split_data_on_qps: false,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            root: 0,
            nics: false,
            pxn: true,
            algo: None,
            proto: None,
            gpus_per_thread: None,
        }
    }

    /// `--algo` / `algo =`: `auto` (NCCL's choice) or an NCCL_ALGO name.
    pub fn parse_algo(s: &str) -> Result<Option<Algo>, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(None);
        }
        Algo::parse(s).map(Some).map_err(|e| format!("{e}, or auto (NCCL's choice)"))
    }

    /// `--proto` / `proto =`: `auto` (NCCL's choice) or an NCCL_PROTO name.
    pub fn parse_proto(s: &str) -> Result<Option<Proto>, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(None);
        }
        Proto::parse(s).map(Some).map_err(|e| format!("{e}, or auto (NCCL's choice)"))
    }

    /// This request with `w`'s keys over it (`w` is `[[workload]]` number `i`); a key that does
    /// not hold a usable value is refused with its path.
    pub fn with_workload(&self, w: &WorkloadConfig, i: usize) -> Result<CollectiveRequest, Vec<Diagnostic>> {
        let d = |key: &str, msg: String, hint: &str| vec![Diagnostic::new(format!("workload[{i}].{key}"), msg, hint)];
        let size = |key: &str, v: &Option<SizeInput>| -> Result<Option<u64>, Vec<Diagnostic>> {
            match v {
                None => Ok(None),
                Some(s) => s.bytes().map(Some).ok_or_else(|| {
                    d(key, format!("{s:?} is not a size"), "a byte count, or a string such as \"64K\" or \"1G\"")
                }),
            }
        };
        let mut r = self.clone();
        if let Some(c) = &w.collective {
            parse_op(c).map_err(|e| d("collective", e, "a collective as nccl-tests names it"))?;
            r.collective = c.clone();
        }
        if let Some(v) = size("min_bytes", &w.min_bytes)? {
            r.min_bytes = v;
        }
        r.max_bytes = size("max_bytes", &w.max_bytes)?.or(r.max_bytes);
        if let Some(v) = size("chunk_bytes", &w.chunk_bytes)? {
            r.chunk_bytes = v;
        }
        if let Some(f) = w.step_factor {
            r.step_factor = f;
        }
        r.channels = w.channels.or(r.channels);
        r.nodes = w.nodes.or(r.nodes);
        if let Some(q) = w.qps_per_connection {
            r.qps_per_connection = q;
        }
        if let Some(split) = w.split_data_on_qps {
            r.split_data_on_qps = split;
        }
        if let Some(root) = w.root {
            r.root = root;
        }
        if let Some(pxn) = w.pxn {
            r.pxn = pxn;
        }
        if let Some(a) = &w.algo {
            r.algo = Self::parse_algo(a).map_err(|e| d("algo", e, "ring, tree or auto"))?;
            if let Some(x) = r.algo.filter(|x| !matches!(x, Algo::Ring | Algo::Tree)) {
                return Err(d(
                    "algo",
                    format!("NCCL_ALGO={} is not on the twin", x.name()),
                    "ring or tree (or auto: NCCL's choice among them)",
                ));
            }
        }
        if let Some(p) = &w.proto {
            r.proto = Self::parse_proto(p).map_err(|e| d("proto", e, "LL, LL128, Simple or auto"))?;
        }
        if let Some(p) = &w.placement {
            r.nics = match p.as_str() {
                "auto" => false,
                "nics" => true,
                _ => return Err(d("placement", format!("placement `{p}`"), "auto or nics")),
            };
        }
        Ok(r)
    }

    /// The sweep's sizes and the collective to run at each (its `bytes` the first size), on
    /// `m`. Errors have the path `collective` (the CLI names its flags).
    pub fn spec(&self, m: &rocelab_model::Model) -> Result<(CollectiveSpec, Vec<u64>), Vec<Diagnostic>> {
        let d = |msg: String, hint: &str| vec![Diagnostic::new("collective", msg, hint)];
        let op = parse_op(&self.collective).map_err(|e| d(e, "a collective as nccl-tests names it"))?;
        let sizes = sweep_sizes(self.min_bytes, self.max_bytes.unwrap_or(self.min_bytes), self.step_factor)
            .map_err(|e| d(e, "e.g. --min-bytes 8 --max-bytes 1G --step-factor 2"))?;
        let spec = CollectiveSpec {
            channels: match self.channels {
                Some(c) => Some(c.max(1)),
                None if self.nics => Some(2),
                None => None,
            },
            qps_per_connection: self.qps_per_connection,
            split_data_on_qps: self.split_data_on_qps,
            algo: self.algo,
            proto: self.proto,
            chunk_bytes: self.chunk_bytes,
            root: self.root,
            ranks: self.nics.then(|| crate::default_ranks(m)),
            gpu_nodes: self.nodes,
            pxn: self.pxn,
            gpus_per_thread: self.gpus_per_thread,
            ..CollectiveSpec::nccl(op, sizes[0])
        };
        Ok((spec, sizes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocelab_model::config::SizeInput;

    #[test]
    fn a_workload_table_overrides_the_flags_typed() {
        let flags = CollectiveRequest { qps_per_connection: 4, ..CollectiveRequest::new("all_reduce", 8) };
        let w = WorkloadConfig {
            collective: Some("alltoall".into()),
            min_bytes: Some(SizeInput::Text("64K".into())),
            max_bytes: Some(SizeInput::Bytes(1 << 20)),
            algo: Some("ring".into()),
            proto: Some("ll128".into()),
            split_data_on_qps: Some(true),
            placement: Some("nics".into()),
            pxn: Some(false),
            ..WorkloadConfig::default()
        };
        let r = flags.with_workload(&w, 3).unwrap();
        assert_eq!(
            r,
            CollectiveRequest {
                collective: "alltoall".into(),
                min_bytes: 64 << 10,
                max_bytes: Some(1 << 20),
                qps_per_connection: 4,
                split_data_on_qps: true,
                nics: true,
                pxn: false,
                algo: Some(Algo::Ring),
                proto: Some(Proto::Ll128),
                ..CollectiveRequest::new("all_reduce", 8)
            }
        );
        // Untouched keys keep the flags' values; `auto` is NCCL's choice.
        let w = WorkloadConfig { algo: Some("AUTO".into()), ..WorkloadConfig::default() };
        assert_eq!(flags.with_workload(&w, 0).unwrap(), flags);
    }

    #[test]
    fn a_bad_key_is_refused_with_its_path() {
        let flags = CollectiveRequest::new("all_reduce", 8);
        for (w, path) in [
            (WorkloadConfig { algo: Some("butterfly".into()), ..Default::default() }, "workload[2].algo"),
            (WorkloadConfig { algo: Some("nvls".into()), ..Default::default() }, "workload[2].algo"),
            (WorkloadConfig { proto: Some("LL64".into()), ..Default::default() }, "workload[2].proto"),
            (WorkloadConfig { placement: Some("gpus".into()), ..Default::default() }, "workload[2].placement"),
            (WorkloadConfig { collective: Some("gather".into()), ..Default::default() }, "workload[2].collective"),
            (
                WorkloadConfig { min_bytes: Some(SizeInput::Text("lots".into())), ..Default::default() },
                "workload[2].min_bytes",
            ),
        ] {
            let e = flags.with_workload(&w, 2).unwrap_err();
            assert_eq!(e[0].path, path, "{e:?}");
        }
    }
}
