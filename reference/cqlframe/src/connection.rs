//! The connection lifecycle, for either side, sans-IO: the unframed handshake, the switch to
//! framing right after the STARTUP response (LIFE-1..LIFE-13), and what STARTUP negotiates
//! (NEG-1..NEG-9). Bytes received go in through [`Connection::receive`], envelopes to send
//! through [`Connection::send`]; no sockets inside.

use crate::assembler::checked_body_len;
use crate::body;
use crate::checksum::PayloadChecksum;
use crate::decoder::{Decoder, Event};
use crate::encoder::{FrameEncoder, SplitPolicy};
use crate::envelope::{
    header_len, Envelope, EnvelopeHeader, Opcode, FLAG_USE_BETA, HEADER_VERSIONS, RESPONSE_BIT,
    RETIRED_VERSIONS,
};
use crate::error::{ErrorKind, FramingError, Part};
use crate::format::{parse_checksum, Format, FrameSettings};
use crate::frame_decoder::Frame;
pub use crate::role::Role;
use core::fmt;

/// What a server accepts in STARTUP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerOptions {
    /// Whether STARTUP may ask for `COMPRESSION: lz4`.
    pub lz4: bool,
    /// Payload checksums accepted, or `None` for a server that predates `FRAME_CHECKSUM` and
    /// ignores the key as it ignores every unknown key.
    pub checksums: Option<Vec<PayloadChecksum>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            lz4: true,
            checksums: Some(vec![PayloadChecksum::Crc32, PayloadChecksum::Crc32c]),
        }
    }
}

/// The outcome of the handshake for a framed connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Negotiated {
    /// Protocol version, without the direction bit.
    pub version: u8,
    /// What both directions frame with.
    pub settings: FrameSettings,
}

/// `v5 lz4 crc32c`: how reports and logs name a framed connection.
impl fmt::Display for Negotiated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{} {}", self.version, self.settings)
    }
}

/// First protocol version that uses framing (LIFE-2).
pub const FIRST_FRAMED_VERSION: u8 = 5;
/// Protocol version carried only with USE_BETA (ENV-5).
pub const BETA_VERSION: u8 = 6;

/// The flags every envelope of `version` carries: USE_BETA on the beta version (ENV-5), none on
/// the others.
pub const fn version_flags(version: u8) -> u8 {
    if version == BETA_VERSION {
        FLAG_USE_BETA
    } else {
        0
    }
}
/// Protocol versions a client may probe with that this reference does not speak: the retired v1
/// and v2 (with their 8-byte envelope header), v7 (the next version, which a client newer than
/// the server tries first) and DSE_V1 / DSE_V2 (`0x41`, `0x42`), which drivers try first when
/// negotiating. A server refuses such a request (LIFE-14).
pub const UNSPOKEN_VERSIONS: [u8; 5] = [1, 2, 7, 0x41, 0x42];

fn option<'a>(options: &'a [(String, String)], key: &str) -> Option<&'a str> {
    options
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

/// The server's decision on a STARTUP's options (NEG-1, NEG-2, NEG-5, NEG-6, NEG-7, NEG-9).
pub fn negotiate(
    version: u8,
    options: &[(String, String)],
    server: &ServerOptions,
) -> Result<FrameSettings, ErrorKind> {
    for (i, (key, _)) in options.iter().enumerate() {
        if options[..i]
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(key))
        {
            return Err(ErrorKind::RepeatedOption { key: key.clone() });
        }
    }
    let mut settings = FrameSettings::default();
    if version < FIRST_FRAMED_VERSION {
        return Ok(settings);
    }
    match option(options, "COMPRESSION") {
        None => {}
        Some(v) if server.lz4 && v.eq_ignore_ascii_case("lz4") => settings.format = Format::Lz4,
        Some(v) => {
            return Err(ErrorKind::UnsupportedCompression {
                value: v.to_string(),
            })
        }
    }
    if let (Some(accepted), Some(v)) = (&server.checksums, option(options, "FRAME_CHECKSUM")) {
        settings.checksum = parse_checksum(v)
            .filter(|c| accepted.contains(c))
            .ok_or_else(|| ErrorKind::UnsupportedChecksum {
                value: v.to_string(),
            })?;
    }
    Ok(settings)
}

/// What a client's STARTUP asked for, as the client will frame once the server accepts it.
pub fn requested(options: &[(String, String)]) -> FrameSettings {
    let format = match option(options, "COMPRESSION") {
        Some(v) if v.eq_ignore_ascii_case("lz4") => Format::Lz4,
        _ => Format::Uncompressed,
    };
    let checksum = option(options, "FRAME_CHECKSUM")
        .and_then(parse_checksum)
        .unwrap_or(PayloadChecksum::Crc32);
    FrameSettings::new(format, checksum)
}

/// What the connection reports, in stream order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ConnectionEvent<'a> {
    /// An envelope received before the switch to framing, at stream offset `offset`.
    Unframed {
        /// Stream offset of its first byte.
        offset: u64,
        /// The envelope.
        envelope: Envelope<'a>,
    },
    /// A frame received after the switch, verified; before the envelopes it completes.
    Frame(&'a Frame<'a>),
    /// A whole envelope received after the switch, its version and direction checked.
    Envelope(Envelope<'a>),
    /// An envelope refused on its own (ENV-2, ENV-5): not delivered, the connection goes on.
    /// A server answers it with [`Connection::reject_response`].
    Rejected {
        /// The envelope, whole.
        envelope: Envelope<'a>,
        /// Why it is refused.
        error: FramingError,
    },
    /// Server: a request of a protocol version this end does not speak
    /// ([`UNSPOKEN_VERSIONS`]), received before the switch. It is not processed; the server
    /// answers it with an unframed ERROR naming its versions and may close (the spec's
    /// lifecycle-error section). The client broke no rule: this is how versions are probed.
    Refused {
        /// Stream offset of its first byte.
        offset: u64,
        /// The request.
        envelope: Envelope<'a>,
    },
    /// Received bytes from `offset` on are framed with these settings.
    Switched {
        /// Stream offset of the first framed byte.
        offset: u64,
        /// The version and settings of the frames from there on.
        negotiated: Negotiated,
    },
}

/// What a server does with client bytes that arrive after STARTUP, before it has written the
/// response (the client broke LIFE-6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EarlyBytes {
    /// Report LIFE-6 and stop, as LIFE-12 allows.
    #[default]
    Refuse,
    /// Hold them, and decode them as frames once the response is written: unframed bytes
    /// fail RECV-1 there.
    AsFrames,
}

/// The STARTUP of this connection.
#[derive(Clone, Debug)]
struct Startup {
    stream: i16,
    version: u8,
    options: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
enum Phase {
    /// Before STARTUP.
    Handshake,
    /// STARTUP sent (client) or received (server), its response not yet through.
    AwaitingResponse(Startup),
    /// A v4-or-lower connection: unframed for good (LIFE-2).
    Unframed,
    Framed(Negotiated),
}

/// One end of a CQL connection.
#[derive(Clone, Debug)]
pub struct Connection {
    role: Role,
    server_options: ServerOptions,
    max_body: u32,
    policy: SplitPolicy,
    phase: Phase,
    /// Unframed bytes received but not yet a whole envelope.
    unframed: Vec<u8>,
    /// Stream offset of the first byte of `unframed`.
    received: u64,
    decoder: Option<Decoder>,
    /// Settings the receiving side switches to once the switch point is reached.
    encoder: Option<FrameEncoder>,
    /// Bytes sent so far.
    sent: u64,
    advertised_checksums: Option<Vec<String>>,
    /// Client: stream ids and protocol versions of the unframed requests sent and not yet
    /// answered (LIFE-13).
    outstanding: Vec<(i16, u8)>,
    /// Server: what to do with bytes that follow STARTUP before its response.
    early_bytes: EarlyBytes,
    /// Stream offset from which received bytes are framed, once switched.
    framed_from: Option<u64>,
    /// A received byte broke a rule: nothing more is decoded (RECV-11).
    failed: bool,
}

impl Connection {
    /// A connection at its start, for `role`; a server built so accepts what
    /// [`ServerOptions::default`] does. Envelope bodies over `max_body` bytes are refused
    /// (RECV-12); sent envelopes are framed as `policy` says.
    pub fn new(role: Role, max_body: u32, policy: SplitPolicy) -> Self {
        Connection {
            role,
            server_options: ServerOptions::default(),
            max_body,
            policy,
            phase: Phase::Handshake,
            unframed: Vec::new(),
            received: 0,
            decoder: None,
            encoder: None,
            sent: 0,
            advertised_checksums: None,
            outstanding: Vec::new(),
            early_bytes: EarlyBytes::default(),
            framed_from: None,
            failed: false,
        }
    }

    /// A server connection accepting `options`.
    pub fn server(options: ServerOptions, max_body: u32, policy: SplitPolicy) -> Self {
        Connection {
            server_options: options,
            ..Connection::new(Role::Server, max_body, policy)
        }
    }

    /// A server that handles client bytes after STARTUP as `early` says (LIFE-12).
    pub fn with_early_bytes(self, early: EarlyBytes) -> Self {
        Connection {
            early_bytes: early,
            ..self
        }
    }

    /// Which end this is.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The stream offset from which received bytes are framed, once the connection switched.
    pub fn framed_from(&self) -> Option<u64> {
        self.framed_from
    }

    /// The negotiation, once the connection is framed.
    pub fn negotiated(&self) -> Option<Negotiated> {
        match self.phase {
            Phase::Framed(n) => Some(n),
            _ => None,
        }
    }

    /// The `FRAME_CHECKSUMS` a SUPPORTED response listed (client side).
    pub fn advertised_checksums(&self) -> Option<&[String]> {
        self.advertised_checksums.as_deref()
    }

    /// Feeds received bytes, in any chunking; `on_event` is called with each event in stream
    /// order, and an error it returns stops the connection as a framing error does (the
    /// crate's [callback style](crate#callbacks)). After an error every later call fails too
    /// (RECV-11).
    pub fn receive<F>(&mut self, input: &[u8], mut on_event: F) -> Result<(), FramingError>
    where
        F: FnMut(ConnectionEvent<'_>) -> Result<(), FramingError>,
    {
        if self.failed {
            let offset = self.decoder.as_ref().map_or(self.received, Decoder::offset);
            return Err(FramingError::new(ErrorKind::AfterError, offset));
        }
        let result = self.receive_bytes(input, &mut on_event);
        self.failed = result.is_err();
        result
    }

    /// Takes the callback as `dyn`: one copy of the handshake code serves every caller, and
    /// the cost, an indirect call per event, is small beside the event's work.
    fn receive_bytes(
        &mut self,
        input: &[u8],
        on_event: &mut dyn FnMut(ConnectionEvent<'_>) -> Result<(), FramingError>,
    ) -> Result<(), FramingError> {
        let version = self.negotiated().map_or(0, |n| n.version);
        if let Some(decoder) = &mut self.decoder {
            // Bytes a server held before its response (EarlyBytes::AsFrames) come first, once.
            if !self.unframed.is_empty() {
                let held = std::mem::take(&mut self.unframed);
                receive_framed(decoder, self.role, version, &held, on_event)?;
            }
            return receive_framed(decoder, self.role, version, input, on_event);
        }
        self.unframed.extend_from_slice(input);
        self.check_not_pipelined()?;
        while !self.holds_early_bytes() {
            let Some(total) = self.whole_unframed_envelope()? else {
                break;
            };
            let bytes: Vec<u8> = self.unframed.drain(..total).collect();
            let offset = self.received;
            self.received += total as u64;
            let envelope = envelope_from(&bytes);
            let h = &envelope.header;
            if !h.is_response() && UNSPOKEN_VERSIONS.contains(&h.protocol_version()) {
                on_event(ConnectionEvent::Refused { offset, envelope })?;
                continue;
            }
            if let Some(kind) = self.unframed_fault(&envelope.header) {
                let error = FramingError::new(kind, offset);
                on_event(ConnectionEvent::Rejected { envelope, error })?;
                continue;
            }
            self.pair_response(&envelope, offset)?;
            on_event(ConnectionEvent::Unframed { offset, envelope })?;
            self.after_unframed_received(&envelope);
            if let Some(negotiated) = self.negotiated() {
                let rest = std::mem::take(&mut self.unframed);
                on_event(ConnectionEvent::Switched {
                    offset: self.received,
                    negotiated,
                })?;
                return self.receive_bytes(&rest, on_event);
            }
            self.check_not_pipelined()?;
        }
        Ok(())
    }

    /// Declares the end of the received stream (RECV-9). After an error, already reported,
    /// there is nothing more to say. A server that held bytes before its response decodes them
    /// at its next [`Connection::receive`], which may be given no input.
    pub fn finish(&mut self) -> Result<(), FramingError> {
        // Bytes held for a response never written are never judged.
        if self.failed || self.holds_early_bytes() {
            return Ok(());
        }
        match &mut self.decoder {
            Some(decoder) => decoder.finish(),
            None if self.unframed.is_empty() => Ok(()),
            None => {
                let n = self.unframed.len();
                let missing = match EnvelopeHeader::read(&self.unframed) {
                    None => header_len(self.unframed[0]) - n,
                    Some((h, len)) => (len + h.length.max(0) as usize).saturating_sub(n),
                };
                if missing == 0 {
                    // Whole envelopes a server held before it refused the STARTUP's version
                    // (LIFE-11): decoded at the next receive, never received if none comes.
                    return Ok(());
                }
                Err(FramingError::new(
                    ErrorKind::Truncated {
                        part: Part::Envelope,
                        missing: missing as u64,
                    },
                    self.received,
                ))
            }
        }
    }

    /// Appends the wire bytes of `envelopes` (each a whole envelope) to `out`: unframed during
    /// the handshake, framed after the switch. Sending the STARTUP response switches a server;
    /// a client switches when it receives that response. The only error is a client's own
    /// LIFE-6: sending before the STARTUP response.
    ///
    /// # Panics
    ///
    /// If an envelope is shorter than its header: the caller's bytes are no envelope, which no
    /// rule of the wire describes (RECV-9 is a receiver's, of a stream that ends).
    pub fn send(&mut self, envelopes: &[&[u8]], out: &mut Vec<u8>) -> Result<(), FramingError> {
        let start = out.len();
        for &bytes in envelopes {
            assert!(
                EnvelopeHeader::read(bytes).is_some(),
                "Connection::send: {} bytes are not a whole envelope",
                bytes.len()
            );
            let envelope = envelope_from(bytes);
            if let Some(encoder) = &mut self.encoder {
                encoder.write_envelopes([bytes], out);
            } else {
                self.before_unframed_sent()?;
                out.extend_from_slice(bytes);
                self.after_unframed_sent(&envelope);
            }
        }
        self.sent += (out.len() - start) as u64;
        Ok(())
    }

    /// Server: the framed ERROR (PROTOCOL_ERROR, stream 0) that answers a framing error, naming
    /// the rule and offset (ERR-1, ERR-3, ERR-4). Unframed before the switch. The caller sends it
    /// and closes the connection.
    pub fn error_response(&mut self, error: &FramingError) -> Vec<u8> {
        let version = match (&self.phase, self.negotiated()) {
            (_, Some(n)) => n.version,
            (Phase::AwaitingResponse(startup), None) => startup.version,
            _ => FIRST_FRAMED_VERSION,
        };
        self.protocol_error(version, 0, error)
    }

    /// Server: the ERROR (PROTOCOL_ERROR) that answers an envelope refused on its own
    /// ([`ConnectionEvent::Rejected`]), on its stream. After the switch it is framed and in the
    /// connection's version, which the client accepts (ENV-2) whatever the refused envelope
    /// carried, as Apache Cassandra answers; before it, in the refused envelope's version.
    pub fn reject_response(&mut self, refused: &EnvelopeHeader, error: &FramingError) -> Vec<u8> {
        let version = self
            .negotiated()
            .map_or(refused.protocol_version(), |n| n.version);
        self.protocol_error(version, refused.stream, error)
    }

    fn protocol_error(&mut self, version: u8, stream: i16, error: &FramingError) -> Vec<u8> {
        let message = format!("{} ({} at byte {})", error.kind, error.rule(), error.offset);
        let flags = version_flags(version);
        let envelope = crate::envelope::envelope_bytes(
            version | RESPONSE_BIT,
            flags,
            stream,
            Opcode::Error,
            &body::error(body::PROTOCOL_ERROR, &message),
        );
        let mut out = Vec::new();
        match &mut self.encoder {
            Some(encoder) => encoder.write_envelopes([envelope.as_slice()], &mut out),
            None => out.extend_from_slice(&envelope),
        }
        out
    }

    /// Server: whether bytes after STARTUP wait, unparsed, for the switch (EarlyBytes::AsFrames).
    fn holds_early_bytes(&self) -> bool {
        self.role == Role::Server
            && self.early_bytes == EarlyBytes::AsFrames
            && matches!(self.phase, Phase::AwaitingResponse(_))
    }

    /// Server: nothing may arrive between STARTUP and the response to it (LIFE-6).
    fn check_not_pipelined(&self) -> Result<(), FramingError> {
        if self.role != Role::Server
            || self.early_bytes != EarlyBytes::Refuse
            || !matches!(self.phase, Phase::AwaitingResponse(_))
            || self.unframed.is_empty()
        {
            return Ok(());
        }
        Err(FramingError::new(
            ErrorKind::SentBeforeStartupResponse,
            self.received,
        ))
    }

    /// The length of the whole envelope at the front of `unframed`, once it has arrived.
    /// Besides the versions with the 9-byte header, a server reads a version probe
    /// ([`UNSPOKEN_VERSIONS`]) and a client the refusal of a retired one, in its 8-byte layout
    /// (LIFE-14).
    fn whole_unframed_envelope(&self) -> Result<Option<usize>, FramingError> {
        let Some((header, header_len)) = EnvelopeHeader::read(&self.unframed) else {
            return Ok(None);
        };
        let fail = |kind| FramingError::new(kind, self.received);
        let version = header.protocol_version();
        let probe = match self.role {
            Role::Server => !header.is_response() && UNSPOKEN_VERSIONS.contains(&version),
            Role::Client => header.is_response() && RETIRED_VERSIONS.contains(&version),
        };
        if !HEADER_VERSIONS.contains(&version) && !probe {
            let sender = match self.role {
                Role::Client => Role::Server,
                Role::Server => Role::Client,
            };
            return Err(fail(ErrorKind::NotAnEnvelope {
                found: header.version,
                sender,
            }));
        }
        let body = checked_body_len(&header, self.max_body).map_err(fail)?;
        let total = header_len + body;
        Ok((self.unframed.len() >= total).then_some(total))
    }

    /// An envelope-level fault of an unframed envelope, which leaves its boundaries intact: the
    /// wrong direction (ENV-2) or a v6-beta envelope without USE_BETA (ENV-5).
    fn unframed_fault(&self, h: &EnvelopeHeader) -> Option<ErrorKind> {
        let expect_response = self.role == Role::Client;
        if h.is_response() != expect_response {
            let expected = h.protocol_version() | if expect_response { RESPONSE_BIT } else { 0 };
            return Some(ErrorKind::UnexpectedVersion {
                found: h.version,
                expected,
            });
        }
        (h.protocol_version() == BETA_VERSION && h.flags & FLAG_USE_BETA == 0)
            .then_some(ErrorKind::MissingBetaFlag)
    }

    /// Client: pairs an unframed response with its request by stream id (LIFE-13), before the
    /// switch: before STARTUP and while it is outstanding, where taking one answer for another
    /// would decide the switch wrongly. An ERROR in another version refuses a version on any
    /// stream (LIFE-11): while STARTUP is outstanding, the STARTUP's; before it, that of the
    /// outstanding requests in another version, which it answers, and of those in a retired
    /// version, which a server refuses in that version (LIFE-14). A PROTOCOL_ERROR on stream 0
    /// that answers no request is the server's report of a framing error in the client's bytes
    /// (ERR-1, ERR-4): it answers the fault, not a request, and the server closes after it.
    fn pair_response(&mut self, envelope: &Envelope<'_>, offset: u64) -> Result<(), FramingError> {
        let h = &envelope.header;
        if self.role != Role::Client {
            return Ok(());
        }
        let (startup_stream, startup_version) = match &self.phase {
            Phase::Handshake => (None, None),
            Phase::AwaitingResponse(startup) => (Some(startup.stream), Some(startup.version)),
            Phase::Unframed | Phase::Framed(_) => return Ok(()),
        };
        let op = Opcode::from_u8(h.opcode);
        let refused = |version: u8| {
            h.version != version | RESPONSE_BIT || RETIRED_VERSIONS.contains(&version)
        };
        if op == Some(Opcode::Error) {
            match startup_version {
                Some(version) if refused(version) => return Ok(()),
                None if self.outstanding.iter().any(|&(_, v)| refused(v)) => {
                    self.outstanding.retain(|&(_, v)| !refused(v));
                    return Ok(());
                }
                _ => {}
            }
        }
        let answered = self.outstanding.iter().position(|&(s, _)| s == h.stream);
        if let Some(i) = answered {
            self.outstanding.remove(i);
        }
        let startup_answer = Some(h.stream) == startup_stream
            && matches!(
                op,
                Some(Opcode::Ready | Opcode::Authenticate | Opcode::Error)
            );
        let other_answer = answered.is_some() && Some(h.stream) != startup_stream;
        if startup_answer || other_answer || reports_framing_error(envelope) {
            return Ok(());
        }
        Err(FramingError::new(
            ErrorKind::UnpairedResponse {
                stream: h.stream,
                opcode: h.opcode,
            },
            offset,
        ))
    }

    /// Client, before the switch: a request that reached the server outside [`Connection::send`]
    /// (a version probe, an envelope the server refuses on its own) awaits its answer all the
    /// same (LIFE-13). It changes nothing else: a STARTUP noted here does not start the wait
    /// for its response.
    pub fn await_answer(&mut self, stream: i16, version: u8) {
        if self.role == Role::Client && matches!(self.phase, Phase::Handshake) {
            self.outstanding.push((stream, version));
        }
    }

    /// Server: a STARTUP starts the wait for its response. Client: SUPPORTED is remembered; an
    /// ERROR in another version refuses the version (LIFE-11); the STARTUP response switches the
    /// connection (LIFE-5, LIFE-8).
    fn after_unframed_received(&mut self, envelope: &Envelope<'_>) {
        let h = envelope.header;
        match (self.role, &self.phase, Opcode::from_u8(h.opcode)) {
            (Role::Server, Phase::Handshake, Some(Opcode::Startup)) => {
                self.phase = self.startup_phase(envelope);
            }
            (Role::Client, _, Some(Opcode::Supported)) => {
                if let Ok(map) = body::read_string_multimap(envelope.body) {
                    self.advertised_checksums = map
                        .into_iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case("FRAME_CHECKSUMS"))
                        .map(|(_, v)| v);
                }
            }
            (Role::Client, Phase::AwaitingResponse(startup), Some(Opcode::Error))
                if h.version != startup.version | RESPONSE_BIT =>
            {
                // The version is refused, on whatever stream: no framing (LIFE-11, LIFE-9).
                self.phase = Phase::Unframed;
            }
            (Role::Client, Phase::AwaitingResponse(startup), Some(op))
                if h.stream == startup.stream
                    && matches!(op, Opcode::Ready | Opcode::Authenticate | Opcode::Error) =>
            {
                let settings = if op == Opcode::Error {
                    FrameSettings::default()
                } else {
                    requested(&startup.options)
                };
                self.switch(Negotiated {
                    version: startup.version,
                    settings,
                });
            }
            _ => {}
        }
    }

    fn before_unframed_sent(&self) -> Result<(), FramingError> {
        if let (Role::Client, Phase::AwaitingResponse(_)) = (self.role, &self.phase) {
            return Err(FramingError::new(
                ErrorKind::SentBeforeStartupResponse,
                self.sent,
            ));
        }
        Ok(())
    }

    /// Client: sending STARTUP starts the wait; every request of the handshake awaits its
    /// answer. Server: sending the STARTUP response switches.
    fn after_unframed_sent(&mut self, envelope: &Envelope<'_>) {
        let h = envelope.header;
        if self.role == Role::Client && matches!(self.phase, Phase::Handshake) {
            self.outstanding.push((h.stream, h.protocol_version()));
        }
        match (self.role, &self.phase, Opcode::from_u8(h.opcode)) {
            (Role::Client, Phase::Handshake, Some(Opcode::Startup)) => {
                self.phase = self.startup_phase(envelope)
            }
            (Role::Server, Phase::AwaitingResponse(startup), Some(Opcode::Error))
                if h.version != startup.version | RESPONSE_BIT =>
            {
                // The STARTUP's version refused, on whatever stream: no framing (LIFE-11).
                self.phase = Phase::Unframed;
            }
            (Role::Server, Phase::AwaitingResponse(startup), Some(op))
                if h.stream == startup.stream
                    && matches!(op, Opcode::Ready | Opcode::Authenticate | Opcode::Error) =>
            {
                let decided = negotiate(startup.version, &startup.options, &self.server_options);
                let settings = match (op, decided) {
                    (Opcode::Error, _) | (_, Err(_)) => FrameSettings::default(),
                    (_, Ok(settings)) => settings,
                };
                let negotiated = Negotiated {
                    version: startup.version,
                    settings,
                };
                self.switch(negotiated);
            }
            _ => {}
        }
    }

    /// The phase a STARTUP envelope leads to: a wait for its response, or unframed for good.
    fn startup_phase(&self, envelope: &Envelope<'_>) -> Phase {
        let version = envelope.header.protocol_version();
        if version < FIRST_FRAMED_VERSION {
            return Phase::Unframed;
        }
        let options = body::read_string_map(envelope.body).unwrap_or_default();
        Phase::AwaitingResponse(Startup {
            stream: envelope.header.stream,
            version,
            options,
        })
    }

    fn switch(&mut self, negotiated: Negotiated) {
        self.phase = Phase::Framed(negotiated);
        self.framed_from = Some(self.received);
        self.encoder = Some(FrameEncoder::new(negotiated.settings, self.policy));
        self.decoder = Some(Decoder::starting_at(
            negotiated.settings,
            self.max_body,
            self.received,
        ));
    }
}

/// The envelope-level fault of a framed envelope that `role` receives on a connection of protocol
/// `version`, if any: the wrong version byte or direction (ENV-2), or a v6-beta envelope without
/// USE_BETA (ENV-5). Such an envelope is refused on its own; its boundaries are intact. The
/// envelope COMPRESSION flag is no fault: receivers ignore it (ENV-6; senders should not set it,
/// ENV-4).
pub fn framed_envelope_fault(role: Role, version: u8, h: &EnvelopeHeader) -> Option<ErrorKind> {
    let expected = version
        | if role == Role::Client {
            RESPONSE_BIT
        } else {
            0
        };
    if h.version != expected {
        return Some(ErrorKind::UnexpectedVersion {
            found: h.version,
            expected,
        });
    }
    (version == BETA_VERSION && h.flags & FLAG_USE_BETA == 0).then_some(ErrorKind::MissingBetaFlag)
}

/// Whether `envelope` is the ERROR with which a server reports a framing error in the client's
/// bytes: PROTOCOL_ERROR on stream 0 (ERR-1, ERR-4).
fn reports_framing_error(envelope: &Envelope<'_>) -> bool {
    envelope.header.opcode == Opcode::Error as u8
        && envelope.header.stream == 0
        && body::read_error_code(envelope.body) == Ok(body::PROTOCOL_ERROR)
}

/// Decodes framed input and refuses each envelope with a fault of its own
/// ([`framed_envelope_fault`]).
fn receive_framed(
    decoder: &mut Decoder,
    role: Role,
    version: u8,
    input: &[u8],
    on_event: &mut dyn FnMut(ConnectionEvent<'_>) -> Result<(), FramingError>,
) -> Result<(), FramingError> {
    let mut frame_offset = 0;
    decoder.decode(input, |event| match event {
        Event::Frame(frame) => {
            frame_offset = frame.offset;
            on_event(ConnectionEvent::Frame(frame))
        }
        Event::Envelope(envelope) => match framed_envelope_fault(role, version, &envelope.header) {
            Some(kind) => {
                let error = FramingError::new(kind, frame_offset);
                on_event(ConnectionEvent::Rejected { envelope, error })
            }
            None => on_event(ConnectionEvent::Envelope(envelope)),
        },
    })
}

/// An envelope over `bytes`, which hold exactly one whole envelope (its header in the layout of
/// its version).
fn envelope_from(bytes: &[u8]) -> Envelope<'_> {
    let (header, len) = EnvelopeHeader::read(bytes).expect("a whole envelope");
    Envelope {
        header,
        body: &bytes[len..],
    }
}
