//! Inference serving as run intent: the keys of a plan file's `[serve]` table, and a
//! `[[workload]]` table with `serve = "plan"` (or a plan file's path) carrying the same keys.
//!
//! Both are checked here, with the same bounds, so `rocelab lint`, `simulate --serve` and
//! `simulate --workload` refuse the same value with the same message. The twin that runs them
//! is `rocelab_workload::serve`.

use crate::config::WorkloadConfig;
use crate::diag::Diagnostic;

/// The most requests one serving run takes (the twin's message tags name a request in 24 bits;
/// a trace this long is days of traffic).
pub const MAX_REQUESTS: usize = 1 << 24;

/// How a disaggregated plan's KV cache crosses the fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KvTransferMode {
    /// Each layer's KV as that layer's prefill ends.
    #[default]
    Layer,
    /// The whole prompt's KV after the prefill.
    Whole,
}

/// The traffic a serving plan meets, checked. `None`: the twin's default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServeTable {
    /// `"plan"` (this fabric file's `[plan]`) or a plan file's path, relative to the fabric
    /// file. Empty inside a plan file's own `[serve]`.
    pub plan: String,
    /// Poisson arrivals, requests/s (ignored with a trace).
    pub rate_per_s: Option<f64>,
    pub requests: Option<u32>,
    /// A trace file, relative to the file that names it.
    pub trace: Option<String>,
    pub token_budget: Option<u32>,
    pub max_batch: Option<u32>,
    pub kv_transfer: Option<KvTransferMode>,
}

/// Checks the serving keys; an error names the key (`path.key`) and the fix.
pub fn check(
    path: &str,
    rate_per_s: Option<f64>,
    requests: Option<u32>,
    trace: Option<&str>,
    kv_transfer: Option<&str>,
) -> Result<Option<KvTransferMode>, Diagnostic> {
    let d = |key: &str, msg: String, hint: &str| Diagnostic::new(format!("{path}.{key}"), msg, hint);
    if let Some(r) = rate_per_s {
        if !(r.is_finite() && r > 0.0) {
            return Err(d("rate_per_s", format!("rate_per_s = {r}"), "give a positive rate in requests/s"));
        }
    }
    if let Some(n) = requests {
        if n == 0 || n as usize > MAX_REQUESTS {
            return Err(d("requests", format!("requests = {n}"), &format!("give 1 to {MAX_REQUESTS}")));
        }
    }
    if let Some(t) = trace {
        if t.trim().is_empty() {
            return Err(d(
                "trace",
                "an empty trace path".into(),
                "name a file: `arrival_s, prompt_tokens, output_tokens` a line",
            ));
        }
    }
    match kv_transfer {
        None => Ok(None),
        Some("layer") => Ok(Some(KvTransferMode::Layer)),
        Some("whole") => Ok(Some(KvTransferMode::Whole)),
        Some(o) => Err(d(
            "kv_transfer",
            format!("kv_transfer = \"{o}\""),
            "\"layer\" (each layer's KV as its prefill ends) or \"whole\" (after the prefill)",
        )),
    }
}

/// A `[[workload]]` table with `serve` set, checked (`path` is `workload[i]`).
pub(crate) fn workload(w: &WorkloadConfig, plan_present: bool, path: &str) -> Result<ServeTable, Diagnostic> {
    let d = |key: &str, msg: String, hint: &str| Diagnostic::new(format!("{path}.{key}"), msg, hint);
    let plan = w.serve.clone().unwrap_or_default();
    if w.collective.is_some() || w.step.is_some() {
        return Err(d(
            "serve",
            "a workload names a collective, a step or a serving plan, one of them".into(),
            "split it into two [[workload]] tables",
        ));
    }
    if plan.trim().is_empty() {
        return Err(d(
            "serve",
            "an empty serve value".into(),
            "serve = \"plan\" (this file's [plan]) or a plan file's path",
        ));
    }
    if plan == "plan" && !plan_present {
        return Err(d(
            "serve",
            "serve = \"plan\" but the file has no [plan] table".into(),
            "add a [plan] table (rocelab plan's keys, an inference plan) or give a plan file's path",
        ));
    }
    // Keys of a collective that a serving run would silently ignore.
    for (key, set) in [
        ("min_bytes", w.min_bytes.is_some()),
        ("max_bytes", w.max_bytes.is_some()),
        ("channels", w.channels.is_some()),
        ("algo", w.algo.is_some()),
        ("proto", w.proto.is_some()),
        ("root", w.root.is_some()),
    ] {
        if set {
            return Err(d(key, format!("`{key}` on a serving workload"), "drop it: it belongs to a collective"));
        }
    }
    for (key, v) in [("token_budget", w.token_budget), ("max_batch", w.max_batch)] {
        if v == Some(0) {
            return Err(d(key, format!("{key} = 0"), "give 1 or more, or leave it out for the default"));
        }
    }
    let kv_transfer = check(path, w.rate_per_s, w.requests, w.trace.as_deref(), w.kv_transfer.as_deref())?;
    Ok(ServeTable {
        plan,
        rate_per_s: w.rate_per_s,
        requests: w.requests,
        trace: w.trace.clone(),
        token_budget: w.token_budget,
        max_batch: w.max_batch,
        kv_transfer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_name_the_key_and_the_fix() {
        assert_eq!(check("serve", Some(2.0), Some(10), None, Some("whole")).unwrap(), Some(KvTransferMode::Whole));
        let e = check("workload[1]", Some(0.0), None, None, None).unwrap_err();
        assert_eq!(e.path, "workload[1].rate_per_s");
        let e = check("serve", None, Some(0), None, None).unwrap_err();
        assert!(e.hint.contains("16777216"), "{e}");
        let e = check("serve", None, None, None, Some("chunks")).unwrap_err();
        assert_eq!(e.path, "serve.kv_transfer");
        assert!(check("serve", Some(f64::NAN), None, None, None).is_err());
    }
}
