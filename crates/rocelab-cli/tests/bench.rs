//! `rocelab bench` as hyperfine: warmup and timed runs, mean ± σ / min / max from the runs'
//! own times, the exports (the JSON checked against its documented schema,
//! `docs/bench.schema.json`), and the ratio against a baseline.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn rocelab(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocelab"));
    c.current_dir(dir);
    c
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-bench-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The JSON Schema keywords `docs/bench.schema.json` uses: type (one or several), enum,
/// required, properties, additionalProperties: false, items, minimum, and `$ref` into `$defs`.
fn validate(root: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        return validate(root, &root["$defs"][name], v, at, errors);
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "number" => v.is_number(),
            "integer" => v.is_u64() || v.is_i64(),
            "null" => v.is_null(),
            "boolean" => v.is_boolean(),
            _ => false,
        });
        if !ok {
            errors.push(format!("{at}: {v} is not {types:?}"));
            return;
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{at}: {v} not in {e:?}"));
        }
    }
    if let (Some(min), Some(x)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < min {
            errors.push(format!("{at}: {x} < {min}"));
        }
    }
    if let Some(obj) = v.as_object() {
        for k in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            if !obj.contains_key(k.as_str().unwrap()) {
                errors.push(format!("{at}: missing {k}"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, x) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => validate(root, s, x, &format!("{at}.{k}"), errors),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: unexpected key {k}"))
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(a)) = (schema.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            validate(root, items, x, &format!("{at}[{i}]"), errors);
        }
    }
}

fn schema_errors(doc: &Value) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/bench.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut errors = Vec::new();
    validate(&schema, &schema, doc, "$", &mut errors);
    errors
}

#[test]
fn bench_measures_warmup_and_runs_exports_and_compares_with_a_baseline() {
    let d = tmpdir("runs");
    let o = rocelab(&d)
        .args(["bench", "chain-10k", "--warmup", "1", "--runs", "3", "-q"])
        .args(["--export-json", "base.json", "--export-markdown", "base.md"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let table = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "a header and a row: {table}");
    assert_eq!(lines[0].chars().count(), lines[1].chars().count(), "columns align:\n{table}");
    assert!(lines[0].contains("mean ± σ") && lines[1].starts_with("chain-10k "), "{table}");

    // The export validates against its documented schema ...
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(d.join("base.json")).unwrap()).unwrap();
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:?}\n{doc}");
    // ... and the validator is not blind: a document missing a key or with a stray one fails.
    let mut broken = doc.clone();
    broken["results"][0].as_object_mut().unwrap().remove("times");
    broken["results"][0]["extra"] = Value::from(1);
    assert_eq!(schema_errors(&broken).len(), 2, "{:?}", schema_errors(&broken));

    // Its figures are those of its own runs: 3 timed, 1 warmup; mean, σ (n − 1), min, max.
    let r = &doc["results"][0];
    assert_eq!((r["warmup"].as_u64(), r["runs"].as_u64()), (Some(1), Some(3)));
    let t: Vec<f64> = r["times"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(t.len(), 3);
    let mean = t.iter().sum::<f64>() / 3.0;
    let sd = (t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let s = &r["seconds"];
    assert!((s["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert!((s["stddev"].as_f64().unwrap() - sd).abs() < 1e-12);
    assert_eq!(s["min"].as_f64().unwrap(), t.iter().cloned().fold(f64::INFINITY, f64::min));
    assert_eq!(s["max"].as_f64().unwrap(), t.iter().cloned().fold(0.0, f64::max));
    // 10,000 chained messages, each one data packet of 1,000 B.
    assert_eq!(r["data_packets"], 10_000);

    let md = std::fs::read_to_string(d.join("base.md")).unwrap();
    assert!(md.starts_with("| Scenario | Mean [s] | Min [s] | Max [s] | Runs | Events/s |\n"), "{md}");
    assert!(md.contains("| `chain-10k` | "), "{md}");

    // Against the baseline: the ratio of the means, as both exports give them.
    let o = rocelab(&d)
        .args(["bench", "chain-10k", "--runs", "3", "-q", "--baseline", "base.json", "--export-json", "now.json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.lines().next().unwrap().ends_with("vs baseline"), "{table}");
    let now: Value = serde_json::from_str(&std::fs::read_to_string(d.join("now.json")).unwrap()).unwrap();
    let ratio = now["results"][0]["seconds"]["mean"].as_f64().unwrap() / mean;
    assert!(table.contains(&format!("{ratio:.2} ± ")), "ratio {ratio:.2} not in {table}");

    // A file that is not a bench export is bad input.
    std::fs::write(d.join("x.json"), "{\"schema\": \"rocelab.simulate.summary/v1\", \"results\": []}").unwrap();
    let o = rocelab(&d).args(["bench", "chain-10k", "--baseline", "x.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected `rocelab.bench.results/v1`"));
}

/// `--partitions`: one table row per count, the k=4 fat tree cut into its pods (two, then all
/// four: a count above the pods is capped) with the core links' 1 µs as the lookahead; an
/// unknown cut, a cut the fabric lacks and a count of 0 are bad input naming the fix.
#[test]
fn partitions_report_the_cut_and_refuse_what_cannot_be_cut() {
    let d = tmpdir("partitions");
    let o = rocelab(&d).args(["bench", "--partitions", "2,8", "permutation-16"]).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("| 2 | pod | 4 | ") && table.contains("| 4 | pod | 4 | "), "{table}");
    assert!(table.contains(" | 1000 ns | "), "{table}");
    for (args, says) in [
        (vec!["bench", "--partitions", "2", "--partition-by", "row", "permutation-16"], "unknown --partition-by `row`"),
        (vec!["bench", "--partitions", "2", "--partition-by", "rail", "permutation-16"], "no rail groups"),
        (vec!["bench", "--partitions", "0", "permutation-16"], "a partition count of 0"),
        (vec!["bench", "--partitions", "2", "chain-10k"], "driven by a test workload"),
    ] {
        let o = rocelab(&d).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{args:?}: {o:?}");
    }
}
