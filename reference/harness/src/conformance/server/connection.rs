//! One connection's protocol: the version check of the first envelope, the handshake through a
//! server-role [`Connection`], each request received, logged and answered, and every byte both
//! ways shown to the [`Judge`].

use super::shared::Shared;
use crate::conformance::delivery::ClientSocket;
use crate::conformance::layout::Layout;
use crate::conformance::segments::{self, FrameHeaders, Guard};
use crate::cql::messages;
use crate::rules::{Direction, Judge};
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::connection::{version_flags, Connection, ConnectionEvent};
use cqlframe::decoder::Decoder;
use cqlframe::encoder::SplitPolicy;
use cqlframe::envelope::{
    envelope_bytes, opcode_name, EnvelopeHeader, Opcode, FLAG_COMPRESSION, FLAG_USE_BETA,
    RESPONSE_BIT, RETIRED_VERSIONS,
};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest envelope body the server accepts (RECV-12): far above any case's (a 200 KB blob),
/// and what bounds each open connection's envelope assembly (see [`Limits`]).
pub(super) const MAX_BODY: u32 = 16 << 20;

/// An envelope received, owned.
pub(super) struct Request {
    pub(super) header: EnvelopeHeader,
    pub(super) body: Vec<u8>,
}

/// Per-connection state.
pub(super) struct Conn {
    pub(super) id: usize,
    pub(super) shared: Arc<Shared>,
    pub(super) stream: TcpStream,
    pub(super) conn: Connection,
    /// Bytes before the first envelope has been checked for its version.
    pub(super) first: Option<Vec<u8>>,
    pub(super) keyspace: Option<String>,
    pub(super) layout: Option<Layout>,
    /// What a conformant client would decode from our bytes (for the wire log).
    pub(super) mirror: Option<Decoder>,
    pub(super) mirror_failed: bool,
    pub(super) sent: u64,
    pub(super) fault_at: Option<Instant>,
    pub(super) closed: bool,
    /// Both directions, judged as they pass.
    pub(super) judge: Judge,
    pub(super) version: u8,
    /// Framed responses of the current read, written together by `flush_pending`.
    pub(super) pending: Vec<(Vec<u8>, bool)>,
    /// The driver's socket, watched for its reads where the case needs read boundaries: none
    /// in [`replay`], where nobody reads concurrently, or once a boundary failed or the
    /// driver closed.
    pub(super) reads: Option<std::io::Result<ClientSocket>>,
    /// The judge has been told of a SUPPORTED sent on another connection.
    pub(super) heard: bool,
    /// Writes keep their segments from ending inside a frame header ([`segments`]) where the
    /// socket says when nothing written waits unsent.
    pub(super) guard: Option<Guard>,
    /// Where the frame headers lie in what the server wrote from the switch on, when guarded.
    pub(super) headers: Option<FrameHeaders>,
}

impl Conn {
    pub(super) fn new(shared: Arc<Shared>, id: usize, stream: TcpStream) -> Conn {
        let options = shared.script.server_options();
        let guard = segments::writable_when_sent(&stream)
            .is_ok()
            .then(Guard::default);
        Conn {
            id,
            shared,
            stream,
            conn: Connection::server(options.clone(), MAX_BODY, SplitPolicy::SERVER),
            first: Some(Vec::new()),
            keyspace: None,
            layout: None,
            mirror: None,
            mirror_failed: false,
            sent: 0,
            fault_at: None,
            closed: false,
            judge: Judge::for_node(options, MAX_BODY),
            version: 0,
            pending: Vec::new(),
            reads: None,
            heard: false,
            guard,
            headers: None,
        }
    }

    /// One read's bytes: recorded for the capture, then handled.
    pub(super) fn read(&mut self, bytes: &[u8]) {
        self.shared.with_conn(self.id, |r| r.record(true, bytes));
        self.input(bytes);
    }

    /// The client closed its direction (RECV-9).
    pub(super) fn end_of_input(&mut self) {
        self.judge_end();
        if let Err(e) = self.conn.finish() {
            self.client_error(&e);
        }
    }
}

impl Conn {
    pub(super) fn input(&mut self, data: &[u8]) {
        self.judge_bytes(Direction::ClientToServer, data);
        if let Some(mut first) = self.first.take() {
            first.extend_from_slice(data);
            if EnvelopeHeader::read(&first).is_none() {
                self.first = Some(first);
                return;
            }
            if self.refuse_version(&first) {
                return;
            }
            self.receive(&first);
        } else {
            self.receive(data);
        }
    }

    /// A first envelope of a version the server does not speak gets the unframed ERROR of the
    /// spec's lifecycle section, then a close (drivers probe versions this way, LIFE-9). With
    /// `refuse_options = false` an OPTIONS passes whatever its version and the STARTUP is refused.
    pub(super) fn refuse_version(&mut self, bytes: &[u8]) -> bool {
        let Some((h, _)) = EnvelopeHeader::read(bytes) else {
            return false;
        };
        // A server that answers OPTIONS in any version it knows (3 to 6), DSE versions excepted.
        let lenient_options = !self.shared.script.refuse_options
            && h.opcode == Opcode::Options as u8
            && (3..=6).contains(&h.protocol_version());
        if h.is_response() || lenient_options {
            return false;
        }
        self.refusal(&h)
    }

    /// Refuses `h`'s envelope if the server does not speak its version: the unframed ERROR in
    /// the highest version served, on the request's stream or stream 0, then a close.
    pub(super) fn refusal(&mut self, h: &EnvelopeHeader) -> bool {
        let v = h.protocol_version();
        let max = self.shared.script.max_version;
        let message = if !(3..=max).contains(&v) {
            let listed = ["3/v3", "4/v4", "5/v5", "6/v6-beta"][..usize::from(max.clamp(3, 6) - 2)]
                .join(", ");
            format!(
                "Invalid or unsupported protocol version ({v}); supported versions are ({listed})"
            )
        } else if v == 6 && h.flags & FLAG_USE_BETA == 0 {
            "Beta version of the protocol used (6/v6-beta), but USE_BETA flag is unset".to_string()
        } else {
            return false;
        };
        self.shared
            .with_conn(self.id, |r| r.refused_version = Some(v));
        self.shared.log(
            self.id,
            Dir::C2s,
            format!(
                "unframed {} stream {} version {:#04x}: refused",
                opcode_name(h.opcode),
                h.stream,
                h.version
            ),
        );
        // A retired version is refused in its own version and 8-byte layout (LIFE-14).
        let answer_version = if RETIRED_VERSIONS.contains(&v) {
            v
        } else {
            self.shared.script.refusal_version.unwrap_or(max.min(5))
        } | RESPONSE_BIT;
        let stream = if self.shared.script.refusal_stream == "zero" {
            0
        } else {
            h.stream
        };
        let reply = envelope_bytes(
            answer_version,
            0,
            stream,
            Opcode::Error,
            &body::error(body::PROTOCOL_ERROR, &message),
        );
        self.shared.log(
            self.id,
            Dir::S2c,
            format!("unframed ERROR (version {answer_version:#04x}) stream {stream}: {message}"),
        );
        self.write(&reply);
        self.closed = true;
        true
    }

    pub(super) fn receive(&mut self, data: &[u8]) {
        let mut requests = Vec::new();
        let mut frame_lines = Vec::new();
        let mut switched = None;
        let mut rejected = Vec::new();
        let result = self.conn.receive(data, |event| {
            match event {
                // Refused before the Connection sees it (`refuse_version`), with the script's
                // versions.
                ConnectionEvent::Refused { .. } => {}
                ConnectionEvent::Unframed { envelope, .. } => requests.push((
                    true,
                    Request {
                        header: envelope.header,
                        body: envelope.body.to_vec(),
                    },
                )),
                ConnectionEvent::Envelope(envelope) => requests.push((
                    false,
                    Request {
                        header: envelope.header,
                        body: envelope.body.to_vec(),
                    },
                )),
                ConnectionEvent::Frame(frame) => {
                    frame_lines.push(crate::wire_log::frame_line(frame))
                }
                ConnectionEvent::Rejected { envelope, error } => {
                    rejected.push((envelope.header, error));
                }
                ConnectionEvent::Switched { offset, negotiated } => {
                    switched = Some((offset, negotiated));
                }
                _ => {}
            }
            Ok(())
        });
        for line in frame_lines {
            self.shared.log(self.id, Dir::C2s, line);
        }
        if let Some((offset, n)) = switched {
            self.shared.log(
                self.id,
                Dir::Note,
                format!("client bytes from offset {offset} are framed: {n}"),
            );
        }
        for (header, error) in rejected {
            // An envelope refused on its own (ENV-2, ENV-5): ERROR on its stream, go on.
            self.client_error(&error);
            let reply = self.conn.reject_response(&header, &error);
            self.shared.log(
                self.id,
                Dir::S2c,
                format!("ERROR PROTOCOL_ERROR stream {}: {}", header.stream, error),
            );
            self.write(&reply);
        }
        for (unframed, req) in requests {
            if self.closed {
                break;
            }
            self.handle(unframed, req);
        }
        self.flush_pending();
        if let Err(e) = result {
            self.client_error(&e);
            if !self.closed {
                // ERR-1: one framed ERROR (PROTOCOL_ERROR, stream 0), then close.
                let reply = self.conn.error_response(&e);
                self.shared.log(
                    self.id,
                    Dir::S2c,
                    format!("ERROR PROTOCOL_ERROR stream 0: {}", e),
                );
                self.write(&reply);
                self.closed = true;
            }
        }
    }

    /// The server's own receiver refused the driver's bytes: logged (the judge records the
    /// rule).
    pub(super) fn client_error(&mut self, e: &cqlframe::FramingError) {
        let text = format!("{} ({} at byte {})", e.kind, e.rule(), e.offset);
        self.shared.log(
            self.id,
            Dir::Note,
            format!("framing error in client bytes: {text}"),
        );
        self.shared
            .with_conn(self.id, |r| r.framing_error = Some(text));
    }

    /// Shows the judge what went over the wire, in order. Only what it finds in the driver's
    /// bytes is recorded: the server's own bytes carry the case's faults on purpose.
    pub(super) fn judge_bytes(&mut self, d: Direction, bytes: &[u8]) {
        if !self.heard && self.shared.supported_sent.load(Ordering::SeqCst) {
            let script = &self.shared.script;
            let supported = messages::supported_body(&script.server_options(), script.max_version);
            self.judge
                .heard(&body::read_string_multimap(&supported).unwrap_or_default());
            self.heard = true;
        }
        let mut found = Vec::new();
        self.judge.receive(d, bytes, &mut found);
        self.record(d, &found);
    }

    /// The driver closed its side: ending inside a frame or envelope is RECV-9.
    pub(super) fn judge_end(&mut self) {
        let mut found = Vec::new();
        self.judge.finish(Direction::ClientToServer, &mut found);
        self.record(Direction::ClientToServer, &found);
    }

    pub(super) fn record(&self, d: Direction, found: &[crate::rules::Finding]) {
        if d == Direction::ClientToServer && !found.is_empty() {
            self.shared.with_conn(self.id, |r| {
                for f in found {
                    r.findings.add(f);
                }
            });
        }
    }

    pub(super) fn handle(&mut self, unframed: bool, req: Request) {
        let h = req.header;
        let op = Opcode::from_u8(h.opcode);
        let mut body = req.body;
        let faulted_conn = self
            .fault_at
            .is_some_and(|t| t.elapsed() > Duration::from_millis(300));
        self.shared.with_conn(self.id, |r| {
            r.requests += 1;
            if faulted_conn {
                r.requests_after_fault += 1;
            }
            if r.provocation.is_some() {
                r.requests_after_provocation += 1;
            }
            if !unframed && op == Some(Opcode::Options) {
                r.framed_options += 1;
            }
        });
        if h.flags & FLAG_COMPRESSION != 0 && unframed {
            // Protocol v4 envelope compression: [int] length, then an LZ4 block.
            if body.len() >= 4 {
                let n = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
                // lz4_flex reserves the declared length first: past the limit it is not tried.
                body = if n <= MAX_BODY as usize {
                    lz4_flex::block::decompress(&body[4..], n).unwrap_or_default()
                } else {
                    Vec::new()
                };
            }
        }
        let summary = describe_request(op, &body);
        self.shared.log(
            self.id,
            Dir::C2s,
            format!(
                "{}{} stream {} ({} bytes){}",
                if unframed { "unframed " } else { "" },
                opcode_name(h.opcode),
                h.stream,
                h.length,
                summary
            ),
        );
        self.version = h.protocol_version();
        let Some((opcode, reply, target)) = self.answer_request(unframed, &h, &body) else {
            return;
        };
        let version = self.version;
        let envelope = envelope_bytes(
            version | RESPONSE_BIT,
            version_flags(version),
            h.stream,
            opcode,
            &reply,
        );
        let what = match opcode {
            Opcode::Result => messages::describe_result(&reply),
            Opcode::Error => body::read_error(&reply)
                .map(|(code, m)| format!("{code:#06x} {m}"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        self.respond(envelope, opcode, h.stream, what, target);
    }
}

fn describe_request(op: Option<Opcode>, body: &[u8]) -> String {
    match op {
        Some(Opcode::Query) | Some(Opcode::Prepare) => match messages::request_query(body) {
            Ok(q) => {
                let q: String = q.chars().take(90).collect();
                format!(": {q}")
            }
            Err(_) => String::new(),
        },
        Some(Opcode::Startup) => match body::read_string_map(body) {
            Ok(m) => format!(
                ": {}",
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Err(_) => String::new(),
        },
        _ => String::new(),
    }
}
