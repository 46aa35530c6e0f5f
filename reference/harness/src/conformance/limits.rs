//! What the conformance server takes on at most, so that a broken or hostile driver cannot exhaust
//! the machine that runs the suite. Past each limit it refuses
//! politely: an orderly close (FIN, never a reset), the reason in the connection's log and
//! `closed_by`, or in [`Observations::refused_connections`](super::server::Observations) for a
//! connection closed on accept.
//!
//! Memory: everything read and written is kept for the case's capture, and counted against
//! `held_bytes`; each open connection adds at most its envelope assembly (`MAX_BODY` of the
//! server, 16 MiB, reached only through LZ4's expansion since the bytes read are counted), a
//! 64 KiB read buffer and its thread. So the server holds at most about
//! `2 × held_bytes + connections × 17 MiB`, with the defaults 672 MiB, whatever clients send.

use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once: one more is closed as soon as it is accepted.
    pub connections: usize,
    /// Bytes read and written over all connections (kept for the capture): the connection
    /// whose read goes past it is closed, and later connections are closed on accept.
    pub held_bytes: usize,
    /// A connection that sends nothing for this long is closed.
    pub idle: Duration,
}

impl Limits {
    /// Far above what a case needs (a few MB over a few connections, 40 s per case with
    /// drivers' heartbeats every 30 s), small enough for a shared CI machine.
    pub const DEFAULT: Limits = Limits {
        connections: 32,
        held_bytes: 64 << 20,
        idle: Duration::from_secs(120),
    };
}
