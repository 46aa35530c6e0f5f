//! The conformance server: a CQL server on 127.0.0.1 that speaks through a server-role
//! [`Connection`], answers the primed queries of [`crate::cql`], and frames its responses as
//! the case's script says: split sizes, TCP chopping, injected faults. Every byte of each
//! connection, both ways, also goes to a [`Judge`]: what the driver sent is judged there, and
//! the server records the judge's tally for the harness.

use super::cases::{Provocation, ServerScript};
use super::delivery::{self, Boundary, ClientSocket};
use super::frames::{self, Layout, OutFrame};
use super::limits::Limits;
use crate::cql::{self as cql, Route};
use crate::rules::{Direction, Judge, Tally};
use crate::wire_log::Line;
use cqlframe::body;
use cqlframe::connection::{Connection, ConnectionEvent, Negotiated};
use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::SplitPolicy;
use cqlframe::envelope::{
    envelope_bytes, opcode_name, EnvelopeHeader, Opcode, ENVELOPE_HEADER_LEN, FLAG_COMPRESSION,
    FLAG_USE_BETA, RESPONSE_BIT,
};
use serde::Serialize;
use std::collections::HashMap;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest envelope body the server accepts (RECV-12): far above any case's (a 200 KB blob),
/// and what bounds each open connection's envelope assembly (see [`Limits`]).
const MAX_BODY: u32 = 16 << 20;
/// Wire-log lines kept per connection.
const LOG_LIMIT: usize = 400;

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
    fn record(&mut self, from_client: bool, bytes: &[u8]) {
        match self.turns.last_mut() {
            Some((c, b)) if *c == from_client => b.extend_from_slice(bytes),
            _ => self.turns.push((from_client, bytes.to_vec())),
        }
    }
}

/// The read boundaries of one connection: writes whose end the driver's reads were made to
/// follow (see [`delivery`]).
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
    /// Connections closed on accept: [`Limits`] reached.
    pub refused_connections: u32,
}

struct Shared {
    start: Instant,
    script: ServerScript,
    port: u16,
    obs: Mutex<Observations>,
    fault_used: AtomicBool,
    prepared: Mutex<HashMap<Vec<u8>, String>>,
    stop: AtomicBool,
    limits: Limits,
    /// Connections open now.
    open: AtomicUsize,
    /// Bytes read and written so far, all kept for the capture.
    held: AtomicUsize,
}

impl Shared {
    fn new(script: ServerScript, port: u16, limits: Limits) -> Shared {
        Shared {
            start: Instant::now(),
            script,
            port,
            obs: Mutex::new(Observations::default()),
            fault_used: AtomicBool::new(false),
            prepared: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            limits,
            open: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
        }
    }

    /// Counts `n` more bytes held; false once the total is past the cap.
    fn hold(&self, n: usize) -> bool {
        self.held.fetch_add(n, Ordering::SeqCst) + n <= self.limits.held_bytes
    }

    /// Whether a new connection is taken on, or closed on accept.
    fn room(&self) -> bool {
        self.open.load(Ordering::SeqCst) < self.limits.connections
            && self.held.load(Ordering::SeqCst) <= self.limits.held_bytes
    }

    /// A new connection's record; its id.
    fn open_conn(&self, client_port: u16) -> usize {
        let mut obs = self.obs.lock().unwrap();
        let id = obs.connections.len();
        obs.connections.push(ConnRecord {
            id,
            opened_ms: self.ms(),
            client_port,
            ..Default::default()
        });
        id
    }

    fn ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    fn with_conn<R>(&self, id: usize, f: impl FnOnce(&mut ConnRecord) -> R) -> R {
        let mut obs = self.obs.lock().unwrap();
        f(&mut obs.connections[id])
    }

    fn log(&self, id: usize, dir: &'static str, text: String) {
        let t_ms = self.ms();
        self.with_conn(id, |c| {
            if c.log.len() < LOG_LIMIT {
                c.log.push(Line { t_ms, dir, text });
            } else {
                c.log_dropped += 1;
            }
        });
    }
}

/// A running conformance server.
pub struct Server {
    pub port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Server {
    pub fn start(script: ServerScript, port: u16) -> std::io::Result<Server> {
        Server::start_with(script, port, Limits::DEFAULT)
    }

    pub fn start_with(script: ServerScript, port: u16, limits: Limits) -> std::io::Result<Server> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::new(script, port, limits));
        let s = shared.clone();
        let acceptor = std::thread::spawn(move || {
            let mut handles: Vec<JoinHandle<()>> = Vec::new();
            while !s.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) if !s.room() => {
                        s.obs.lock().unwrap().refused_connections += 1;
                        let _ = stream.shutdown(Shutdown::Write);
                    }
                    Ok((stream, peer)) => {
                        handles.retain(|h| !h.is_finished());
                        let id = s.open_conn(peer.port());
                        s.open.fetch_add(1, Ordering::SeqCst);
                        let s2 = s.clone();
                        handles.push(std::thread::spawn(move || {
                            serve(s2.clone(), id, stream);
                            s2.open.fetch_sub(1, Ordering::SeqCst);
                        }));
                    }
                    Err(e) if e.kind() == IoKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            handles
        });
        Ok(Server {
            port,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// Stops accepting, waits for the connections to end (they are closed after `grace`), and
    /// returns what the server saw.
    pub fn stop(mut self, grace: Duration) -> Observations {
        std::thread::sleep(grace);
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(acceptor) = self.acceptor.take() {
            if let Ok(handles) = acceptor.join() {
                for h in handles {
                    let _ = h.join();
                }
            }
        }
        std::mem::take(&mut *self.shared.obs.lock().unwrap())
    }
}

/// An envelope received, owned.
struct Request {
    header: EnvelopeHeader,
    body: Vec<u8>,
}

/// Per-connection state.
struct Conn {
    id: usize,
    shared: Arc<Shared>,
    stream: TcpStream,
    conn: Connection,
    /// Bytes before the first envelope has been checked for its version.
    first: Option<Vec<u8>>,
    keyspace: Option<String>,
    layout: Option<Layout>,
    /// What a conformant client would decode from our bytes (for the wire log).
    mirror: Option<Decoder>,
    mirror_failed: bool,
    sent: u64,
    fault_at: Option<Instant>,
    closed: bool,
    /// Both directions, judged as they pass.
    judge: Judge,
    version: u8,
    /// Framed responses of the current read, written together by `flush_pending`.
    pending: Vec<(Vec<u8>, bool)>,
    /// The driver's socket, watched for its reads where the case needs read boundaries: none
    /// in [`replay`], where nobody reads concurrently, or once a boundary failed or the
    /// driver closed.
    reads: Option<std::io::Result<ClientSocket>>,
}

fn serve(shared: Arc<Shared>, id: usize, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let mut c = Conn::new(shared.clone(), id, stream);
    c.reads = Some(ClientSocket::of(&c.stream));
    let mut buf = vec![0u8; 64 * 1024];
    let mut last_read = Instant::now();
    let closed_by = loop {
        if c.closed {
            break "server";
        }
        if shared.stop.load(Ordering::Relaxed) {
            break "server (end of case)";
        }
        match c.stream.read(&mut buf) {
            Ok(0) => {
                c.end_of_input();
                break "client";
            }
            Ok(n) => {
                last_read = Instant::now();
                if !shared.hold(n) {
                    let cap = shared.limits.held_bytes;
                    let note = format!("the server holds more than {cap} bytes: closing");
                    shared.log(id, "note", note);
                    break "server (memory cap)";
                }
                let sent = c.sent;
                c.read(&buf[..n]);
                shared.hold((c.sent - sent) as usize);
            }
            Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {
                if last_read.elapsed() >= shared.limits.idle {
                    let idle = shared.limits.idle;
                    shared.log(
                        id,
                        "note",
                        format!("nothing received for {idle:?}: closing"),
                    );
                    break "server (idle)";
                }
            }
            Err(_) => break "client (reset)",
        }
    };
    let _ = c.stream.shutdown(Shutdown::Both);
    let t = shared.ms();
    shared.with_conn(id, |r| {
        r.closed_ms = Some(t);
        r.closed_by = Some(closed_by.to_string());
    });
    shared.log(id, "note", format!("connection closed by {closed_by}"));
}

/// The server's handling of one connection's bytes without the listener: `reads` as the
/// successive reads of a connection, then the end of its stream. Responses are written to
/// `sink`, a connected socket the caller drains. The fuzz target's way in.
pub fn replay(script: ServerScript, sink: TcpStream, reads: &[&[u8]]) -> Observations {
    let shared = Arc::new(Shared::new(script, 0, Limits::DEFAULT));
    let id = shared.open_conn(0);
    let mut c = Conn::new(shared.clone(), id, sink);
    for bytes in reads {
        if c.closed {
            break;
        }
        c.read(bytes);
    }
    if !c.closed {
        c.end_of_input();
    }
    drop(c);
    let obs = std::mem::take(&mut *shared.obs.lock().unwrap());
    obs
}

impl Conn {
    fn new(shared: Arc<Shared>, id: usize, stream: TcpStream) -> Conn {
        let options = shared.script.server_options();
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
        }
    }

    /// One read's bytes: recorded for the capture, then handled.
    fn read(&mut self, bytes: &[u8]) {
        self.shared.with_conn(self.id, |r| r.record(true, bytes));
        self.input(bytes);
    }

    /// The client closed its direction (RECV-9).
    fn end_of_input(&mut self) {
        self.judge_end();
        if let Err(e) = self.conn.finish() {
            self.client_error(&e);
        }
    }
}

impl Conn {
    fn input(&mut self, data: &[u8]) {
        self.judge_bytes(Direction::ClientToServer, data);
        if let Some(mut first) = self.first.take() {
            first.extend_from_slice(data);
            if first.len() < ENVELOPE_HEADER_LEN {
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
    fn refuse_version(&mut self, bytes: &[u8]) -> bool {
        let h = EnvelopeHeader::parse(bytes[..ENVELOPE_HEADER_LEN].try_into().unwrap());
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
    fn refusal(&mut self, h: &EnvelopeHeader) -> bool {
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
            "c2s",
            format!(
                "unframed {} stream {} version {:#04x}: refused",
                opcode_name(h.opcode),
                h.stream,
                h.version
            ),
        );
        let answer_version = max.min(5) | RESPONSE_BIT;
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
            "s2c",
            format!("unframed ERROR (version {answer_version:#04x}) stream {stream}: {message}"),
        );
        self.write(&reply);
        self.closed = true;
        true
    }

    fn receive(&mut self, data: &[u8]) {
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
            self.shared.log(self.id, "c2s", line);
        }
        if let Some((offset, n)) = switched {
            self.shared.log(
                self.id,
                "note",
                format!("client bytes from offset {offset} are framed: {n}"),
            );
        }
        for (header, error) in rejected {
            // An envelope refused on its own (ENV-2, ENV-5): ERROR on its stream, go on.
            self.client_error(&error);
            let reply = self.conn.reject_response(&header, &error);
            self.shared.log(
                self.id,
                "s2c",
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
                    "s2c",
                    format!("ERROR PROTOCOL_ERROR stream 0: {}", e),
                );
                self.write(&reply);
                self.closed = true;
            }
        }
    }

    /// The server's own receiver refused the driver's bytes: logged (the judge records the
    /// rule).
    fn client_error(&mut self, e: &cqlframe::FramingError) {
        let text = format!("{} ({} at byte {})", e.kind, e.rule(), e.offset);
        self.shared.log(
            self.id,
            "note",
            format!("framing error in client bytes: {text}"),
        );
        self.shared
            .with_conn(self.id, |r| r.framing_error = Some(text));
    }

    /// Shows the judge what went over the wire, in order. Only what it finds in the driver's
    /// bytes is recorded: the server's own bytes carry the case's faults on purpose.
    fn judge_bytes(&mut self, d: Direction, bytes: &[u8]) {
        let mut found = Vec::new();
        self.judge.receive(d, bytes, &mut found);
        self.record(d, &found);
    }

    /// The driver closed its side: ending inside a frame or envelope is RECV-9.
    fn judge_end(&mut self) {
        let mut found = Vec::new();
        self.judge.finish(Direction::ClientToServer, &mut found);
        self.record(Direction::ClientToServer, &found);
    }

    fn record(&self, d: Direction, found: &[crate::rules::Finding]) {
        if d == Direction::ClientToServer && !found.is_empty() {
            self.shared.with_conn(self.id, |r| {
                for f in found {
                    r.findings.add(f);
                }
            });
        }
    }

    fn handle(&mut self, unframed: bool, req: Request) {
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
            "c2s",
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
        let version = self.version;
        let script = self.shared.script.clone();
        let mut target = false;
        let (opcode, reply): (Opcode, Vec<u8>) = match op {
            Some(Opcode::Options) => (
                Opcode::Supported,
                cql::supported_body(&script.server_options(), script.max_version),
            ),
            Some(Opcode::Startup) if unframed && self.refusal(&h) => return,
            Some(Opcode::Startup) => {
                let options = body::read_string_map(&body).unwrap_or_default();
                self.shared.with_conn(self.id, |r| {
                    r.startup_version = Some(version);
                    r.startup_options = options.clone();
                });
                let decided =
                    cqlframe::connection::negotiate(version, &options, &script.server_options());
                match decided {
                    _ if script.startup_error => {
                        self.shared.with_conn(self.id, |r| {
                            r.provocation = Some(Provocation::StartupError)
                        });
                        (
                            Opcode::Error,
                            body::error(
                                body::PROTOCOL_ERROR,
                                "STARTUP refused by the conformance server's script (startup_error)",
                            ),
                        )
                    }
                    Err(kind) => (
                        Opcode::Error,
                        body::error(body::PROTOCOL_ERROR, &format!("{kind} ({})", kind.rule())),
                    ),
                    Ok(_) if script.auth => {
                        let mut b = Vec::new();
                        cql::put_string(&mut b, "org.apache.cassandra.auth.PasswordAuthenticator");
                        (Opcode::Authenticate, b)
                    }
                    Ok(_) if script.unpaired_response => {
                        self.send_unpaired(version);
                        (Opcode::Ready, vec![])
                    }
                    Ok(_) => (Opcode::Ready, vec![]),
                }
            }
            Some(Opcode::AuthResponse) => (Opcode::AuthSuccess, 0i32.to_be_bytes().to_vec()),
            Some(Opcode::Register) => (Opcode::Ready, vec![]),
            Some(Opcode::Query) => match cql::request_query(&body) {
                Ok(q) => {
                    let (reply, is_target) = self.answer(&q, None);
                    target = is_target;
                    (Opcode::Result, reply)
                }
                Err(e) => (Opcode::Error, body::error(body::PROTOCOL_ERROR, &e)),
            },
            Some(Opcode::Prepare) => match cql::request_query(&body) {
                Ok(q) => {
                    let id = cql::statement_id(&q);
                    self.shared
                        .prepared
                        .lock()
                        .unwrap()
                        .insert(id.clone(), q.clone());
                    let table = self.table_for(&q);
                    (Opcode::Result, cql::prepared_result(&id, version, &table))
                }
                Err(e) => (Opcode::Error, body::error(body::PROTOCOL_ERROR, &e)),
            },
            Some(Opcode::Execute) => {
                let id = cql::execute_id(&body).unwrap_or_default();
                let query = self.shared.prepared.lock().unwrap().get(&id).cloned();
                match query {
                    Some(q) => {
                        let (reply, is_target) = self.answer(&q, Some(&body));
                        target = is_target;
                        (Opcode::Result, reply)
                    }
                    None => {
                        let mut b = body::error(0x2500, "Unprepared statement");
                        cql::put_short_bytes(&mut b, &id);
                        (Opcode::Error, b)
                    }
                }
            }
            Some(Opcode::Batch) => (Opcode::Result, cql::void_result()),
            _ => (
                Opcode::Error,
                body::error(
                    body::PROTOCOL_ERROR,
                    &format!("unexpected opcode {}", opcode_name(h.opcode)),
                ),
            ),
        };
        let flags = if version == 6 { FLAG_USE_BETA } else { 0 };
        let envelope = envelope_bytes(version | RESPONSE_BIT, flags, h.stream, opcode, &reply);
        let what = match opcode {
            Opcode::Result => cql::describe_result(&reply),
            Opcode::Error => body::read_error(&reply)
                .map(|(code, m)| format!("{code:#06x} {m}"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        self.respond(envelope, opcode, h.stream, what, target);
    }

    /// Writes the unframed response that answers no request (script `unpaired_response`), past
    /// the server's own Connection, which would refuse it.
    fn send_unpaired(&mut self, version: u8) {
        self.shared.log(
            self.id,
            "s2c",
            "FAULT: unframed RESULT Void on stream 32752 (0x7ff0), which no request uses (LIFE-13)"
                .to_string(),
        );
        self.write(&frames::stray_envelope(version | RESPONSE_BIT));
        self.shared.with_conn(self.id, |r| {
            r.provocation = Some(Provocation::UnpairedResponse)
        });
    }

    /// The RESULT body for a query, and whether it is a target of the fault (ks.t rows).
    fn answer(&mut self, query: &str, _execute: Option<&[u8]>) -> (Vec<u8>, bool) {
        let script = &self.shared.script;
        match cql::route(query, self.keyspace.as_deref()) {
            Route::Use(ks) => {
                self.keyspace = Some(ks.clone());
                (cql::set_keyspace_result(&ks), false)
            }
            Route::Insert => {
                if let Some(blob) = cql::first_blob_literal(query) {
                    let ok = blob == cql::blob_pattern(blob.len());
                    self.shared
                        .obs
                        .lock()
                        .unwrap()
                        .inserts
                        .push((blob.len(), ok));
                }
                (cql::void_result(), false)
            }
            Route::Void => (cql::void_result(), false),
            Route::TestTable => (
                cql::rows_result(&cql::test_table(script.rows, script.row_size)),
                true,
            ),
            _ => (cql::rows_result(&self.table_for(query)), false),
        }
    }

    fn table_for(&self, query: &str) -> cql::Table {
        let script = &self.shared.script;
        match cql::route(query, self.keyspace.as_deref()) {
            Route::Local => cql::project(cql::system_local(self.shared.port), query),
            Route::Peers => {
                let table = if query.to_ascii_lowercase().contains("peers_v2") {
                    cql::system_peers("peers_v2")
                } else {
                    cql::system_peers("peers")
                };
                cql::project(table, query)
            }
            Route::TestTable => cql::test_table(script.rows, script.row_size),
            _ => cql::empty_table("system", "unknown"),
        }
    }

    /// Writes one response: unframed before the switch (through the Connection, which switches
    /// on the STARTUP response), framed by the script's layout after it.
    fn respond(
        &mut self,
        envelope: Vec<u8>,
        opcode: Opcode,
        stream: i16,
        what: String,
        target: bool,
    ) {
        let line = format!(
            "{} stream {} ({} bytes){}",
            opcode.name(),
            stream,
            envelope.len() - ENVELOPE_HEADER_LEN,
            if what.is_empty() {
                String::new()
            } else {
                format!(": {what}")
            }
        );
        let Some(n) = self.conn.negotiated() else {
            let mut out = Vec::new();
            if let Err(e) = self.conn.send(&[&envelope], &mut out) {
                self.shared
                    .log(self.id, "note", format!("server send refused: {e}"));
                return;
            }
            self.shared.log(self.id, "s2c", format!("unframed {line}"));
            self.write(&out);
            if let Some(n) = self.conn.negotiated() {
                let layout = Layout::new(n.settings, &self.shared.script);
                self.shared.log(
                    self.id,
                    "note",
                    format!(
                        "server frames from byte {}: {n}; capacity {}, split at {}{}",
                        self.sent,
                        layout.capacity,
                        layout.split_at,
                        match self.shared.script.chop {
                            0 => String::new(),
                            c => format!(", written in {c}-byte chunks"),
                        }
                    ),
                );
                self.shared.with_conn(self.id, |r| r.negotiated = Some(n));
                self.mirror = Some(Decoder::starting_at(n.settings, MAX_BODY, self.sent));
                self.layout = Some(layout);
            }
            return;
        };
        if self.layout.is_none() {
            self.layout = Some(Layout::new(n.settings, &self.shared.script));
        }
        self.shared.log(self.id, "s2c", line);
        if target {
            self.shared.obs.lock().unwrap().target_served += 1;
        }
        self.pending.push((envelope, target));
    }

    /// Frames the responses of one read together (packed unless the script says otherwise);
    /// the fault's target gets frames of its own so that the fault hits only it.
    fn flush_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let Some(layout) = self.layout.clone() else {
            return;
        };
        if pending.is_empty() {
            return;
        }
        let mut bytes = Vec::new();
        if self.shared.script.empty_frames {
            layout.frame(&[], true).write(&mut bytes);
        }
        let mut close = false;
        let mut batch: Vec<Vec<u8>> = Vec::new();
        for (envelope, target) in pending {
            let fault = match &self.shared.script.fault {
                Some(f) if target && !self.shared.fault_used.swap(true, Ordering::SeqCst) => {
                    f.clone()
                }
                _ => {
                    batch.push(envelope);
                    continue;
                }
            };
            write_frames(&layout.frames(&batch), &mut bytes);
            batch.clear();
            match frames::apply(&fault, &layout, &envelope) {
                Ok(f) => {
                    let note = format!("FAULT {}: {}", fault.kind, f.note);
                    self.shared.log(self.id, "note", note);
                    let at_ms = self.shared.ms();
                    self.shared.obs.lock().unwrap().fault = Some(FaultRecord {
                        conn: self.id,
                        at_ms,
                        note: f.note,
                    });
                    self.fault_at = Some(Instant::now());
                    bytes.extend_from_slice(&f.bytes);
                    if f.close {
                        close = true;
                        break;
                    }
                }
                Err(frames::NotApplicable(why)) => {
                    self.shared
                        .log(self.id, "note", format!("fault not applicable: {why}"));
                    self.shared.obs.lock().unwrap().fault_not_applicable = Some(why);
                    write_frames(&layout.frames(&[envelope]), &mut bytes);
                }
            }
        }
        if !close {
            write_frames(&layout.frames(&batch), &mut bytes);
        }
        self.write(&bytes);
        if close {
            // The driver reads the cut bytes before it learns of the close, on every run.
            if self.shared.script.chop == 0 {
                self.confirm_read(self.sent);
            }
            self.closed = true;
        }
    }

    /// Writes bytes to the socket (chopped as the script says) and feeds them to the mirror
    /// decoder for the wire log.
    fn write(&mut self, bytes: &[u8]) {
        if let Some(mirror) = &mut self.mirror {
            if !self.mirror_failed {
                let mut lines = Vec::new();
                let r = mirror.decode(bytes, |event| {
                    if let Event::Frame(f) = event {
                        lines.push(crate::wire_log::frame_line(f));
                    }
                    Ok(())
                });
                for l in lines {
                    self.shared.log(self.id, "s2c", l);
                }
                if let Err(e) = r {
                    self.mirror_failed = true;
                    self.shared.log(
                        self.id,
                        "note",
                        format!("a conformant client stops here: {e}"),
                    );
                }
            }
        }
        self.sent += bytes.len() as u64;
        self.shared.with_conn(self.id, |r| r.record(false, bytes));
        self.judge_bytes(Direction::ServerToClient, bytes);
        let chop = match self.shared.script.chop {
            0 => bytes.len().max(1),
            n => n,
        };
        let mut written = self.sent - bytes.len() as u64;
        for piece in bytes.chunks(chop) {
            if self.stream.write_all(piece).is_err() {
                self.closed = true;
                return;
            }
            written += piece.len() as u64;
            if self.shared.script.chop > 0 {
                self.confirm_read(written);
            }
        }
    }

    /// Waits until the driver has read the `written` bytes written so far (see [`delivery`]),
    /// and records the boundary. After the first that fails, or once the driver closed, the
    /// server writes on without waiting: the case is not exercised as written then, or is over.
    fn confirm_read(&mut self, written: u64) {
        let Some(watch) = &self.reads else {
            return;
        };
        let boundary = match watch {
            Ok(socket) => socket.wait_read(written, delivery::BOUND),
            Err(_) => Boundary::Unobservable,
        };
        match boundary {
            Boundary::Confirmed => {
                self.shared.with_conn(self.id, |r| r.reads.confirmed += 1);
                return;
            }
            Boundary::Closed => {}
            failed => {
                let note = match (failed, watch) {
                    (_, Err(e)) => format!("the driver's reads cannot be observed here ({e})"),
                    (
                        Boundary::Unconfirmed {
                            written,
                            received,
                            unread,
                        },
                        _,
                    ) => format!(
                        "the driver did not read byte {written} within {} s (its socket had \
                         received {received} bytes, {unread} of them unread): later writes \
                         are not held back",
                        delivery::BOUND.as_secs()
                    ),
                    _ => "the driver's reads cannot be observed".to_string(),
                };
                self.shared.log(self.id, "note", note);
                self.shared
                    .with_conn(self.id, |r| r.reads.unconfirmed = Some(failed));
            }
        }
        self.reads = None;
    }
}

fn write_frames(frames: &[OutFrame], out: &mut Vec<u8>) {
    for f in frames {
        f.write(out);
    }
}

fn describe_request(op: Option<Opcode>, body: &[u8]) -> String {
    match op {
        Some(Opcode::Query) | Some(Opcode::Prepare) => match cql::request_query(body) {
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
