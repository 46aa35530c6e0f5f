//! What the server records of a case: per connection, what the driver did and what the judge
//! found, its wire log and its bytes; for the case, the fault and what was inserted.

use crate::conformance::cases::Provocation;
use crate::conformance::delivery::Boundary;
use crate::rules::Tally;
use crate::wire_log::Line;
use cqlframe::connection::Negotiated;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct ConnRecord {
    pub id: usize,
    pub opened_ms: f64,
    pub closed_ms: Option<f64>,
    pub closed_by: Option<String>,
    /// Protocol version of an envelope the server refused during the handshake (a probe).
    pub refused_version: Option<u8>,
    pub startup_version: Option<u8>,
    pub startup_options: Vec<(String, String)>,
    /// Once framed; reported as `v5 lz4 crc32c`.
    #[serde(serialize_with = "crate::verdict::as_text")]
    pub negotiated: Option<Negotiated>,
    pub framing_error: Option<String>,
    /// What the judge found in the driver's bytes: one entry per rule, with its count.
    pub findings: Tally,
    pub requests: u32,
    /// Requests received on this connection well after a fault was written on it.
    pub requests_after_fault: u32,
    /// What the server did on this connection, on the script's orders, after which a client
    /// closes it.
    pub provocation: Option<Provocation>,
    /// Requests the driver sent on the connection after that.
    pub requests_after_provocation: u32,
    /// OPTIONS requests received framed, after the switch.
    pub framed_options: u32,
    /// Where the case needs the driver's reads to end at given bytes: how that went.
    pub reads: ReadBoundaries,
    pub log: Vec<Line>,
    pub log_dropped: usize,
    /// The driver's TCP port (for the capture).
    pub client_port: u16,
    /// Both byte streams in the order the server read and wrote them: (from the client, bytes),
    /// consecutive reads or writes merged. Written to the case's pcap, not to report.json.
    #[serde(skip)]
    pub turns: Vec<(bool, Vec<u8>)>,
}

impl ConnRecord {
    pub(super) fn record(&mut self, from_client: bool, bytes: &[u8]) {
        match self.turns.last_mut() {
            Some((c, b)) if *c == from_client => b.extend_from_slice(bytes),
            _ => self.turns.push((from_client, bytes.to_vec())),
        }
    }
}

/// The read boundaries of one connection: writes whose end the driver's reads were made to
/// follow (see [`delivery`](crate::conformance::delivery)).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReadBoundaries {
    /// Writes after which the driver read every byte before the next write.
    pub confirmed: u64,
    /// The first write whose end could not be confirmed; the server stopped waiting there.
    pub unconfirmed: Option<Boundary>,
}

/// The injected fault, once written.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRecord {
    pub conn: usize,
    pub at_ms: f64,
    pub note: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Observations {
    pub connections: Vec<ConnRecord>,
    /// Responses written to queries on ks.t (the fault goes into the first).
    pub target_served: u32,
    pub fault: Option<FaultRecord>,
    /// Why the fault could not be applied (the driver's connection lacked a precondition).
    pub fault_not_applicable: Option<String>,
    /// `insert-large`: blob sizes received and whether each equalled the pattern.
    pub inserts: Vec<(usize, bool)>,
    /// Connections closed on accept: [`Limits`](crate::conformance::limits::Limits) reached.
    pub refused_connections: u32,
}
