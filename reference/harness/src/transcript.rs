//! An owned record of everything a decoder reported for a stream: the expected results of the
//! golden vectors and the JSON of `cqlframe decode`, which show a framing error alike.

use cqlframe::decoder::{Decoder, Event};
use cqlframe::envelope::{opcode_name, Envelope};
use cqlframe::error::FramingError;
use cqlframe::format::{Format, FrameSettings};
use cqlframe::frame_decoder::Frame;
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

/// One frame, every header field and both checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FrameRecord {
    pub offset: u64,
    pub self_contained: bool,
    pub payload_length: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncompressed_length: Option<u32>,
    pub checksum_bit: bool,
    pub reserved: u8,
    pub header_crc24: u32,
    pub payload_checksum: u32,
    /// The payload as on the wire.
    #[serde(with = "hex::serde")]
    pub payload: Vec<u8>,
    /// The content it carries (differs from `payload` only for compressed LZ4 frames).
    #[serde(with = "hex::serde")]
    pub content: Vec<u8>,
}

impl FrameRecord {
    pub fn of(frame: &Frame<'_>) -> Self {
        let h = frame.header;
        FrameRecord {
            offset: frame.offset,
            self_contained: h.self_contained,
            payload_length: h.payload_length,
            uncompressed_length: (h.format == Format::Lz4).then_some(h.uncompressed_length),
            checksum_bit: h.checksum_bit,
            reserved: h.reserved,
            header_crc24: h.crc24,
            payload_checksum: frame.payload_checksum,
            payload: frame.payload.to_vec(),
            content: frame.content.to_vec(),
        }
    }
}

/// One envelope: header fields and body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvelopeRecord {
    pub version: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: u8,
    pub opcode_name: String,
    pub length: i32,
    #[serde(with = "hex::serde")]
    pub body: Vec<u8>,
}

impl EnvelopeRecord {
    pub fn of(envelope: &Envelope<'_>) -> Self {
        let h = envelope.header;
        EnvelopeRecord {
            version: h.version,
            flags: h.flags,
            stream: h.stream,
            opcode: h.opcode,
            opcode_name: opcode_name(h.opcode),
            length: h.length,
            body: envelope.body.to_vec(),
        }
    }
}

/// Frames, envelopes, and the error that stopped decoding, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Transcript {
    pub frames: Vec<FrameRecord>,
    pub envelopes: Vec<EnvelopeRecord>,
    #[serde(serialize_with = "serialize_error")]
    pub error: Option<FramingError>,
}

/// A framing error as the manifest and `cqlframe decode --json` show it: the rule it breaks,
/// the kind's name, the offset, and the kind's own fields as `detail`; null for none.
pub fn error_json(error: Option<&FramingError>) -> Value {
    let Some(e) = error else { return Value::Null };
    let mut detail = serde_json::to_value(&e.kind).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut detail {
        map.remove("kind");
    }
    json!({ "rule": e.rule(), "kind": e.kind.name(), "offset": e.offset, "detail": detail })
}

fn serialize_error<S: Serializer>(
    error: &Option<FramingError>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    error_json(error.as_ref()).serialize(serializer)
}

impl Transcript {
    /// Decodes `chunks` (the stream, cut anywhere) to the end, as one receiver would.
    pub fn decode<'c>(
        settings: FrameSettings,
        max_envelope_body: u32,
        chunks: impl IntoIterator<Item = &'c [u8]>,
    ) -> Transcript {
        let mut decoder = Decoder::new(settings, max_envelope_body);
        let mut t = Transcript::default();
        let mut result = Ok(());
        for chunk in chunks {
            result = decoder.decode(chunk, |event| {
                match event {
                    Event::Frame(frame) => t.frames.push(FrameRecord::of(frame)),
                    Event::Envelope(envelope) => t.envelopes.push(EnvelopeRecord::of(&envelope)),
                    _ => {}
                }
                Ok(())
            });
            if result.is_err() {
                break;
            }
        }
        t.error = result.and_then(|()| decoder.finish()).err();
        t
    }
}
