meta:
  id: cql_envelopes
  title: CQL envelopes back to back (the content of a self-contained frame)
  application: Apache Cassandra CQL native protocol, v5 and later
  license: Apache-2.0
  ks-version: '0.11'
  endian: be
  bit-endian: le
  imports:
    - cql_envelope
doc: |
  The content of a self-contained frame: zero or more whole envelopes,
  concatenated (SEND-2), delivered in order (RECV-13). An empty content holds
  no envelope. A content that ends inside an envelope (fewer than 9 bytes
  left, or fewer than 9 + body length) raises an end-of-stream error: that is
  RECV-5.

  The frame types parse the envelopes of self-contained uncompressed and
  stored LZ4 frames themselves. Use this type directly for the content of a
  compressed LZ4 frame, after decompressing its block (LZ4-1, LZ4-4): Kaitai
  Struct has no LZ4 block decoder.
doc-ref:
  - spec/framing_v6.adoc#SEND-2
  - spec/framing_v6.adoc#RECV-5
seq:
  - id: envelopes
    type: cql_envelope
    repeat: eos
    doc: The envelopes, in order.
