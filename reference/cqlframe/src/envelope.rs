//! CQL envelopes: the 9-byte big-endian header and body that frames carry (ENV-1), and the 8-byte
//! header of the retired versions, which a client may still send unframed to probe a server.

/// Length of an envelope header.
pub const ENVELOPE_HEADER_LEN: usize = 9;
/// Retired protocol versions: their envelope header has 8 bytes, with a one-byte stream. A
/// client may send one as a version probe; a server refuses it in the same layout and version.
pub const RETIRED_VERSIONS: std::ops::RangeInclusive<u8> = 1..=2;
/// Length of the envelope header of the [`RETIRED_VERSIONS`].
pub const RETIRED_HEADER_LEN: usize = 8;
/// Envelope flag: body compressed at the envelope layer (never on a framed connection, ENV-4).
pub const FLAG_COMPRESSION: u8 = 0x01;
/// Envelope flag: the envelope uses a beta protocol version (ENV-5).
pub const FLAG_USE_BETA: u8 = 0x10;
/// Version-byte bit set on responses (ENV-2).
pub const RESPONSE_BIT: u8 = 0x80;
/// Protocol versions whose envelopes have this 9-byte header (v1 and v2 had an 8-byte one, with a
/// one-byte stream).
pub const HEADER_VERSIONS: std::ops::RangeInclusive<u8> = 3..=6;

/// The header of an envelope, fields as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct EnvelopeHeader {
    /// Protocol version with the response bit.
    pub version: u8,
    /// Envelope flags ([`FLAG_COMPRESSION`], [`FLAG_USE_BETA`], ...).
    pub flags: u8,
    /// Stream id: pairs a response with its request.
    pub stream: i16,
    /// Opcode byte, kept raw so that an unknown one can be shown ([`Opcode::from_u8`]).
    pub opcode: u8,
    /// Body length; negative values are invalid (ENV-3) but representable.
    pub length: i32,
}

impl EnvelopeHeader {
    /// The header's fields from its 9 wire bytes; every byte pattern is a header.
    pub fn parse(b: &[u8; ENVELOPE_HEADER_LEN]) -> Self {
        EnvelopeHeader {
            version: b[0],
            flags: b[1],
            stream: i16::from_be_bytes([b[2], b[3]]),
            opcode: b[4],
            length: i32::from_be_bytes([b[5], b[6], b[7], b[8]]),
        }
    }

    /// The header at the front of `bytes`, in the layout its version byte names, and its length;
    /// `None` until all of it is there.
    pub fn read(bytes: &[u8]) -> Option<(Self, usize)> {
        let len = header_len(*bytes.first()?);
        let b = bytes.get(..len)?;
        if len == ENVELOPE_HEADER_LEN {
            return Some((EnvelopeHeader::parse(b.try_into().ok()?), len));
        }
        let header = EnvelopeHeader {
            version: b[0],
            flags: b[1],
            stream: i16::from(b[2] as i8),
            opcode: b[3],
            length: i32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        };
        Some((header, len))
    }

    /// The 9-byte header, as frames carry it whatever the version byte says (ENV-1).
    pub fn to_bytes(&self) -> [u8; ENVELOPE_HEADER_LEN] {
        let mut b = [0u8; ENVELOPE_HEADER_LEN];
        b[0] = self.version;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.stream.to_be_bytes());
        b[4] = self.opcode;
        b[5..9].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// Appends the header as it goes unframed: in the layout of its version (8 bytes for a
    /// retired one, else 9).
    pub fn write_unframed(&self, out: &mut Vec<u8>) {
        if header_len(self.version) == ENVELOPE_HEADER_LEN {
            out.extend_from_slice(&self.to_bytes());
            return;
        }
        out.extend_from_slice(&[
            self.version,
            self.flags,
            self.stream as i8 as u8,
            self.opcode,
        ]);
        out.extend_from_slice(&self.length.to_be_bytes());
    }

    /// The protocol version without the direction bit.
    pub fn protocol_version(&self) -> u8 {
        self.version & !RESPONSE_BIT
    }

    /// Whether the version byte carries the response bit: server to client.
    pub fn is_response(&self) -> bool {
        self.version & RESPONSE_BIT != 0
    }
}

/// The length of an envelope header whose version byte is `version` (either direction): 8 for a
/// retired version, else 9.
pub fn header_len(version: u8) -> usize {
    if RETIRED_VERSIONS.contains(&(version & !RESPONSE_BIT)) {
        RETIRED_HEADER_LEN
    } else {
        ENVELOPE_HEADER_LEN
    }
}

/// Whether `bytes` begin the way an envelope header does: the version byte of protocol 3 to 6
/// (either direction), flags of the defined ones, a defined opcode and a body length of 0 to
/// 256 MiB (decided by its first byte). Six bytes decide it, as many as the shortest frame header
/// has: a frame header that fails its CRC24 yet reads this way is most likely an unframed
/// envelope sent after the switch (LIFE-7), whose sender broke LIFE-4 rather than CRC-1.
pub fn starts_like_envelope_header(bytes: &[u8]) -> bool {
    let [version, flags, _, _, opcode, length_high, ..] = *bytes else {
        return false;
    };
    HEADER_VERSIONS.contains(&(version & !RESPONSE_BIT))
        && flags < 0x20
        && Opcode::from_u8(opcode).is_some()
        && length_high < 0x10
}

/// An envelope: its header and a body borrowed from a frame or a reassembly buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The header, as received.
    pub header: EnvelopeHeader,
    /// The body: `header.length` bytes.
    pub body: &'a [u8],
}

impl Envelope<'_> {
    /// Header and body as one run of bytes, as frames carry them (ENV-1).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(ENVELOPE_HEADER_LEN + self.body.len());
        v.extend_from_slice(&self.header.to_bytes());
        v.extend_from_slice(self.body);
        v
    }

    /// Header and body as they go unframed: the header in the layout of its version.
    pub fn to_unframed_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(ENVELOPE_HEADER_LEN + self.body.len());
        self.header.write_unframed(&mut v);
        v.extend_from_slice(self.body);
        v
    }
}

/// Builds a whole envelope (header and body) with the length filled in, as it goes unframed:
/// the header of a retired version has its 8-byte layout, which frames never carry.
pub fn envelope_bytes(version: u8, flags: u8, stream: i16, opcode: Opcode, body: &[u8]) -> Vec<u8> {
    let header = EnvelopeHeader {
        version,
        flags,
        stream,
        opcode: opcode as u8,
        length: i32::try_from(body.len()).expect("envelope body over 2 GiB"),
    };
    Envelope { header, body }.to_unframed_bytes()
}

/// Why bytes are not a run of whole envelopes; `offset` is where the envelope at fault starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// The input ends within an envelope header.
    #[error("input ends inside the envelope header at byte {offset}")]
    TruncatedHeader {
        /// Where that envelope starts.
        offset: usize,
    },
    /// An envelope's length field is negative (ENV-3), so where it ends is unknown.
    #[error("the envelope at byte {offset} has a negative body length")]
    NegativeLength {
        /// Where that envelope starts.
        offset: usize,
    },
    /// The input ends within an envelope body.
    #[error("input ends inside the body of the envelope at byte {offset}")]
    TruncatedBody {
        /// Where that envelope starts.
        offset: usize,
    },
}

impl SplitError {
    /// Where the envelope at fault starts: the bytes before it are whole envelopes.
    pub fn offset(self) -> usize {
        match self {
            SplitError::TruncatedHeader { offset }
            | SplitError::NegativeLength { offset }
            | SplitError::TruncatedBody { offset } => offset,
        }
    }
}

/// Cuts concatenated whole envelopes apart by their length fields (each header in the layout of
/// its version).
pub fn split_envelopes(mut bytes: &[u8]) -> Result<Vec<&[u8]>, SplitError> {
    let mut out = Vec::new();
    let mut offset = 0;
    while !bytes.is_empty() {
        let (header, header_len) =
            EnvelopeHeader::read(bytes).ok_or(SplitError::TruncatedHeader { offset })?;
        let length =
            usize::try_from(header.length).map_err(|_| SplitError::NegativeLength { offset })?;
        let total = header_len + length;
        if bytes.len() < total {
            return Err(SplitError::TruncatedBody { offset });
        }
        offset += total;
        out.push(&bytes[..total]);
        bytes = &bytes[total..];
    }
    Ok(out)
}

/// CQL opcodes (native protocol v4/v5 section 4). Non-exhaustive: protocol versions add
/// opcodes, and [`EnvelopeHeader::opcode`] keeps the raw byte for those this list lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum Opcode {
    /// A response reporting an error, or a server's report of a framing error (ERR-1).
    Error = 0x00,
    /// The client's choice of version and options; its response switches to framing.
    Startup = 0x01,
    /// The server accepts the STARTUP.
    Ready = 0x02,
    /// The server accepts the STARTUP and asks for authentication.
    Authenticate = 0x03,
    /// The client asks what the server supports.
    Options = 0x05,
    /// The server's answer to OPTIONS: its compressions, versions and checksums.
    Supported = 0x06,
    /// A CQL query.
    Query = 0x07,
    /// The answer to a query, prepare, execute or batch.
    Result = 0x08,
    /// Prepares a statement.
    Prepare = 0x09,
    /// Executes a prepared statement.
    Execute = 0x0A,
    /// Subscribes to server events.
    Register = 0x0B,
    /// A server event, pushed on stream -1.
    Event = 0x0C,
    /// Several statements at once.
    Batch = 0x0D,
    /// The server's authentication challenge.
    AuthChallenge = 0x0E,
    /// The client's authentication token.
    AuthResponse = 0x0F,
    /// Authentication done.
    AuthSuccess = 0x10,
}

impl Opcode {
    const ALL: [Opcode; 16] = [
        Opcode::Error,
        Opcode::Startup,
        Opcode::Ready,
        Opcode::Authenticate,
        Opcode::Options,
        Opcode::Supported,
        Opcode::Query,
        Opcode::Result,
        Opcode::Prepare,
        Opcode::Execute,
        Opcode::Register,
        Opcode::Event,
        Opcode::Batch,
        Opcode::AuthChallenge,
        Opcode::AuthResponse,
        Opcode::AuthSuccess,
    ];

    /// The opcode an envelope's opcode byte names, if this list has it.
    pub fn from_u8(code: u8) -> Option<Opcode> {
        Self::ALL.into_iter().find(|op| *op as u8 == code)
    }

    /// The opcode's name as the protocol spec writes it.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Error => "ERROR",
            Opcode::Startup => "STARTUP",
            Opcode::Ready => "READY",
            Opcode::Authenticate => "AUTHENTICATE",
            Opcode::Options => "OPTIONS",
            Opcode::Supported => "SUPPORTED",
            Opcode::Query => "QUERY",
            Opcode::Result => "RESULT",
            Opcode::Prepare => "PREPARE",
            Opcode::Execute => "EXECUTE",
            Opcode::Register => "REGISTER",
            Opcode::Event => "EVENT",
            Opcode::Batch => "BATCH",
            Opcode::AuthChallenge => "AUTH_CHALLENGE",
            Opcode::AuthResponse => "AUTH_RESPONSE",
            Opcode::AuthSuccess => "AUTH_SUCCESS",
        }
    }
}

/// Name of an opcode byte, or `0xNN` for an unknown one.
pub fn opcode_name(code: u8) -> String {
    Opcode::from_u8(code).map_or_else(|| format!("{code:#04x}"), |op| op.name().to_string())
}
