meta:
  id: cql_frame_uncompressed
  title: CQL native protocol frame, uncompressed format (protocol v5 and later)
  application: Apache Cassandra CQL native protocol, v5 and later
  license: Apache-2.0
  ks-version: '0.11'
  endian: le
  bit-endian: le
  imports:
    - cql_envelope
doc: |
  One frame of the uncompressed format: a 6-byte header, the payload (0 to
  131071 bytes) and a 4-byte trailer (FMT-1, FMT-2). Every integer of the
  frame layer is little-endian; the envelopes inside keep their big-endian
  encoding (cql_envelope).

  The header is a 24-bit little-endian word (bits 0-16 payload length, bit 17
  self-contained flag, bit 18 checksum bit, bits 19-23 reserved) followed by
  the CRC24 of its 3 bytes. Little-endian bit order (`bit-endian: le`) reads
  the fields straight from the word.

  What the grammar checks: a frame cut short raises an end-of-stream error
  (RECV-9); a non-self-contained frame with an empty payload fails validation
  (RECV-10); envelopes of a self-contained frame must fill the payload exactly
  (RECV-5) and have a non-negative body length (ENV-3).

  What it cannot check, and a parser's user must: the header CRC24 (RECV-1,
  CRC-1) over `header.crc24_input`; the payload checksum (RECV-2) over
  `payload.bytes`, CRC32 seeded with FA 2D 55 CA (CRC-2) or unseeded CRC32C
  (CRC-3), the algorithm being the one negotiated, not the one the header
  names; the checksum bit against the negotiated checksum (RECV-3, FMT-13);
  sequences across frames (RECV-6 to RECV-8); the receiver's envelope size
  limit (RECV-12). Note that the grammar uses the header fields before anyone
  could verify the CRC24, which RECV-1 forbids a receiver: on a corrupted
  header it may report a different error (end of stream, RECV-10) than the
  CRC24 mismatch a receiver reports.

  Reserved bits are exposed, never validated: receivers ignore them (FMT-12).
doc-ref:
  - spec/framing_v6.adoc#format-uncompressed
  - spec/framing_v6.adoc#FMT-1
  - spec/framing_v6.adoc#FMT-2
  - spec/framing_v6.adoc#checksums
seq:
  - id: header
    size: 6
    type: header
    doc: The 6-byte header (FMT-2).
  - id: payload
    size: header.payload_length
    type: payload(header.self_contained)
    doc: The payload; its bytes as on the wire are `payload.bytes`.
  - id: payload_checksum
    type: u4
    doc: |
      The trailer: CRC32 (CRC-2: CRC-32/ISO-HDLC over FA 2D 55 CA then the
      payload) or CRC32C (CRC-3: CRC-32/ISCSI over the payload, no seed) of
      `payload.bytes`, stored little-endian (CRC-4), present for an empty
      payload too. Verify it with the connection's negotiated algorithm
      (RECV-2); `header.checksum_bit` must name that same algorithm (RECV-3).
    doc-ref:
      - spec/framing_v6.adoc#CRC-2
      - spec/framing_v6.adoc#CRC-3
      - spec/framing_v6.adoc#CRC-4
      - spec/framing_v6.adoc#RECV-2
types:
  header:
    doc: |
      The header word (bytes 0-2, little-endian) and its CRC24 (bytes 3-5).
    doc-ref: spec/framing_v6.adoc#FMT-2
    seq:
      - id: payload_length
        type: b17
        doc: Bits 0-16, the payload length in bytes, 0 to 131071 (FMT-3).
        doc-ref: spec/framing_v6.adoc#FMT-3
      - id: self_contained
        type: b1
        # RECV-10 as an equality, which every target can translate (the Nim
        # back end cannot translate `valid: expr`): an empty payload must be
        # self-contained; a non-empty one compares the flag with itself.
        valid: 'payload_length == 0 ? true : self_contained'
        doc: |
          Bit 17, the self-contained flag (FMT-4): the content is zero or more
          whole envelopes (SEND-2). Clear: the frame carries the next bytes of
          one envelope of a sequence (SEND-3), and then it must carry at least
          one byte (RECV-10).
        doc-ref:
          - spec/framing_v6.adoc#FMT-4
          - spec/framing_v6.adoc#RECV-10
      - id: checksum_bit
        type: b1
        doc: |
          Bit 18, the checksum bit (FMT-5): set when the trailer is CRC32C,
          clear when it is CRC32. Set on every frame of a connection that
          negotiated CRC32C, clear on every other (FMT-13); a frame that
          disagrees with the negotiated checksum is a framing error (RECV-3),
          which the grammar cannot see.
        doc-ref:
          - spec/framing_v6.adoc#FMT-5
          - spec/framing_v6.adoc#FMT-13
      - id: reserved
        type: b5
        doc: |
          Bits 19-23: zero when sent (FMT-6), ignored when received (FMT-12).
          Deliberately not validated.
        doc-ref:
          - spec/framing_v6.adoc#FMT-6
          - spec/framing_v6.adoc#FMT-12
      - id: header_crc24
        type: b24
        doc: |
          Bytes 3-5: CRC24 of header bytes 0-2 (`crc24_input`), stored
          little-endian (CRC-1): width 24, poly 0x974F0B, init 0x875060, no
          reflection, no final XOR. A receiver verifies it before using any
          header field (RECV-1).
        doc-ref:
          - spec/framing_v6.adoc#CRC-1
          - spec/framing_v6.adoc#RECV-1
    instances:
      crc24_input:
        pos: 0
        size: 3
        doc: Header bytes 0-2 in wire order, the bytes `header_crc24` covers (CRC-1).
      payload_checksum_algorithm:
        value: 'checksum_bit ? 1 : 0'
        enum: payload_checksum_algorithm
        doc: The trailer algorithm this frame claims by its checksum bit (FMT-5).
  payload:
    params:
      - id: is_self_contained
        type: bool
    doc: |
      The payload, which for this format is also the frame's content.
    seq:
      - id: envelopes
        type: cql_envelope
        repeat: eos
        if: is_self_contained
        doc: |
          Self-contained frame: the whole envelopes of the content, in order
          (SEND-2, RECV-13). Ending inside an envelope is RECV-5.
        doc-ref: spec/framing_v6.adoc#RECV-5
      - id: fragment
        size-eos: true
        if: not is_self_contained
        doc: |
          Non-self-contained frame: the next bytes of the one envelope of the
          current sequence (SEND-3). Concatenate the fragments of a sequence
          and parse them as a cql_envelope (RECV-6).
        doc-ref: spec/framing_v6.adoc#RECV-6
    instances:
      bytes:
        pos: 0
        size-eos: true
        doc: The payload bytes exactly as on the wire, which the trailer covers (CRC-4).
enums:
  payload_checksum_algorithm:
    0:
      id: crc32
      doc: CRC32, the protocol v5 default; CRC-32/ISO-HDLC fed FA 2D 55 CA first.
      doc-ref: spec/framing_v6.adoc#CRC-2
    1:
      id: crc32c
      doc: CRC32C, negotiated with FRAME_CHECKSUM; CRC-32/ISCSI, unseeded.
      doc-ref: spec/framing_v6.adoc#CRC-3
