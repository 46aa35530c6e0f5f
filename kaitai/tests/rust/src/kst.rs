//! The kst-like cases of kaitai/tests/kst (kaitai_struct_tests' shape: id, data, asserts or
//! exception). Rust has no reflection, so each generated type lists its seq fields and
//! instances once (`node!` below) and a path `a.b[1].c_d` walks those accessors by name;
//! `size` is a list's or a byte array's length; an expected `x::y::z` is the member `z` of the
//! generated enum of the grammar's `x::y` (by the member name the generated code keeps).

use std::path::Path;
use std::rc::Rc;

use kaitai::{KResult, OptRc};
use serde::Deserialize;
use serde_yaml_ng::Value as Yaml;

use crate::generated::cql_envelope::{CqlEnvelope, CqlEnvelope_Header, CqlEnvelope_Opcode};
use crate::generated::cql_envelopes::CqlEnvelopes;
use crate::generated::cql_frame_lz4::{
    CqlFrameLz4, CqlFrameLz4_Header, CqlFrameLz4_Payload, CqlFrameLz4_PayloadChecksumAlgorithm,
};
use crate::generated::cql_frame_uncompressed::{
    CqlFrameUncompressed, CqlFrameUncompressed_Header, CqlFrameUncompressed_Payload,
    CqlFrameUncompressed_PayloadChecksumAlgorithm,
};
use crate::generated::cql_frames_lz4::CqlFramesLz4;
use crate::generated::cql_frames_uncompressed::CqlFramesUncompressed;
use crate::grammar::{parse, ParseFailure, Stage};

/// A value read from a parsed object.
pub enum Value {
    Bool(bool),
    Int(i128),
    Bytes(Vec<u8>),
    /// A member of a generated enum: the grammar's enum (`cql_envelope::opcode`), the member's
    /// name in the generated code (None for a value the enum does not list), its value.
    Enum {
        enum_id: &'static str,
        member: Option<String>,
        value: i64,
    },
    List(Vec<Value>),
    Object(Rc<dyn Node>),
}

/// A generated type whose fields and instances can be read by their .ksy names.
pub trait Node {
    /// None when the type has no such name.
    fn get(&self, name: &str) -> Option<KResult<Value>>;
}

/// A Rust value of a generated accessor, as a Value.
pub trait ToValue {
    fn to_value(&self) -> Value;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Int(i128::from(*self))
            }
        }
    )*};
}
integers!(u8, i16, i32, u32, u64);

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Bytes(self.clone())
    }
}

impl<T: Node + 'static> ToValue for OptRc<T> {
    fn to_value(&self) -> Value {
        Value::Object(self.get())
    }
}

impl<T: Node + 'static> ToValue for Vec<OptRc<T>> {
    fn to_value(&self) -> Value {
        Value::List(self.iter().map(ToValue::to_value).collect())
    }
}

/// Generated enums: `Type => "ksy_id::enum"`.
macro_rules! enums {
    ($($t:ident => $enum_id:literal),* $(,)?) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                let member = match self {
                    $t::Unknown(_) => None,
                    known => Some(format!("{known:?}")),
                };
                Value::Enum { enum_id: $enum_id, member, value: i64::from(self) }
            }
        }
    )*};
}
enums! {
    CqlEnvelope_Opcode => "cql_envelope::opcode",
    CqlFrameUncompressed_PayloadChecksumAlgorithm => "cql_frame_uncompressed::payload_checksum_algorithm",
    CqlFrameLz4_PayloadChecksumAlgorithm => "cql_frame_lz4::payload_checksum_algorithm",
}

/// A generated type's seq fields (plain accessors) and instances (accessors that may fail).
macro_rules! node {
    ($t:ty { fields: [$($field:ident),*], instances: [$($instance:ident),*] }) => {
        impl Node for $t {
            fn get(&self, name: &str) -> Option<KResult<Value>> {
                match name {
                    $(stringify!($field) => Some(Ok(self.$field().to_value())),)*
                    $(stringify!($instance) => Some(self.$instance().map(|v| v.to_value())),)*
                    _ => None,
                }
            }
        }
    };
}
node!(CqlEnvelope {
    fields: [header, body],
    instances: []
});
node!(CqlEnvelope_Header {
    fields: [version, flags, stream, opcode, body_length],
    instances: [
        has_compression,
        has_custom_payload,
        has_tracing,
        has_use_beta,
        has_warning,
        is_response,
        protocol_version
    ]
});
node!(CqlEnvelopes {
    fields: [envelopes],
    instances: []
});
node!(CqlFrameUncompressed {
    fields: [header, payload, payload_checksum],
    instances: []
});
node!(CqlFrameUncompressed_Header {
    fields: [
        payload_length,
        self_contained,
        checksum_bit,
        reserved,
        header_crc24
    ],
    instances: [crc24_input, payload_checksum_algorithm]
});
node!(CqlFrameUncompressed_Payload {
    fields: [is_self_contained, envelopes, fragment],
    instances: [bytes]
});
node!(CqlFrameLz4 {
    fields: [header, payload, payload_checksum],
    instances: []
});
node!(CqlFrameLz4_Header {
    fields: [
        compressed_length,
        uncompressed_length,
        self_contained,
        checksum_bit,
        reserved,
        header_crc24
    ],
    instances: [crc24_input, is_stored, payload_checksum_algorithm]
});
node!(CqlFrameLz4_Payload {
    fields: [is_self_contained, is_stored, envelopes, fragment, block],
    instances: [bytes]
});
node!(CqlFramesUncompressed {
    fields: [frames],
    instances: []
});
node!(CqlFramesLz4 {
    fields: [frames],
    instances: []
});

/// Parses `data` as the grammar's top-level type `format`.
fn parse_top(format: &str, data: &[u8]) -> Option<Result<Rc<dyn Node>, ParseFailure>> {
    fn top<T: kaitai::KStruct + Node + 'static>(data: &[u8]) -> Result<Rc<dyn Node>, ParseFailure> {
        parse::<T>(Stage::Kst, data).map(|t| t.get() as Rc<dyn Node>)
    }
    Some(match format {
        "cql_envelope" => top::<CqlEnvelope>(data),
        "cql_envelopes" => top::<CqlEnvelopes>(data),
        "cql_frame_uncompressed" => top::<CqlFrameUncompressed>(data),
        "cql_frame_lz4" => top::<CqlFrameLz4>(data),
        "cql_frames_uncompressed" => top::<CqlFramesUncompressed>(data),
        "cql_frames_lz4" => top::<CqlFramesLz4>(data),
        _ => return None,
    })
}

/// Follows a kst path from a parsed object.
fn evaluate(root: Rc<dyn Node>, path: &str) -> Result<Value, String> {
    let mut value = Value::Object(root);
    for part in path.split('.') {
        let (name, index) = match part.strip_suffix(']').and_then(|p| p.split_once('[')) {
            Some((name, index)) => (
                name,
                Some(parse_index(index).ok_or(format!("bad index in {part}"))?),
            ),
            None => (part, None),
        };
        value = match (&value, name) {
            (Value::List(items), "size") => Value::Int(items.len() as i128),
            (Value::Bytes(bytes), "size") => Value::Int(bytes.len() as i128),
            (Value::Object(node), _) => match node.get(name) {
                Some(read) => read.map_err(|e| format!("{name}: runtime error {e:?}"))?,
                None => return Err(format!("no {name} here")),
            },
            _ => return Err(format!("{name} of a value that is not an object")),
        };
        if let Some(i) = index {
            value = match value {
                Value::List(mut items) if i < items.len() => items.swap_remove(i),
                Value::Bytes(bytes) if i < bytes.len() => Value::Int(i128::from(bytes[i])),
                _ => return Err(format!("{part}: index out of range or not a list")),
            };
        }
    }
    Ok(value)
}

fn parse_index(text: &str) -> Option<usize> {
    match text.strip_prefix("0x") {
        Some(hex) => usize::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `auth_challenge` as the generated code names the member: `AuthChallenge`.
fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Whether an evaluated value equals a case's expected value.
fn matches(actual: &Value, expected: &Yaml) -> bool {
    match (actual, expected) {
        (Value::Bool(a), Yaml::Bool(e)) => a == e,
        (Value::Int(a), Yaml::Number(e)) => {
            e.as_i64().map(i128::from).or(e.as_u64().map(i128::from)) == Some(*a)
        }
        (Value::Enum { value, .. }, Yaml::Number(e)) => e.as_i64() == Some(*value),
        (Value::Bytes(a), Yaml::Sequence(e)) => {
            a.len() == e.len()
                && a.iter()
                    .zip(e)
                    .all(|(b, v)| v.as_u64() == Some(u64::from(*b)))
        }
        (
            Value::Enum {
                enum_id, member, ..
            },
            Yaml::String(e),
        ) => match e.rsplit_once("::") {
            Some((id, name)) => id == *enum_id && member.as_deref() == Some(camel(name).as_str()),
            None => false,
        },
        _ => false,
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Bytes(b) => format!("bytes {}", crate::manifest::hex(b)),
        Value::Enum {
            enum_id,
            member,
            value,
        } => format!("{enum_id} {member:?} ({value})"),
        Value::List(items) => format!("a list of {}", items.len()),
        Value::Object(_) => "an object".to_string(),
    }
}

#[derive(Deserialize)]
struct Assert {
    actual: String,
    expected: Yaml,
}

#[derive(Deserialize)]
struct KstCase {
    id: String,
    format: String,
    data: Option<String>,
    #[serde(rename = "data-hex")]
    data_hex: Option<String>,
    exception: Option<String>,
    #[serde(default)]
    asserts: Vec<Assert>,
}

fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| format!("data-hex: {e}")))
        .collect()
}

/// Runs one case: its name and the problems found (none: passed). Err when the case itself
/// cannot be read.
pub fn run(file: &Path, vectors: &Path) -> Result<(String, Vec<String>), String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let case: KstCase = serde_yaml_ng::from_str(&text).map_err(|e| e.to_string())?;
    let name = format!("kst {}", case.id);
    let data = match (&case.data, &case.data_hex) {
        (Some(path), _) => std::fs::read(vectors.join(path)).map_err(|e| format!("{path}: {e}"))?,
        (None, Some(text)) => from_hex(text)?,
        (None, None) => return Err(format!("{name}: no data")),
    };
    let parsed = match parse_top(&case.format, &data) {
        None => return Ok((name, vec![format!("unknown format {}", case.format)])),
        Some(parsed) => parsed,
    };
    let root = match (parsed, &case.exception) {
        (Err(ParseFailure::Grammar { name: raised, .. }), Some(want)) if raised == want => {
            return Ok((name, vec![]))
        }
        (Err(failure), _) => return Ok((name, vec![failure.to_string()])),
        (Ok(_), Some(want)) => return Ok((name, vec![format!("parsed, expected {want}")])),
        (Ok(root), None) => root,
    };
    let problems = case
        .asserts
        .iter()
        .filter_map(|a| match evaluate(root.clone(), &a.actual) {
            Err(e) => Some(format!("{}: {e}", a.actual)),
            Ok(v) if !matches(&v, &a.expected) => Some(format!(
                "{} = {}, expected {:?}",
                a.actual,
                describe(&v),
                a.expected
            )),
            Ok(_) => None,
        })
        .collect();
    Ok((name, problems))
}
