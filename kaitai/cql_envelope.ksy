meta:
  id: cql_envelope
  title: CQL native protocol envelope (9-byte header and body)
  application: Apache Cassandra CQL native protocol, v5 and later
  license: Apache-2.0
  ks-version: '0.11'
  endian: be
  bit-endian: le
doc: |
  One CQL message as the frame layer carries it: a 9-byte big-endian header
  (version, flags, stream, opcode, body length) followed by the body (ENV-1).
  Protocol v4 and earlier called this a "frame"; since v5 the word belongs to
  the frame layer (cql_frame_uncompressed, cql_frame_lz4).

  A self-contained frame's content is zero or more whole envelopes
  (cql_envelopes, SEND-2); an envelope too long for one frame is cut into a
  sequence of non-self-contained frames whose contents, concatenated, are one
  envelope (SEND-3, RECV-6). Kaitai cannot concatenate frames: parse the
  reassembled bytes of a sequence with this type.

  Checked here: the body length is not negative (ENV-3, a framing error);
  an envelope cut short raises an end-of-stream error (RECV-5 inside a
  self-contained frame). Not checked, on purpose: the version byte (ENV-2) and
  USE_BETA (ENV-5), faults that are not framing errors: a receiver rejects that
  one envelope with an ERROR and goes on with the next, so a parse must not stop
  there; and the COMPRESSION flag, which a receiver ignores on a framed
  connection (ENV-4, ENV-6). They are exposed as instances.
  The receiver's maximum body length (RECV-12) is a setting of the receiver,
  not of the format: compare `header.body_length` with it.
doc-ref:
  - spec/framing_v6.adoc#envelopes
  - spec/framing_v6.adoc#ENV-1
  - spec/framing_v6.adoc#ENV-3
seq:
  - id: header
    type: header
    doc: The 9-byte envelope header, big-endian (ENV-1).
  - id: body
    size: header.body_length
    doc: |
      The message body, `header.body_length` bytes. Never compressed at the
      envelope level on a framed connection (ENV-6).
types:
  header:
    doc: |
      The envelope header: version (1 byte), flags (1), stream (2, signed),
      opcode (1), body length (4, signed), all big-endian (ENV-1). Parse it on
      its own (9 bytes) to learn the body length of a sequence as soon as its
      first 9 bytes have arrived (RECV-6, RECV-12).
    doc-ref: spec/framing_v6.adoc#ENV-1
    seq:
      - id: version
        type: u1
        doc: |
          Protocol version with the direction bit: bit 7 set in responses,
          clear in requests (ENV-2): 0x05 / 0x85 on v5, 0x06 / 0x86 on
          v6-beta. Not validated: a wrong version byte is not a framing
          error (spec, error handling table).
        doc-ref: spec/framing_v6.adoc#ENV-2
      - id: flags
        type: u1
        doc: Envelope flags, a bit mask of `flag` values.
      - id: stream
        type: s2
        doc: Stream id (signed); responses carry the stream of their request.
      - id: opcode
        type: u1
        enum: opcode
        doc: The message type. An unknown opcode is not a framing error.
      - id: body_length
        type: s4
        valid:
          min: 0
        doc: |
          Body length in bytes. The envelope's total size is 9 + body_length.
          A negative length is a framing error (ENV-3): the receiver cannot
          find the next envelope.
        doc-ref: spec/framing_v6.adoc#ENV-3
    # The flag masks are cast to u1 (`flag::x.to_i.as<u1>`) so that `flags & mask` has one
    # integer type in every target: Go's enum constants have their own type, and
    # `uint8 & CqlEnvelope_Flag` does not compile.
    instances:
      protocol_version:
        value: version & 0x7f
        doc: The protocol version without the direction bit (5 = v5, 6 = v6-beta).
      is_response:
        value: (version & 0x80) != 0
        doc: Bit 7 of the version byte, set in responses (ENV-2).
      has_compression:
        value: (flags & flag::compression.to_i.as<u1>) != 0
        doc: |
          COMPRESSION (0x01). A sender should not set it on a framed
          connection (ENV-4); a receiver ignores it there (ENV-6).
        doc-ref: spec/framing_v6.adoc#ENV-4
      has_tracing:
        value: (flags & flag::tracing.to_i.as<u1>) != 0
        doc: TRACING (0x02).
      has_custom_payload:
        value: (flags & flag::custom_payload.to_i.as<u1>) != 0
        doc: CUSTOM_PAYLOAD (0x04).
      has_warning:
        value: (flags & flag::warning.to_i.as<u1>) != 0
        doc: WARNING (0x08).
      has_use_beta:
        value: (flags & flag::use_beta.to_i.as<u1>) != 0
        doc: USE_BETA (0x10). Every v6-beta envelope carries it (ENV-5).
        doc-ref: spec/framing_v6.adoc#ENV-5
enums:
  opcode:
    0x00: error
    0x01: startup
    0x02: ready
    0x03: authenticate
    0x05: options
    0x06: supported
    0x07: query
    0x08: result
    0x09: prepare
    0x0a: execute
    0x0b: register
    0x0c: event
    0x0d: batch
    0x0e: auth_challenge
    0x0f: auth_response
    0x10: auth_success
  flag:
    0x01:
      id: compression
      doc: Body compressed at the envelope level before protocol v5; ignored on a framed connection (ENV-4, ENV-6).
      doc-ref: spec/framing_v6.adoc#ENV-4
    0x02:
      id: tracing
      doc: Tracing requested (request) or a tracing id precedes the body (response).
    0x04:
      id: custom_payload
      doc: A custom payload precedes the body.
    0x08:
      id: warning
      doc: Warnings precede the body (responses).
    0x10:
      id: use_beta
      doc: The envelope uses a beta protocol version (ENV-5).
      doc-ref: spec/framing_v6.adoc#ENV-5
