//! The probe's client: a client-role [`Connection`] on a socket for the handshake and the
//! ordinary traffic, plus raw writes for faults and a raw reader for what the server does
//! after one. Every byte both ways also goes to a [`Judge`]: what it finds in the server's
//! bytes becomes checks of the case ([`Probe::judged`]).

use crate::fault_builder::OutFrame;
use crate::rules::{Direction, Judge, Tally};
use crate::verdict::Check;
use crate::wire_log::{Dir, Line};
use cqlframe::body;
use cqlframe::connection::{version_flags, Connection, ConnectionEvent, Role};
use cqlframe::decoder::{Decoder, Event};
use cqlframe::encoder::{FrameEncoder, SplitPolicy};
use cqlframe::envelope::{envelope_bytes, opcode_name, EnvelopeHeader, Opcode};
use cqlframe::format::{FrameSettings, MAX_PAYLOAD};
use std::collections::VecDeque;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

pub struct Probe {
    stream: TcpStream,
    pub conn: Connection,
    pub version: u8,
    pub flags: u8,
    next_stream: i16,
    inbox: VecDeque<(EnvelopeHeader, Vec<u8>, bool)>,
    pub log: Vec<Line>,
    start: Instant,
    timeout: Duration,
    /// Bytes read by [`Probe::raw_envelope`] beyond the envelope it returned.
    raw: Vec<u8>,
    judge: Judge,
    findings: Tally,
}

/// How a wait ended without the envelope wanted.
#[derive(Debug)]
pub enum Wait {
    Timeout,
    /// The time ran out inside a frame or envelope the server had begun: what a receiver
    /// would report were the stream to end there.
    Stalled(String),
    Closed,
    /// The server's bytes broke a rule (the client's receiver says which).
    Framing(String),
    Io(String),
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wait::Timeout => write!(f, "no answer (timeout)"),
            Wait::Stalled(e) => write!(f, "no answer (timeout) inside a partial frame: {e}"),
            Wait::Closed => write!(f, "the server closed the connection"),
            Wait::Framing(e) => write!(f, "framing error in the server's bytes: {e}"),
            Wait::Io(e) => write!(f, "socket error: {e}"),
        }
    }
}

/// What the server wrote after a fault, until it closed or the time ran out.
pub struct Aftermath {
    pub bytes: Vec<u8>,
    pub closed: bool,
    pub reset: bool,
    pub seconds: f64,
}

/// A QUERY body as v5 (and v6-beta) encode it.
pub fn query_body(query: &str) -> Vec<u8> {
    crate::cql::messages::query_body(query, 5)
}

/// The smallest query every server answers with rows: the node's release.
pub const LOCAL_QUERY: &str = "SELECT release_version FROM system.local";

impl Probe {
    /// A new connection to `target`, whose judge knows what the node's `supported` multimap
    /// said (from another connection; empty: nothing known).
    pub fn connect(
        target: &str,
        version: u8,
        timeout: Duration,
        supported: &[(String, Vec<String>)],
    ) -> Result<Probe, String> {
        let addr = target
            .to_socket_addrs()
            .map_err(|e| format!("{target}: {e}"))?
            .next()
            .ok_or_else(|| format!("{target}: no address"))?;
        let stream = TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| format!("connect {target}: {e}"))?;
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
        let mut judge = Judge::new(256 << 20);
        if !supported.is_empty() {
            judge.heard(supported);
        }
        Ok(Probe {
            stream,
            conn: Connection::new(Role::Client, 256 << 20, SplitPolicy::DRIVERS),
            version,
            flags: version_flags(version),
            next_stream: 1,
            inbox: VecDeque::new(),
            log: Vec::new(),
            start: Instant::now(),
            timeout,
            raw: Vec::new(),
            judge,
            findings: Tally::default(),
        })
    }

    /// One unframed envelope read straight off the socket, bypassing the Connection.
    pub fn raw_envelope(&mut self) -> Result<(EnvelopeHeader, Vec<u8>), Wait> {
        let start = Instant::now();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // In the layout its version byte names: the refusal of a retired version has the
            // 8-byte header of v1 and v2 (LIFE-14).
            if let Some((h, len)) = EnvelopeHeader::read(&self.raw) {
                let total = len + h.length.max(0) as usize;
                if self.raw.len() >= total {
                    let body = self.raw[len..total].to_vec();
                    self.raw.drain(..total);
                    self.note(Dir::S2c, describe(&h, &body, false));
                    return Ok((h, body));
                }
            }
            if start.elapsed() > self.timeout {
                if !self.raw.is_empty() {
                    return Err(Wait::Stalled(format!(
                        "{} bytes of an unframed envelope received",
                        self.raw.len()
                    )));
                }
                return Err(Wait::Timeout);
            }
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(Wait::Closed),
                Ok(n) => {
                    self.judge_bytes(Direction::ServerToClient, &buf[..n]);
                    self.raw.extend_from_slice(&buf[..n]);
                }
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
                Err(_) => return Err(Wait::Closed),
            }
        }
    }

    pub fn note(&mut self, dir: Dir, text: impl Into<String>) {
        self.log.push(Line {
            t_ms: self.start.elapsed().as_secs_f64() * 1000.0,
            dir,
            text: text.into(),
        });
    }

    /// A request envelope on a new stream.
    pub fn envelope(&mut self, opcode: Opcode, body: &[u8]) -> (i16, Vec<u8>) {
        let s = self.next_stream;
        self.next_stream += 1;
        (s, envelope_bytes(self.version, self.flags, s, opcode, body))
    }

    /// Sends [`LOCAL_QUERY`] and waits for its answer (a refused send shows as no answer).
    pub fn ask_local(&mut self) -> Result<(EnvelopeHeader, Vec<u8>, bool), Wait> {
        let (s, e) = self.envelope(Opcode::Query, &query_body(LOCAL_QUERY));
        self.send(&[&e]).ok();
        self.wait(s, true)
    }

    /// Sends envelopes the way a conforming client does (unframed before the switch).
    pub fn send(&mut self, envelopes: &[&[u8]]) -> Result<(), String> {
        let mut out = Vec::new();
        self.conn
            .send(envelopes, &mut out)
            .map_err(|e| format!("send refused: {e}"))?;
        let framed = self.conn.negotiated().is_some();
        for e in envelopes {
            let h = EnvelopeHeader::parse(e[..9].try_into().expect("9 bytes"));
            self.note(
                Dir::C2s,
                format!(
                    "{}{} stream {} ({} bytes)",
                    if framed { "" } else { "unframed " },
                    opcode_name(h.opcode),
                    h.stream,
                    h.length
                ),
            );
        }
        self.write(&out, 0)
    }

    /// Shows the judge what went over the wire, in order.
    fn judge_bytes(&mut self, d: Direction, bytes: &[u8]) {
        let mut found = Vec::new();
        self.judge.receive(d, bytes, &mut found);
        for f in &found {
            self.findings.add(f);
        }
    }

    /// The judge's finding of `rule` in the server's bytes so far, as a failed check.
    pub fn server_finding(&self, rule: &str, connection: usize) -> Option<Check> {
        self.findings
            .rules()
            .iter()
            .find(|r| r.first.direction == Direction::ServerToClient && r.first.rule == rule)
            .map(|r| r.as_check(&format!("connection {connection}, the server's bytes")))
    }

    /// What the judge found in the server's bytes on this connection, as checks of the case,
    /// one per rule with its count. Only on a connection where the probe itself broke no rule:
    /// after a fault the probe sent on purpose, what the server writes is the case's to judge.
    pub fn judged(&self, connection: usize) -> Vec<Check> {
        let rules = self.findings.rules();
        if rules
            .iter()
            .any(|r| r.first.direction == Direction::ClientToServer)
        {
            return Vec::new();
        }
        rules
            .iter()
            .map(|r| r.as_check(&format!("connection {connection}, the server's bytes")))
            .collect()
    }

    /// Writes bytes as they are, in chunks of `chop` bytes (0: at once).
    pub fn write(&mut self, bytes: &[u8], chop: usize) -> Result<(), String> {
        self.judge_bytes(Direction::ClientToServer, bytes);
        let r = if chop == 0 {
            self.stream.write_all(bytes)
        } else {
            bytes.chunks(chop).try_for_each(|c| {
                self.stream.write_all(c)?;
                self.stream.flush()
            })
        };
        r.map_err(|e| format!("write: {e}"))
    }

    /// Frames `envelopes` with the connection's settings into one self-contained frame.
    pub fn frame(&self, content: &[u8], self_contained: bool) -> Vec<u8> {
        let settings = self.settings();
        let mut enc = FrameEncoder::new(settings, SplitPolicy::DRIVERS);
        let mut out = Vec::new();
        enc.write_frame(content, self_contained, &mut out)
            .expect("content within 131071 bytes");
        out
    }

    /// A frame of the connection's settings carrying `content`, built part by part for a fault.
    pub fn out_frame(&self, content: &[u8], self_contained: bool) -> OutFrame {
        OutFrame::new(self.settings(), content, self_contained, true)
    }

    /// `envelope` as a sequence of full frames, built part by part for a fault.
    pub fn sequence(&self, envelope: &[u8]) -> Vec<OutFrame> {
        envelope
            .chunks(MAX_PAYLOAD)
            .map(|c| self.out_frame(c, false))
            .collect()
    }

    pub fn settings(&self) -> FrameSettings {
        self.conn
            .negotiated()
            .map(|n| n.settings)
            .unwrap_or_default()
    }

    /// The next envelope on `stream` (or any ERROR when `any_error`).
    pub fn wait(
        &mut self,
        stream: i16,
        any_error: bool,
    ) -> Result<(EnvelopeHeader, Vec<u8>, bool), Wait> {
        let start = Instant::now();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if let Some(i) = self.inbox.iter().position(|(h, _, _)| {
                h.stream == stream || (any_error && h.opcode == Opcode::Error as u8)
            }) {
                return Ok(self.inbox.remove(i).expect("found"));
            }
            if start.elapsed() > self.timeout {
                self.note(Dir::Note, "timeout");
                // Bytes begun and not finished are what finishing the stream here reports.
                if let Err(e) = self.conn.clone().finish() {
                    self.note(Dir::Note, format!("inside a partial frame: {e}"));
                    return Err(Wait::Stalled(e.to_string()));
                }
                return Err(Wait::Timeout);
            }
            let n = match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.note(Dir::Note, "closed by the server");
                    return Err(match self.conn.finish() {
                        Err(e) => Wait::Framing(e.to_string()),
                        Ok(()) => Wait::Closed,
                    });
                }
                Ok(n) => n,
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => continue,
                Err(e) if e.kind() == IoKind::ConnectionReset => {
                    self.note(Dir::Note, "reset by the server");
                    return Err(Wait::Closed);
                }
                Err(e) => return Err(Wait::Io(e.to_string())),
            };
            self.judge_bytes(Direction::ServerToClient, &buf[..n]);
            let inbox = &mut self.inbox;
            let mut lines = Vec::new();
            let r = self.conn.receive(&buf[..n], |event| {
                match event {
                    ConnectionEvent::Unframed { envelope, .. }
                    | ConnectionEvent::Refused { envelope, .. } => {
                        lines.push(describe(&envelope.header, envelope.body, false));
                        inbox.push_back((envelope.header, envelope.body.to_vec(), false));
                    }
                    ConnectionEvent::Envelope(envelope) => {
                        lines.push(describe(&envelope.header, envelope.body, true));
                        inbox.push_back((envelope.header, envelope.body.to_vec(), true));
                    }
                    ConnectionEvent::Frame(f) => lines.push(crate::wire_log::frame_line(f)),
                    ConnectionEvent::Rejected { error, .. } => return Err(error),
                    ConnectionEvent::Switched { offset, negotiated } => {
                        lines.push(format!("switch at byte {offset}: {negotiated}"))
                    }
                    _ => {}
                }
                Ok(())
            });
            for l in lines {
                self.note(Dir::S2c, l);
            }
            if let Err(e) = r {
                self.note(Dir::Note, format!("framing error: {e}"));
                return Err(Wait::Framing(e.to_string()));
            }
        }
    }

    /// A request and its response.
    pub fn call(&mut self, opcode: Opcode, body: &[u8]) -> Result<(EnvelopeHeader, Vec<u8>), Wait> {
        let (s, e) = self.envelope(opcode, body);
        self.send(&[&e]).map_err(Wait::Io)?;
        self.wait(s, true).map(|(h, b, _)| (h, b))
    }

    /// OPTIONS then STARTUP with `options`; the STARTUP response.
    pub fn handshake(
        &mut self,
        options: &[(&str, &str)],
    ) -> Result<(EnvelopeHeader, Vec<u8>), Wait> {
        let (h, _) = self.call(Opcode::Options, &[])?;
        if h.opcode != Opcode::Supported as u8 {
            return Err(Wait::Io(format!(
                "OPTIONS answered with {}",
                opcode_name(h.opcode)
            )));
        }
        self.call(Opcode::Startup, &body::string_map(options))
    }

    /// Everything the server writes until it closes or `wait` runs out.
    pub fn aftermath(&mut self, wait: Duration) -> Aftermath {
        let start = Instant::now();
        let mut bytes = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let (mut closed, mut reset) = (false, false);
        while start.elapsed() < wait {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => {
                    self.judge_bytes(Direction::ServerToClient, &buf[..n]);
                    bytes.extend_from_slice(&buf[..n]);
                }
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
                Err(_) => {
                    closed = true;
                    reset = true;
                    break;
                }
            }
        }
        let _ = self.stream.shutdown(Shutdown::Both);
        self.note(
            Dir::Note,
            format!(
                "after the fault: {} bytes, then {}",
                bytes.len(),
                match (closed, reset) {
                    (true, true) => "reset",
                    (true, false) => "close",
                    _ => "still open",
                }
            ),
        );
        Aftermath {
            bytes,
            closed,
            reset,
            seconds: start.elapsed().as_secs_f64(),
        }
    }
}

fn describe(h: &EnvelopeHeader, body: &[u8], framed: bool) -> String {
    let detail = if h.opcode == Opcode::Error as u8 {
        body::read_error(body)
            .map(|(c, m)| format!(": {c:#06x} {m}"))
            .unwrap_or_default()
    } else {
        String::new()
    };
    format!(
        "{}{} stream {} version {:#04x} flags {:#04x} ({} bytes){detail}",
        if framed { "" } else { "unframed " },
        opcode_name(h.opcode),
        h.stream,
        h.version,
        h.flags,
        h.length
    )
}

/// The envelopes in `bytes` decoded as frames of `settings`: (header, body) each, or the error.
pub fn decode_as(
    bytes: &[u8],
    settings: FrameSettings,
) -> Result<Vec<(EnvelopeHeader, Vec<u8>)>, String> {
    let mut d = Decoder::new(settings, 256 << 20);
    let mut out = Vec::new();
    d.decode(bytes, |event| {
        if let Event::Envelope(e) = event {
            out.push((e.header, e.body.to_vec()));
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    d.finish().map_err(|e| e.to_string())?;
    Ok(out)
}
