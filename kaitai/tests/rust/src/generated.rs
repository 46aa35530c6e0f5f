//! The parsers kaitai-struct-compiler 0.11 generates for `-t rust` from kaitai/*.ksy.
//! kaitai/test.sh copies them into generated/ of the build directory; they refer to each
//! other as `super::cql_envelope::…`, so they are siblings here. Generated code is not held to
//! this crate's lints.
#![allow(warnings, clippy::all)]

pub mod cql_envelope;
pub mod cql_envelopes;
pub mod cql_frame_lz4;
pub mod cql_frame_uncompressed;
pub mod cql_frames_lz4;
pub mod cql_frames_uncompressed;
