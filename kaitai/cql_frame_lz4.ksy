meta:
  id: cql_frame_lz4
  title: CQL native protocol frame, LZ4 format (protocol v5 and later)
  application: Apache Cassandra CQL native protocol, v5 and later
  license: Apache-2.0
  ks-version: '0.11'
  endian: le
  bit-endian: le
  imports:
    - cql_envelope
doc: |
  One frame of the LZ4 format (STARTUP COMPRESSION = lz4): an 8-byte header,
  the payload (0 to 131071 bytes on the wire) and a 4-byte trailer (FMT-1,
  FMT-7). The header is one 64-bit little-endian word: bits 0-16 compressed
  length, 17-33 uncompressed length, 34 self-contained flag, 35 checksum bit,
  36-39 reserved, 40-63 (bytes 5-7) the CRC24 of bytes 0-4 (FMT-11). It is
  5 + 3 bytes, not 4 + 4 as the upstream text says (spec, errata).

  How the payload is exposed: the grammar does not decompress. An uncompressed
  length of 0 means the payload is stored (LZ4-2): then the payload is the
  content and the grammar parses it like an uncompressed frame's (envelopes,
  or a fragment of a sequence). Otherwise the payload is one raw LZ4 block
  (LZ4-1), exposed as `payload.block`: decompress it with an LZ4 block decoder
  into exactly `header.uncompressed_length` bytes (LZ4-4) and, for a
  self-contained frame, parse the result with cql_envelopes. A `process:`
  step would need a hand-written LZ4 routine in every target language, so the
  grammar leaves decompression to the caller.

  What the grammar checks: a frame cut short raises an end-of-stream error
  (RECV-9); a non-self-contained frame with no content fails validation
  (RECV-10); in a stored self-contained frame the envelopes must fill the
  payload exactly (RECV-5) and have a non-negative body length (ENV-3).
  What it cannot check: the header CRC24 (RECV-1) over `header.crc24_input`;
  the payload checksum (RECV-2) over `payload.bytes` (the compressed or stored
  bytes, never the decompressed content: CRC-4); the checksum bit against the
  negotiated checksum (RECV-3); the LZ4 block itself (a block that is
  malformed or decodes to another length breaks LZ4-1 and fails LZ4-4);
  sequences (RECV-6 to RECV-8); the receiver's envelope size limit (RECV-12).
  The grammar uses header fields before the CRC24 could be verified.

  Reserved bits are exposed, never validated: receivers ignore them (FMT-12).
doc-ref:
  - spec/framing_v6.adoc#format-lz4
  - spec/framing_v6.adoc#FMT-7
  - spec/framing_v6.adoc#lz4
  - spec/framing_v6.adoc#errata-lz4-header
seq:
  - id: header
    size: 8
    type: header
    doc: The 8-byte header (FMT-7, FMT-11).
  - id: payload
    size: header.compressed_length
    type: payload(header.self_contained, header.is_stored)
    doc: The payload; its bytes as on the wire are `payload.bytes`.
  - id: payload_checksum
    type: u4
    doc: |
      The trailer: CRC32 (CRC-2, seeded with FA 2D 55 CA) or CRC32C (CRC-3,
      unseeded) of `payload.bytes`, the compressed or stored bytes as sent,
      stored little-endian (CRC-4). Verify it with the negotiated algorithm
      (RECV-2) before decompressing.
    doc-ref:
      - spec/framing_v6.adoc#CRC-2
      - spec/framing_v6.adoc#CRC-3
      - spec/framing_v6.adoc#CRC-4
      - spec/framing_v6.adoc#RECV-2
types:
  header:
    doc: |
      The 64-bit little-endian header word: five bytes of fields, then the
      CRC24 of those five bytes.
    doc-ref:
      - spec/framing_v6.adoc#FMT-7
      - spec/framing_v6.adoc#FMT-11
    seq:
      - id: compressed_length
        type: b17
        doc: |
          Bits 0-16: the number of payload bytes on the wire, 0 to 131071
          (FMT-7). For a stored frame, the content length.
        doc-ref: spec/framing_v6.adoc#FMT-7
      - id: uncompressed_length
        type: b17
        doc: |
          Bits 17-33: the content length after decompression, 1 to 131071;
          0 means the payload is stored, not compressed (LZ4-2).
        doc-ref:
          - spec/framing_v6.adoc#FMT-7
          - spec/framing_v6.adoc#LZ4-2
      - id: self_contained
        type: b1
        # RECV-10 as an equality, which every target can translate (the Nim
        # back end cannot translate `valid: expr`): an empty content must be
        # self-contained; otherwise the flag is compared with itself.
        valid: '(compressed_length == 0 and uncompressed_length == 0) ? true : self_contained'
        doc: |
          Bit 34, the self-contained flag (FMT-8). Clear: the frame carries
          the next bytes of one envelope of a sequence, and then its content
          must not be empty (RECV-10). The content is empty only when both
          lengths are 0.
        doc-ref:
          - spec/framing_v6.adoc#FMT-8
          - spec/framing_v6.adoc#RECV-10
      - id: checksum_bit
        type: b1
        doc: |
          Bit 35, the checksum bit (FMT-9): set when the trailer is CRC32C.
          It must match the negotiated payload checksum (FMT-13, RECV-3),
          which the grammar cannot see.
        doc-ref:
          - spec/framing_v6.adoc#FMT-9
          - spec/framing_v6.adoc#FMT-13
      - id: reserved
        type: b4
        doc: |
          Bits 36-39: zero when sent (FMT-10), ignored when received (FMT-12).
          Deliberately not validated.
        doc-ref:
          - spec/framing_v6.adoc#FMT-10
          - spec/framing_v6.adoc#FMT-12
      - id: header_crc24
        type: b24
        doc: |
          Bits 40-63 (bytes 5-7): CRC24 of header bytes 0-4 (`crc24_input`),
          stored little-endian (FMT-11, CRC-1). Verify it before using any
          header field (RECV-1).
        doc-ref:
          - spec/framing_v6.adoc#FMT-11
          - spec/framing_v6.adoc#CRC-1
          - spec/framing_v6.adoc#RECV-1
    instances:
      crc24_input:
        pos: 0
        size: 5
        doc: Header bytes 0-4 in wire order, the bytes `header_crc24` covers (CRC-1).
      is_stored:
        value: uncompressed_length == 0
        doc: The payload is stored, not compressed; it is the content (LZ4-2).
        doc-ref: spec/framing_v6.adoc#LZ4-2
      payload_checksum_algorithm:
        value: 'checksum_bit ? 1 : 0'
        enum: payload_checksum_algorithm
        doc: The trailer algorithm this frame claims by its checksum bit (FMT-9).
  payload:
    params:
      - id: is_self_contained
        type: bool
      - id: is_stored
        type: bool
    doc: |
      The payload: one raw LZ4 block, or the content itself when stored.
    seq:
      - id: envelopes
        type: cql_envelope
        repeat: eos
        if: is_stored and is_self_contained
        doc: |
          Stored self-contained frame: the whole envelopes of the content, in
          order (SEND-2, RECV-13). Ending inside an envelope is RECV-5.
        doc-ref: spec/framing_v6.adoc#RECV-5
      - id: fragment
        size-eos: true
        if: is_stored and not is_self_contained
        doc: |
          Stored non-self-contained frame: the next bytes of the envelope of
          the current sequence (SEND-3, RECV-6).
        doc-ref: spec/framing_v6.adoc#RECV-6
      - id: block
        size-eos: true
        if: not is_stored
        doc: |
          Compressed frame: one raw LZ4 block (LZ4 block format, no frame
          format, no size prefix, no dictionary, no history from other frames:
          LZ4-1). It must decompress, with a bounds-checked decoder, to exactly
          `header.uncompressed_length` bytes: that is the content. Any other
          outcome, a malformed block included, is a framing error (LZ4-4).
        doc-ref:
          - spec/framing_v6.adoc#LZ4-1
          - spec/framing_v6.adoc#LZ4-4
    instances:
      bytes:
        pos: 0
        size-eos: true
        doc: |
          The payload bytes exactly as on the wire (compressed or stored),
          which the trailer covers (CRC-4).
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
