//! The JSON documents the tools write, and the `format` version each one carries.
//!
//! Scripts and CI read these documents, so their shape is a contract: each has a JSON Schema in
//! `schemas/` (`schemas/README.md` says which command writes which), and a field renamed or
//! removed bumps the document's version here, in its schema's `format` constant, and in
//! `schemas/CHANGELOG.md`. A test keeps these constants and the schemas in step.

use serde::Serialize;

/// `cqlframe check --json`: `schemas/check.schema.json`.
pub const CHECK: u32 = 1;
/// One line of `cqlframe check --json-lines`: `schemas/check-line.schema.json`.
pub const CHECK_LINE: u32 = 1;
/// `cqlframe decode --json`: `schemas/decode.schema.json`.
pub const DECODE: u32 = 1;
/// `report.json` of `cqlframe conformance` and of `cqlframe probe`: `schemas/report.schema.json`.
pub const REPORT: u32 = 1;
/// `report.json` of `cqlframe proxy`: `schemas/proxy-report.schema.json`.
pub const PROXY_REPORT: u32 = 1;
/// What `cqlframe conformance server` prints when it stops: `schemas/observations.schema.json`.
pub const OBSERVATIONS: u32 = 1;
/// `cqlframe conformance list --json`: `schemas/catalogue.schema.json`.
pub const CATALOGUE: u32 = 1;

/// A document of a serialisable type with its `format` version beside its own fields.
#[derive(Serialize)]
pub struct Versioned<'a, T: Serialize> {
    pub format: u32,
    #[serde(flatten)]
    pub document: &'a T,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn every_schema_states_the_format_version_written() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
        for (file, version) in [
            ("check.schema.json", CHECK),
            ("check-line.schema.json", CHECK_LINE),
            ("decode.schema.json", DECODE),
            ("report.schema.json", REPORT),
            ("proxy-report.schema.json", PROXY_REPORT),
            ("observations.schema.json", OBSERVATIONS),
            ("catalogue.schema.json", CATALOGUE),
        ] {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let schema: serde_json::Value = serde_json::from_str(&text).expect(file);
            assert_eq!(
                schema["properties"]["format"]["const"],
                serde_json::json!(version),
                "{file}"
            );
            assert!(
                schema["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&serde_json::json!("format"))),
                "{file}: format is required"
            );
        }
    }

    #[test]
    fn the_version_sits_beside_the_documents_fields() {
        #[derive(Serialize)]
        struct Doc {
            frames: u32,
        }
        let text = serde_json::to_string(&Versioned {
            format: 7,
            document: &Doc { frames: 2 },
        })
        .unwrap();
        assert_eq!(text, r#"{"format":7,"frames":2}"#);
    }
}
