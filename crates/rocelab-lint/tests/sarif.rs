//! The SARIF output validates against the SARIF 2.1.0 schema: the definitions rocelab uses,
//! transcribed from the OASIS sarif-schema-2.1.0.json into `tests/data/`, checked by a small
//! JSON-schema (draft-07 subset) validator that is itself tested below.

use rocelab_lint::{lint, output, Options};
use serde_json::{json, Map, Value};

const SCHEMA: &str = include_str!("data/sarif-schema-2.1.0-subset.json");

/// Validates `v` against `schema` (resolving `#/definitions/...` in `root`); errors carry the
/// JSON path. Supports: $ref, type, enum, properties, additionalProperties (bool or schema),
/// required, anyOf, items, minItems, uniqueItems, minimum, maximum, format (uri,
/// uri-reference).
fn validate(root: &Value, schema: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    let s = schema.as_object().expect("schema is an object");
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/definitions/").expect("local ref");
        return validate(root, &root["definitions"][name], v, path, errs);
    }
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            other => panic!("type {other} not supported"),
        };
        if !ok {
            errs.push(format!("{path}: expected {t}, got {v}"));
            return;
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errs.push(format!("{path}: {v} not in {e:?}"));
        }
    }
    if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
        if v.as_f64().is_some_and(|x| x < min) {
            errs.push(format!("{path}: {v} < minimum {min}"));
        }
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
        if v.as_f64().is_some_and(|x| x > max) {
            errs.push(format!("{path}: {v} > maximum {max}"));
        }
    }
    if let (Some(f), Some(text)) = (s.get("format").and_then(Value::as_str), v.as_str()) {
        let bad_chars = !uri_reference_ok(text);
        let scheme = text.split_once(':').is_some_and(|(sch, _)| {
            sch.len() > 1 && sch.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        });
        let ok = match f {
            "uri" => scheme && !bad_chars,
            "uri-reference" => !bad_chars,
            other => panic!("format {other} not supported"),
        };
        if !ok {
            errs.push(format!("{path}: {text:?} is not a valid {f}"));
        }
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for req in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            let k = req.as_str().unwrap();
            if !obj.contains_key(k) {
                errs.push(format!("{path}: required `{k}` missing"));
            }
        }
        for (k, x) in obj {
            let p = format!("{path}.{k}");
            match props.and_then(|ps| ps.get(k)) {
                Some(ps) => validate(root, ps, x, &p, errs),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => errs.push(format!("{path}: property `{k}` is not allowed")),
                    Some(ap @ Value::Object(_)) => validate(root, ap, x, &p, errs),
                    _ => {}
                },
            }
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        let ok = any.iter().any(|alt| {
            let mut e = Vec::new();
            validate(root, alt, v, path, &mut e);
            e.is_empty()
        });
        if !ok {
            errs.push(format!("{path}: matches none of anyOf"));
        }
    }
    if let Some(items) = v.as_array() {
        if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
            if (items.len() as u64) < min {
                errs.push(format!("{path}: fewer than {min} items"));
            }
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, x) in items.iter().enumerate() {
                if items[..i].contains(x) {
                    errs.push(format!("{path}[{i}]: duplicate item"));
                }
            }
        }
        if let Some(is) = s.get("items") {
            for (i, x) in items.iter().enumerate() {
                validate(root, is, x, &format!("{path}[{i}]"), errs);
            }
        }
    }
}

/// RFC 3986: only unreserved and reserved ASCII characters, and `%` only as `%XX`.
fn uri_reference_ok(text: &str) -> bool {
    let b = text.as_bytes();
    let escapes_ok = (0..b.len())
        .all(|i| b[i] != b'%' || (i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()));
    escapes_ok && text.chars().all(|c| c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c))
}

fn check(v: &Value) -> Vec<String> {
    let root: Value = serde_json::from_str(SCHEMA).expect("schema parses");
    let mut errs = Vec::new();
    validate(&root, &root, v, "$", &mut errs);
    errs
}

fn report(text: &str, opts: &Options) -> Value {
    let model = rocelab_model::load_str("fabrics/x y.toml", text).expect("fixture loads");
    let r = lint(&model, "fabrics/x y.toml", text, opts);
    serde_json::from_str(&output::sarif(&[r])).expect("SARIF is JSON")
}

#[test]
fn sarif_output_validates_against_the_2_1_0_schema() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/common-mistakes.toml"))
        .unwrap()
        + "\n[[lint.disable]]\ncode = \"TOP003\"\nreason = \"hash set by the \\\"fabric\\\" team\"\n";
    let opts = Options { disable: vec![("NIC002".into(), "rollout in progress".into())] };
    let v = report(&text, &opts);
    assert_eq!(check(&v), Vec::<String>::new());
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 20);
    assert_eq!(results.iter().filter(|r| r.get("suppressions").is_some()).count(), 2);
    // A path with a space becomes a valid URI reference.
    assert_eq!(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "fabrics/x%20y.toml");
}

/// Non-ASCII names (`é` is two UTF-8 bytes), `#`, `?`, `%` and `:` are percent-encoded, so the URI
/// is a strict RFC 3986 `uri-reference`, and decoding it gives the path back.
#[test]
fn sarif_uris_are_strict_rfc_3986() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/common-mistakes.toml")).unwrap();
    for (file, want) in [
        ("réseau/fabric é.toml", "r%C3%A9seau/fabric%20%C3%A9.toml"),
        ("a#b?c%d:e.toml", "a%23b%3Fc%25d%3Ae.toml"),
        ("./x/y.toml", "x/y.toml"),
        ("C:\\fab\\f.toml", "C%3A/fab/f.toml"),
    ] {
        let model = rocelab_model::load_str(file, &text).expect("the example loads");
        let r = lint(&model, file, &text, &Options::default());
        let v: Value = serde_json::from_str(&output::sarif(&[r])).unwrap();
        assert_eq!(check(&v), Vec::<String>::new(), "{file}");
        let loc = &v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
        assert_eq!(loc.as_str().unwrap(), want, "{file}");
    }
    // The checker itself refuses what a strict uri-reference cannot hold.
    for bad in ["fabric é.toml", "a b", "50%", "%zz", "a\\b"] {
        assert!(!uri_reference_ok(bad), "{bad}");
    }
    assert!(uri_reference_ok("r%C3%A9seau/x.toml"));
}

#[test]
fn an_empty_report_validates_too() {
    let v: Value = serde_json::from_str(&output::sarif(&[])).unwrap();
    assert_eq!(check(&v), Vec::<String>::new());
}

/// The validator rejects what the schema rejects (so a pass above means something).
#[test]
fn the_validator_catches_schema_violations() {
    let good = json!({
        "$schema": output::SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "rocelab", "rules": [{ "id": "X1", "shortDescription": { "text": "t" } }] } },
            "results": [{
                "ruleId": "X1", "ruleIndex": 0, "level": "error", "message": { "text": "m" },
                "locations": [{ "physicalLocation": {
                    "artifactLocation": { "uri": "a.toml" }, "region": { "startLine": 1, "startColumn": 1 } } }],
                "suppressions": [{ "kind": "external", "justification": "j" }]
            }]
        }]
    });
    assert_eq!(check(&good), Vec::<String>::new());
    let broken = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        check(&v)
    };
    let result = |v: &mut Value| -> Map<String, Value> { v["runs"][0]["results"][0].as_object().unwrap().clone() };
    assert!(!broken(&|v| v["version"] = json!("2.0.0")).is_empty());
    assert!(!broken(&|v| {
        v.as_object_mut().unwrap().remove("runs");
    })
    .is_empty());
    assert!(!broken(&|v| v["runs"][0]["results"][0]["level"] = json!("fatal")).is_empty());
    assert!(!broken(&|v| {
        let mut r = result(v);
        r.insert("ruleID".into(), json!("X1"));
        v["runs"][0]["results"][0] = Value::Object(r);
    })
    .is_empty());
    assert!(!broken(&|v| v["runs"][0]["results"][0]["message"] = json!({ "markdown": "m" })).is_empty());
    assert!(!broken(
        &|v| v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = json!(0)
    )
    .is_empty());
    assert!(!broken(&|v| v["runs"][0]["results"][0]["suppressions"][0]["kind"] = json!("inline")).is_empty());
    assert!(!broken(&|v| v["runs"][0]["tool"]["driver"]["rules"][0]["shortDescription"] = json!({})).is_empty());
    assert!(!broken(&|v| v["$schema"] = json!("not a uri")).is_empty());
    assert!(!broken(&|v| v["runs"][0]["tool"]["driver"].as_object_mut().unwrap().remove("name").map(|_| ()).unwrap())
        .is_empty());
}
