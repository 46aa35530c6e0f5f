//! The script of a session vector: both ends' envelopes in the order they are exchanged, run
//! through a client-role and a server-role `Connection` so that every byte comes from the
//! reference, and what a judge and each receiver make of the two streams.

use super::super::json;
use crate::pcap::write::{session_turns, HandshakeWrites, Peer, Turn, WriteError};
use crate::rules::{Direction, Finding, Judge, Unjudged};
use crate::transcript::{error_json, EnvelopeRecord, FrameRecord};
use cqlframe::body;
use cqlframe::connection::{
    Connection, ConnectionEvent, EarlyBytes, Negotiated, Role, ServerOptions,
};
use cqlframe::encoder::SplitPolicy;
use cqlframe::envelope::{envelope_bytes, split_envelopes, Opcode};
use cqlframe::error::FramingError;
use serde_json::{json, Value};

/// Envelope body limit of both ends in session cases.
pub(crate) const MAX_BODY: u32 = super::super::DEFAULT_MAX_BODY;

/// The protocol versions a current server supports, as SUPPORTED's `PROTOCOL_VERSIONS` lists
/// them (Apache Cassandra 5.0).
pub(crate) const CURRENT_VERSIONS: &[&str] = &["3/v3", "4/v4", "5/v5", "6/v6-beta"];
/// Those of a server that predates v5 (Apache Cassandra 3.x).
pub(crate) const PRE_V5_VERSIONS: &[&str] = &["3/v3", "4/v4"];

/// Both streams of a connection and where each switches to framing.
pub struct Session {
    pub client: Vec<u8>,
    pub server: Vec<u8>,
    /// Offset in the client stream where framing starts (after STARTUP), if it does.
    pub client_switch: Option<usize>,
    /// Offset in the server stream where framing starts (after the STARTUP response).
    pub server_switch: Option<usize>,
    /// Client bytes the server has received when it sends its STARTUP response.
    pub server_responds_after: usize,
    pub server_options: ServerOptions,
    /// The protocol versions the server supports, as its SUPPORTED lists them.
    pub server_versions: &'static [&'static str],
    /// How each end wrote its handshake envelopes, as the capture exchanges them.
    pub handshake_writes: HandshakeWrites,
}

impl Session {
    pub fn server_options_json(&self) -> Value {
        json!({
            "lz4": self.server_options.lz4,
            "frame_checksums": self.server_options.checksums.as_ref().map(|c| c.iter().map(|c| c.name()).collect::<Vec<_>>()),
            "protocol_versions": self.server_versions,
        })
    }

    /// Both streams as a capture exchanges them, turn by turn (see [`session_turns`]).
    pub fn turns(&self) -> Result<Vec<Turn<'_>>, WriteError> {
        session_turns(
            &self.client,
            &self.server,
            self.server_switch,
            self.server_responds_after,
            self.handshake_writes,
        )
    }

    /// What the kit's judge finds on both streams, exchanged as the session's capture
    /// exchanges them, in the order it finds them (JUDGE-9), and what it could not decide
    /// (JUDGE-11).
    fn judge(&self) -> (Vec<Finding>, Vec<Unjudged>) {
        let turns = self.turns().unwrap_or_default();
        let mut judge = Judge::new(MAX_BODY);
        let mut found = Vec::new();
        for turn in turns {
            let d = match turn.from {
                Peer::Client => Direction::ClientToServer,
                Peer::Server => Direction::ServerToClient,
            };
            judge.receive(d, turn.bytes, &mut found);
        }
        for d in Direction::BOTH {
            judge.finish(d, &mut found);
        }
        (found, judge.unjudged())
    }

    /// The judge's verdict on the session: the sender rules it finds broken that no receiver
    /// refuses (FMT-6, ENV-4, NEG-4, a server that takes a STARTUP it must refuse: NEG-2,
    /// NEG-6, NEG-9), what the receivers refuse with the sender's rule behind each (JUDGE-8),
    /// and what it could not decide (JUDGE-11): `judged`, `charged` and `unjudged`.
    pub(crate) fn verdict(&self) -> [Value; 3] {
        let (found, unjudged) = self.judge();
        let (senders, receivers): (Vec<_>, Vec<_>) =
            found.iter().partition(|f| f.kind == "sender_rule");
        let judged = senders
            .iter()
            .map(|f| {
                json!({"direction": f.direction, "rule": f.rule, "level": f.level, "offset": f.offset})
            })
            .collect();
        let charged = receivers
            .iter()
            .map(|f| {
                json!({"direction": f.direction, "rule": f.rule, "sender_rule": f.broken_by_sender(), "offset": f.offset})
            })
            .collect();
        let unjudged = unjudged.iter().map(unjudged_json).collect();
        [judged, charged, unjudged]
    }

    /// Replays both directions through a reference client and server: what each receives. A
    /// server may also conform by another outcome (LIFE-12 lets it parse bytes sent too early
    /// as frames instead of refusing them): those that differ are listed as alternatives.
    pub fn replay(&self, chunking: Option<&[usize]>) -> Value {
        let server = self.server_side(chunking, EarlyBytes::Refuse);
        let alternatives: Vec<Value> = [EarlyBytes::AsFrames]
            .into_iter()
            .map(|early| self.server_side(chunking, early))
            .filter(|alt| *alt != server)
            .collect();
        json!({
            "client_receives": self.client_side(chunking),
            "server_receives": server,
            "server_receives_alternatives": alternatives,
        })
    }

    pub(crate) fn client_side(&self, chunking: Option<&[usize]>) -> Value {
        let mut client = Connection::new(Role::Client, MAX_BODY, SplitPolicy::DRIVERS);
        // What the client sent before the switch, as far as it is whole envelopes: the server's
        // answers pair with those (LIFE-13).
        let sent = &self.client[..self.client_switch.unwrap_or(self.client.len())];
        let whole = split_envelopes(sent)
            .or_else(|e| split_envelopes(&sent[..e.offset()]))
            .unwrap_or_default();
        let _ = client.send(&whole, &mut Vec::new());
        let mut side = Side::default();
        side.feed(&mut client, &self.server, chunking);
        side.json()
    }

    pub(crate) fn server_side(&self, chunking: Option<&[usize]>, early: EarlyBytes) -> Value {
        let mut server =
            Connection::server(self.server_options.clone(), MAX_BODY, SplitPolicy::SERVER)
                .with_early_bytes(early);
        let mut side = Side::default();
        let (before, after) = self.client.split_at(self.server_responds_after);
        side.feed(&mut server, before, chunking);
        if side.error.is_none() {
            let response = &self.server[..self.server_switch.unwrap_or(self.server.len())];
            if let Ok(envelopes) = split_envelopes(response) {
                let _ = server.send(&envelopes, &mut Vec::new());
            }
            if let (Some(negotiated), Some(offset)) = (server.negotiated(), server.framed_from()) {
                side.switched(offset, negotiated);
            }
            side.feed(&mut server, after, chunking);
        }
        side.json()
    }
}

/// What one end received.
#[derive(Default)]
pub(crate) struct Side {
    pub(crate) switch: Value,
    pub(crate) frames: Vec<Value>,
    pub(crate) envelopes: Vec<Value>,
    pub(crate) error: Option<FramingError>,
}

impl Side {
    /// Feeds `bytes` to `conn`, then declares the end of the stream. `conn` is called at least
    /// once, so that a server decodes the bytes it held until its response.
    pub(crate) fn feed(&mut self, conn: &mut Connection, bytes: &[u8], chunking: Option<&[usize]>) {
        let mut chunks = json::chunks(bytes, chunking);
        if chunks.is_empty() {
            chunks.push(&[]);
        }
        for chunk in chunks {
            let result = conn.receive(chunk, |event| {
                match event {
                    ConnectionEvent::Unframed { envelope, .. }
                    | ConnectionEvent::Refused { envelope, .. } => {
                        self.envelope(false, EnvelopeRecord::of(&envelope))
                    }
                    ConnectionEvent::Envelope(envelope) => {
                        self.envelope(true, EnvelopeRecord::of(&envelope))
                    }
                    ConnectionEvent::Rejected { envelope, error } => {
                        self.envelope(true, EnvelopeRecord::of(&envelope));
                        if let Some(last) = self.envelopes.last_mut() {
                            last["framed"] = json!(self.switch.is_object());
                            last["rejected"] = error_json(Some(&error));
                        }
                    }
                    ConnectionEvent::Frame(frame) => {
                        self.frames.push(json::frame_json(&FrameRecord::of(frame)))
                    }
                    ConnectionEvent::Switched { offset, negotiated } => {
                        self.switched(offset, negotiated)
                    }
                    _ => {}
                }
                Ok(())
            });
            if let Err(e) = result {
                self.error = Some(e);
                return;
            }
        }
        if let Err(e) = conn.finish() {
            self.error = Some(e);
        }
    }

    pub(crate) fn switched(&mut self, offset: u64, negotiated: Negotiated) {
        self.switch = json!({
            "offset": offset,
            "version": negotiated.version,
            "format": negotiated.settings.format.name(),
            "checksum": negotiated.settings.checksum.name(),
        });
    }

    pub(crate) fn envelope(&mut self, framed: bool, record: EnvelopeRecord) {
        let mut v = json::envelope_json(&record);
        v["framed"] = json!(framed);
        self.envelopes.push(v);
    }

    pub(crate) fn json(&self) -> Value {
        json!({ "switch": self.switch, "frames": self.frames, "envelopes": self.envelopes, "error": error_json(self.error.as_ref()) })
    }
}

/// A conversation scripted as alternating client and server turns.
pub(crate) struct Script {
    pub(crate) client: Connection,
    pub(crate) server: Connection,
    c2s: Vec<u8>,
    s2c: Vec<u8>,
    pub(crate) version: u8,
    pub(crate) flags: u8,
    pub(crate) client_switch: Option<usize>,
    pub(crate) server_switch: Option<usize>,
    pub(crate) server_responds_after: usize,
    pub(crate) options: ServerOptions,
    /// The stream of the STARTUP that leads to framing, once sent.
    pub(crate) startup_stream: Option<i16>,
}

impl Script {
    pub(crate) fn new(version: u8, flags: u8, options: ServerOptions) -> Self {
        Script {
            client: Connection::new(Role::Client, MAX_BODY, SplitPolicy::DRIVERS),
            server: Connection::server(options.clone(), MAX_BODY, SplitPolicy::SERVER),
            c2s: Vec::new(),
            s2c: Vec::new(),
            version,
            flags,
            client_switch: None,
            server_switch: None,
            server_responds_after: 0,
            options,
            startup_stream: None,
        }
    }

    pub(crate) fn request(&mut self, stream: i16, opcode: Opcode, body: &[u8]) -> &mut Self {
        self.requests(&[(stream, opcode, body.to_vec())])
    }

    /// Several requests written together, without waiting for an answer (packed into one frame
    /// once framed). A v5 STARTUP among them is the client's last unframed request.
    pub(crate) fn requests(&mut self, bodies: &[(i16, Opcode, Vec<u8>)]) -> &mut Self {
        let envelopes: Vec<Vec<u8>> = bodies
            .iter()
            .map(|(s, op, b)| envelope_bytes(self.version, self.flags, *s, *op, b))
            .collect();
        let refs: Vec<&[u8]> = envelopes.iter().map(Vec::as_slice).collect();
        let start = self.c2s.len();
        self.client
            .send(&refs, &mut self.c2s)
            .expect("reference client sends");
        self.server
            .receive(&self.c2s[start..], |_| Ok(()))
            .expect("reference server accepts");
        if let Some((stream, ..)) = bodies.iter().find(|(_, op, _)| *op == Opcode::Startup) {
            if self.version >= 5 {
                self.client_switch = Some(self.c2s.len());
                self.startup_stream = Some(*stream);
            }
        }
        self
    }

    pub(crate) fn response(&mut self, stream: i16, opcode: Opcode, body: &[u8]) -> &mut Self {
        let e = envelope_bytes(self.version | 0x80, self.flags, stream, opcode, body);
        let startup_response =
            self.server.negotiated().is_none() && self.startup_stream == Some(stream);
        if startup_response {
            self.server_responds_after = self.c2s.len();
        }
        let start = self.s2c.len();
        self.server
            .send(&[&e], &mut self.s2c)
            .expect("reference server sends");
        self.client
            .receive(&self.s2c[start..], |_| Ok(()))
            .expect("reference client accepts");
        if startup_response {
            self.server_switch = Some(self.s2c.len());
        }
        self
    }

    pub(crate) fn session(&mut self) -> Session {
        if self.client_switch.is_none() {
            self.server_responds_after = self.c2s.len();
        }
        Session {
            client: std::mem::take(&mut self.c2s),
            server: std::mem::take(&mut self.s2c),
            client_switch: self.client_switch,
            server_switch: self.server_switch,
            server_responds_after: self.server_responds_after,
            server_options: self.options.clone(),
            server_versions: CURRENT_VERSIONS,
            handshake_writes: HandshakeWrites::LockStep,
        }
    }
}

pub(crate) fn supported(options: &ServerOptions) -> Vec<u8> {
    let mut entries = vec![
        ("CQL_VERSION", vec!["3.4.7".to_string()]),
        (
            "COMPRESSION",
            if options.lz4 {
                vec!["lz4".to_string()]
            } else {
                vec![]
            },
        ),
        (
            "PROTOCOL_VERSIONS",
            CURRENT_VERSIONS.iter().map(|v| v.to_string()).collect(),
        ),
    ];
    if let Some(list) = &options.checksums {
        entries.push((
            "FRAME_CHECKSUMS",
            list.iter().map(|c| c.name().to_string()).collect(),
        ));
    }
    body::string_multimap(&entries)
}

/// A JUDGE-11 note as the manifest's `unjudged` lists it: what, in which direction, where.
fn unjudged_json(u: &Unjudged) -> Value {
    let (what, rule, offset) = match u {
        Unjudged::StartupUnanswered { offset } => ("startup_unanswered", None, offset),
        Unjudged::Checksum { rule, offset, .. } => ("checksum", Some(rule), offset),
    };
    let mut note = json!({"what": what, "direction": u.direction(), "offset": offset});
    if let Some(rule) = rule {
        note["rule"] = json!(rule);
    }
    note
}
