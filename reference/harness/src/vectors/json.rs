//! A case as a manifest entry, and its expected result as the reference decodes it.

use super::{Case, Input};
use crate::transcript::{error_json, EnvelopeRecord, FrameRecord, Transcript};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Byte strings up to this long appear as hex in the manifest; longer ones as a SHA-256.
const INLINE_HEX_LIMIT: usize = 512;

/// A byte string as the manifest shows it.
pub fn blob(bytes: &[u8]) -> Value {
    if bytes.len() <= INLINE_HEX_LIMIT {
        json!({ "length": bytes.len(), "hex": hex::encode(bytes) })
    } else {
        json!({ "length": bytes.len(), "sha256": hex::encode(Sha256::digest(bytes)) })
    }
}

/// `bytes` cut by a repeating pattern of chunk sizes, or whole.
pub fn chunks<'a>(bytes: &'a [u8], pattern: Option<&[usize]>) -> Vec<&'a [u8]> {
    let Some(pattern) = pattern else {
        return vec![bytes];
    };
    let mut out = Vec::new();
    let mut rest = bytes;
    for &size in pattern.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at(size.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

pub fn frame_json(f: &FrameRecord) -> Value {
    json!({
        "offset": f.offset,
        "self_contained": f.self_contained,
        "payload_length": f.payload_length,
        "uncompressed_length": f.uncompressed_length,
        "checksum_bit": f.checksum_bit,
        "reserved": f.reserved,
        "header_crc24": format!("{:06x}", f.header_crc24),
        "payload_checksum": format!("{:08x}", f.payload_checksum),
        "payload": blob(&f.payload),
        "content": blob(&f.content),
    })
}

pub fn envelope_json(e: &EnvelopeRecord) -> Value {
    json!({
        "version": e.version,
        "flags": e.flags,
        "stream": e.stream,
        "opcode": e.opcode,
        "opcode_name": e.opcode_name,
        "length": e.length,
        "body": blob(&e.body),
    })
}

/// A transcript in the manifest's `expected` layout (`cqlframe decode --json` has its own, with
/// every byte string whole and the same error: schemas/decode.schema.json).
pub fn transcript_json(t: &Transcript) -> Value {
    json!({
        "frames": t.frames.iter().map(frame_json).collect::<Vec<_>>(),
        "envelopes": t.envelopes.iter().map(envelope_json).collect::<Vec<_>>(),
        "error": error_json(t.error.as_ref()),
    })
}

/// What the reference reports for `case`, fed whole or in `chunking`.
pub fn expected(case: &Case, chunking: Option<&[usize]>) -> Value {
    match &case.input {
        Input::Frames {
            settings,
            max_body,
            bytes,
            ..
        } => transcript_json(&Transcript::decode(
            *settings,
            *max_body,
            chunks(bytes, chunking),
        )),
        Input::Session(session) => session.replay(chunking),
    }
}

/// The rule of the first error in an expected result, if any; in a session that no receiver
/// refuses, the first MUST-level sender rule the judge finds.
fn first_error_rule(expected: &Value) -> Option<String> {
    let rule = |v: &Value| v["error"]["rule"].as_str().map(str::to_string);
    let judged = || {
        let mut found = expected["judged"].as_array()?.iter();
        found
            .find(|f| f["level"] == "MUST")
            .map(|f| f["rule"].as_str().unwrap_or_default().to_string())
    };
    rule(expected)
        .or_else(|| rule(&expected["server_receives"]))
        .or_else(|| rule(&expected["client_receives"]))
        .or_else(judged)
}

/// Files of a case: name under `vectors/cases/`, and bytes.
pub type CaseFiles = Vec<(String, Vec<u8>)>;

/// The manifest entry of `case` and the files holding its bytes.
pub fn entry(case: &Case) -> Result<(Value, CaseFiles), String> {
    let mut expected = expected(case, None);
    if let Input::Session(session) = &case.input {
        // What the judge finds does not depend on how the streams are chunked: computed once.
        [
            expected["judged"],
            expected["charged"],
            expected["unjudged"],
        ] = session.verdict();
    }
    let found = first_error_rule(&expected);
    if found.as_deref() != case.breaks {
        return Err(format!(
            "{}: intends to break {:?}, the reference reports {:?}",
            case.id, case.breaks, found
        ));
    }
    if let Some(rule) = case.breaks {
        if !case.rules.contains(&rule) {
            return Err(format!("{}: breaks {rule} but does not cite it", case.id));
        }
    }
    let mut entry = json!({
        "id": case.id,
        "description": case.description,
        "rules": case.rules,
        "valid": case.breaks.is_none(),
    });
    let mut files = Vec::new();
    match &case.input {
        Input::Frames {
            settings,
            direction,
            max_body,
            bytes,
            decode_only,
        } => {
            let file = format!("{}.bin", case.id);
            entry["kind"] = json!("frames");
            entry["format"] = json!(settings.format.name());
            entry["checksum"] = json!(settings.checksum.name());
            entry["direction"] = json!(direction);
            entry["max_envelope_body"] = json!(max_body);
            entry["decode_only"] = json!(decode_only);
            entry["input"] = with_file(blob(bytes), &file);
            files.push((file, bytes.clone()));
        }
        Input::Session(session) => {
            entry["kind"] = json!("session");
            for (side, bytes) in [("client", &session.client), ("server", &session.server)] {
                let file = format!("{}.{side}.bin", case.id);
                entry[format!("{side}_stream")] = with_file(blob(bytes), &file);
                files.push((file, bytes.clone()));
            }
            entry["client_switch_offset"] = json!(session.client_switch);
            entry["server_switch_offset"] = json!(session.server_switch);
            entry["server_responds_after"] = json!(session.server_responds_after);
            entry["handshake_writes"] = json!(session.handshake_writes.name());
            entry["server_options"] = session.server_options_json();
        }
    }
    entry["expected"] = expected;
    Ok((entry, files))
}

fn with_file(mut blob: Value, file: &str) -> Value {
    blob["file"] = json!(format!("cases/{file}"));
    blob
}

#[cfg(test)]
mod tests {
    use super::error_json;
    use cqlframe::checksum::PayloadChecksum;
    use cqlframe::connection::Role;
    use cqlframe::error::{ErrorKind, FramingError, Lz4Fault, Part};
    use serde_json::Value;
    use std::collections::BTreeSet;
    use std::path::Path;

    /// One error of every kind. [`ErrorKind::NAMES`] makes a kind added to [`ErrorKind`] fail
    /// this until it has a sample (`ErrorKind` is `non_exhaustive`, so a match here could not).
    fn every_kind() -> Vec<ErrorKind> {
        let kinds = vec![
            ErrorKind::HeaderCrcMismatch {
                found: 1,
                computed: 2,
                unframed_envelope: true,
                other_format: false,
            },
            ErrorKind::ChecksumBitMismatch {
                bit: true,
                negotiated: PayloadChecksum::Crc32,
            },
            ErrorKind::PayloadChecksumMismatch {
                algorithm: PayloadChecksum::Crc32c,
                found: 1,
                computed: 2,
            },
            ErrorKind::Lz4Malformed {
                reason: Lz4Fault::EndsAfterMatch,
            },
            ErrorKind::Lz4LengthMismatch {
                declared: 9,
                actual: None,
            },
            ErrorKind::Lz4EndOfBlock {
                last_match_start: 1,
                last_match_end: 5,
                declared: 9,
            },
            ErrorKind::Truncated {
                part: Part::Trailer,
                missing: 2,
            },
            ErrorKind::PartialEnvelope {
                needed: 9,
                available: 5,
            },
            ErrorKind::SequenceOvershoot { excess: 1 },
            ErrorKind::SequenceInterrupted,
            ErrorKind::EmptyContinuation,
            ErrorKind::EnvelopeTooLarge { length: 2, max: 1 },
            ErrorKind::NegativeEnvelopeLength { length: -1 },
            ErrorKind::UnexpectedVersion {
                found: 0x04,
                expected: 0x05,
            },
            ErrorKind::MissingBetaFlag,
            ErrorKind::NotAnEnvelope {
                found: 0x42,
                sender: Role::Client,
            },
            ErrorKind::SentBeforeStartupResponse,
            ErrorKind::UnpairedResponse {
                stream: 7,
                opcode: 0x08,
            },
            ErrorKind::UnsupportedCompression {
                value: "snappy".into(),
            },
            ErrorKind::RepeatedOption {
                key: "COMPRESSION".into(),
            },
            ErrorKind::UnsupportedChecksum {
                value: "MD5".into(),
            },
            ErrorKind::AfterError,
        ];
        let sampled: Vec<&str> = kinds.iter().map(ErrorKind::name).collect();
        assert_eq!(
            sampled,
            ErrorKind::NAMES,
            "one sample of every kind, in order"
        );
        kinds
    }

    /// The names of an object's keys.
    fn keys(value: &Value) -> BTreeSet<String> {
        value
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// `vectors/manifest.schema.json` is written by hand: it names every error kind the
    /// reference can report, with the detail fields the reference writes for it, so that a
    /// manifest holding any of them validates.
    #[test]
    fn the_manifest_schema_knows_every_error_kind_and_its_detail() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vectors/manifest.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let error = &schema["$defs"]["error"];
        let named: BTreeSet<String> = error["properties"]["kind"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        let kinds = every_kind();
        let reported: BTreeSet<String> = kinds.iter().map(|k| k.name().to_string()).collect();
        assert_eq!(named, reported, "the schema's error kinds");
        for kind in kinds {
            let json = error_json(Some(&FramingError::new(kind, 0)));
            let name = json["kind"].as_str().unwrap();
            let layout = error["allOf"]
                .as_array()
                .unwrap()
                .iter()
                .find(|rule| rule["if"]["properties"]["kind"]["const"] == name)
                .unwrap_or_else(|| panic!("no detail layout for {name}"));
            let detail = &layout["then"]["properties"]["detail"];
            assert_eq!(
                keys(&json["detail"]),
                keys(&detail["properties"]),
                "detail fields of {name}"
            );
        }
    }
}
