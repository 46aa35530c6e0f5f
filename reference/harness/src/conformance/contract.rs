//! The adapter contract's version and the check of an adapter's report against
//! `conformance/adapter-report.schema.json`.
//!
//! The schema has a handful of fields, so the check is written here against it rather than
//! through a general JSON Schema validator (the `jsonschema` crate would bring a regex engine,
//! URL and IDNA handling and some forty crates into the harness for these few lines); a test
//! keeps the two in step by reading the schema file.

use serde_json::Value;

/// The contract version this harness speaks. The harness passes it to every adapter in
/// `CQLFRAME_CONTRACT`; an adapter states the version it was written for in its report's
/// `contract` field (absent: 1).
pub const CONTRACT: u64 = 1;

/// The contract version a report states (1 when it has no `contract` field).
fn stated_version(report: &Value) -> Result<u64, String> {
    match report.get("contract") {
        None => Ok(1),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("/contract: expected an integer, found {v}")),
    }
}

fn expect_string(report: &Value, field: &str, nullable: bool) -> Result<(), String> {
    match report.get(field) {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Null) if nullable => Ok(()),
        Some(v) => Err(format!(
            "/{field}: expected a string{}, found {v}",
            if nullable { " or null" } else { "" }
        )),
    }
}

/// One `results` entry: `{rows, digest}`, `{ok: true}` or `{error}`, exactly one of them.
fn check_result(i: usize, entry: &Value) -> Result<(), String> {
    let at = format!("/results/{i}");
    let Some(obj) = entry.as_object() else {
        return Err(format!("{at}: expected an object, found {entry}"));
    };
    let kinds = [
        obj.contains_key("rows") || obj.contains_key("digest"),
        obj.contains_key("ok"),
        obj.contains_key("error"),
    ];
    match kinds {
        [true, false, false] => {
            if !obj.get("rows").is_some_and(Value::is_u64) {
                return Err(format!("{at}/rows: expected a non-negative integer"));
            }
            let digest = obj.get("digest").and_then(Value::as_str).unwrap_or("");
            let hex = digest.len() == 64
                && digest
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                return Err(format!(
                    "{at}/digest: expected 64 lowercase hex digits (SHA-256), found {}",
                    obj.get("digest")
                        .map_or_else(|| "nothing".to_string(), Value::to_string)
                ));
            }
            Ok(())
        }
        [false, true, false] if obj["ok"] == Value::Bool(true) => Ok(()),
        [false, true, false] => Err(format!("{at}/ok: expected true, found {}", obj["ok"])),
        [false, false, true] if obj["error"].is_string() => Ok(()),
        [false, false, true] => Err(format!(
            "{at}/error: expected a string, found {}",
            obj["error"]
        )),
        _ => Err(format!(
            "{at}: expected exactly one of {{rows, digest}}, {{ok}} or {{error}}, found {entry}"
        )),
    }
}

/// Checks an adapter's report against the schema; the error names the JSON pointer of the
/// first field that breaks it.
pub fn validate(report: &Value) -> Result<(), String> {
    if !report.is_object() {
        return Err(format!("the report is not a JSON object: {report}"));
    }
    let version = stated_version(report)?;
    if version != CONTRACT {
        return Err(format!(
            "/contract: the adapter was written for contract {version}; this harness speaks contract {CONTRACT} (update the kit or the adapter)"
        ));
    }
    for field in ["driver", "driver_version", "case", "action", "unsupported"] {
        expect_string(report, field, false)?;
    }
    expect_string(report, "error", true)?;
    if report.get("unsupported").is_some() {
        if report.get("results").is_some() {
            return Err("an unsupported report (exit 127) has no /results".into());
        }
        return Ok(());
    }
    if report.get("driver").is_none() {
        return Err("/driver: missing (the driver's name)".into());
    }
    let Some(results) = report.get("results") else {
        return Err("/results: missing (one entry per request)".into());
    };
    let Some(results) = results.as_array() else {
        return Err(format!("/results: expected an array, found {results}"));
    };
    results
        .iter()
        .enumerate()
        .try_for_each(|(i, r)| check_result(i, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn reports_of_each_kind_pass() {
        for report in [
            json!({"unsupported": "no v6"}),
            json!({"driver": "d", "contract": 1, "results": [], "error": null}),
            json!({"driver": "d", "results": [{"rows": 3, "digest": DIGEST}, {"ok": true}, {"error": "x"}]}),
        ] {
            assert_eq!(validate(&report), Ok(()), "{report}");
        }
    }

    #[test]
    fn each_broken_field_is_named() {
        for (report, pointer) in [
            (json!([1]), "not a JSON object"),
            (
                json!({"driver": "d", "contract": 2, "results": []}),
                "/contract",
            ),
            (json!({"driver": "d"}), "/results"),
            (json!({"results": []}), "/driver"),
            (json!({"driver": "d", "results": {}}), "/results"),
            (json!({"driver": "d", "error": 3, "results": []}), "/error"),
            (
                json!({"driver": "d", "results": [{"rows": -1, "digest": DIGEST}]}),
                "/results/0/rows",
            ),
            (
                json!({"driver": "d", "results": [{"rows": 1, "digest": "AB"}]}),
                "/results/0/digest",
            ),
            (
                json!({"driver": "d", "results": [{"ok": false}]}),
                "/results/0/ok",
            ),
            (
                json!({"driver": "d", "results": [{"ok": true, "error": "x"}]}),
                "/results/0",
            ),
            (json!({"unsupported": "x", "results": []}), "/results"),
        ] {
            let e = validate(&report).expect_err(&report.to_string());
            assert!(e.contains(pointer), "{report}: {e}");
        }
    }

    /// The hand check follows the schema file: same contract version, same required fields,
    /// same result kinds.
    #[test]
    fn the_schema_file_says_the_same() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../conformance/adapter-report.schema.json"
        );
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(schema["properties"]["contract"]["const"], json!(CONTRACT));
        assert_eq!(schema["oneOf"][0]["required"], json!(["unsupported"]));
        assert_eq!(schema["oneOf"][1]["required"], json!(["driver", "results"]));
        let kinds: Vec<&Value> = schema["$defs"]["result"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| &k["required"])
            .collect();
        assert_eq!(
            kinds,
            [
                &json!(["rows", "digest"]),
                &json!(["ok"]),
                &json!(["error"])
            ]
        );
        assert_eq!(
            schema["$defs"]["result"]["oneOf"][0]["properties"]["digest"]["pattern"],
            json!("^[0-9a-f]{64}$")
        );
    }
}
