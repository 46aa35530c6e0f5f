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
//! Every error the decoders and [`Connection`] return is a [`FramingError`] naming the
//! spec rule it breaks and its stream offset; the encoder's and the envelope splitter's own
//! errors ([`EncodeError`], [`envelope::SplitError`]) say what was asked of them.
//!
//! This crate is the part a driver author reads: no sockets, no files, no command line. What is
//! built around it (the rules engine every tool asks, pcap captures, golden vectors, the
//! conformance server, the probe, the capture checker) is the `cqlframe-harness` crate, and the
//! `cqlframe` command is `cqlframe-cli`. `serde` support for the public types is the `serde`
//! feature. `examples/client.rs` and `examples/server.rs` put [`Connection`] on a TCP socket.
//!
//! # API
//!
//! The crate root re-exports what a driver works with: [`Connection`] and its events for a
//! whole connection, [`Decoder`] and [`FrameEncoder`] for framed bytes alone, the frame and
//! envelope types they hand out, and the errors. The modules stay public, one per layer, for
//! what a tool needs one layer down and a driver seldom does: header fields and raw frame
//! writing ([`header`], [`encoder`]), envelope constants and builders ([`envelope`]), the CQL
//! body encodings of the handshake ([`body`]).
//!
//! Enums that later protocol versions or rules will extend ([`ErrorKind`], [`Lz4Fault`],
//! [`Part`], [`ConnectionEvent`], [`Event`], [`Opcode`] and the other errors) are
//! `#[non_exhaustive]`; [`ErrorKind::NAMES`] lists every error kind for those who must know
//! them all.
//!
//! # Callbacks
//!
//! The decoders and [`Connection::receive`] hand events to a callback, `F: FnMut(Event) ->
//! Result<(), FramingError>`, rather than returning them: an event borrows the input or the
//! decoder's buffers, so it lives only as long as the call, and nothing is copied or queued.
//! The callback is a generic parameter everywhere, so that the per-frame path inlines into the
//! decode loop; a caller that holds a `&mut dyn FnMut` passes it as it is. An error the
//! callback returns ends the call as a framing error does, with the connection failed.

#![warn(missing_docs, unreachable_pub)]

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

pub use assembler::{EnvelopeAssembler, DEFAULT_MAX_ENVELOPE_BODY};
pub use checksum::PayloadChecksum;
pub use connection::{Connection, ConnectionEvent, EarlyBytes, Negotiated, ServerOptions};
pub use decoder::{Decoder, Event};
pub use encoder::{EncodeError, FrameEncoder, SplitPolicy};
pub use envelope::{Envelope, EnvelopeHeader, Opcode};
pub use error::{ErrorKind, FramingError, Lz4Fault, Part};
pub use format::{Format, FrameSettings};
pub use frame_decoder::{Frame, FrameDecoder};
pub use header::FrameHeader;
pub use role::Role;
