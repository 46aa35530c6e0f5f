//! Reference implementation of CQL native protocol framing (protocol v5, v6-beta, and CRC32C
//! payload checksums negotiated with `FRAME_CHECKSUM`), as `spec/framing_v6.adoc` defines it.
//!
//! Sans-IO: bytes in, frames and envelopes out. Layers, bottom up:
//! - [`checksum`]: CRC24, seeded CRC32, CRC32C, with hardware fast paths.
//! - [`header`]: frame headers of both formats.
//! - [`frame_decoder`] / [`encoder`]: frames from bytes, in any chunking, and bytes from envelopes.
//! - [`assembler`]: envelopes from frames, including non-self-contained sequences.
//! - [`decoder`]: the two above as one event stream.
//! - [`connection`]: the handshake and the switch to framing, for either side.
//!
//! Every error the decoders and [`connection::Connection`] return is a [`FramingError`] naming the
//! spec rule it breaks and its stream offset; the encoder's and the envelope splitter's own
//! errors ([`encoder::EncodeError`], [`envelope::SplitError`]) say what was asked of them.
//!
//! This crate is the part a driver author reads: no sockets, no files, no command line. What is
//! built around it (the rules engine every tool asks, pcap captures, golden vectors, the
//! conformance server, the probe, the capture checker) is the `cqlframe-harness` crate, and the
//! `cqlframe` command is `cqlframe-cli`. `serde` support for the public types is the `serde`
//! feature.

pub use cqlframe_checksum as checksum;

pub mod assembler;
pub mod body;
pub mod connection;
pub mod decoder;
pub mod encoder;
pub mod envelope;
pub mod error;
pub mod format;
pub mod frame_decoder;
pub mod header;
mod lz4_block;
mod role;

pub use error::{ErrorKind, FramingError, Lz4Fault};
pub use format::{Format, FrameSettings};
