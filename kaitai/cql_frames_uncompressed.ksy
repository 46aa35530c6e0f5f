meta:
  id: cql_frames_uncompressed
  title: CQL native protocol frame stream, uncompressed format
  application: Apache Cassandra CQL native protocol, v5 and later
  license: Apache-2.0
  ks-version: '0.11'
  endian: le
  bit-endian: le
  imports:
    - cql_frame_uncompressed
doc: |
  One direction of a connection after the switch to framing (LIFE-4, LIFE-5,
  LIFE-7), with the uncompressed format: frames back to back, no gap and no
  padding (FMT-1), until the end of the input. The input must end between two
  frames; the end of the stream inside a frame raises an end-of-stream error
  (RECV-9). The end inside a sequence, with every frame whole, is also RECV-9
  but spans frames: check it over `frames` (see cql_frame_uncompressed).
doc-ref:
  - spec/framing_v6.adoc#FMT-1
  - spec/framing_v6.adoc#RECV-9
  - spec/framing_v6.adoc#receiving-procedure
seq:
  - id: frames
    type: cql_frame_uncompressed
    repeat: eos
    doc: The frames, in stream order.
