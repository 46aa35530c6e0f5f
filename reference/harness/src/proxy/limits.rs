//! What the proxy takes on at most, so that a misbehaving peer cannot take it (or the machine
//! it runs on) down. Past each limit it refuses politely: a connection past `connections` is
//! closed on accept (counted in the report's `refused_connections`), an idle one is closed with
//! a note in its wire log.
//!
//! Memory: each open connection holds its two judges' envelope assembly (at most `max_body` per
//! direction, grown only with bytes received), a 64 KiB read buffer, one read's bytes per
//! direction on their way out (a direction is read again only once they are), a wire log of at
//! most [`LOG_LINES`](super::recorder::LOG_LINES) lines and one thread; the report keeps at most
//! [`KEPT_CONNECTIONS`](super::recorder::KEPT_CONNECTIONS) closed connections' summaries and
//! [`KEPT_LOGS`](super::recorder::KEPT_LOGS) of their wire logs (a few MB at most). So
//! the proxy holds at most about `connections × (2 × max_body + 1 MiB)`, with the defaults
//! 64 × 33 MiB, whatever its peers send and however long it runs.

use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once: one more is closed as soon as it is accepted.
    pub connections: usize,
    /// A connection over which neither end sends anything for this long is closed.
    pub idle: Duration,
    /// Largest envelope body the judges accept (RECV-12), per direction.
    pub max_body: u32,
}

impl Limits {
    /// A driver's pool against one node holds a few connections, heartbeats every 30 s; an
    /// Apache Cassandra node takes envelopes of up to 16 MiB unless configured otherwise
    /// (`native_transport_max_message_size`).
    pub const DEFAULT: Limits = Limits {
        connections: 64,
        idle: Duration::from_secs(120),
        max_body: 16 << 20,
    };
}
