//! [`Connection`] over a blocking [`TcpStream`], shared by both examples. `Connection` does no
//! I/O: bytes read from the socket go in, events come out; envelopes to send go in, bytes to
//! write come out. That is all the glue a blocking driver needs.

use cqlframe::{Connection, ConnectionEvent, EnvelopeHeader, FramingError};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;

/// An envelope received, owned: the events borrow the connection's buffers, which the next
/// read reuses.
pub struct Received {
    pub header: EnvelopeHeader,
    pub body: Vec<u8>,
}

/// Why a connection ended: the socket, or bytes that break a framing rule (the error names
/// the rule and the stream offset).
#[derive(Debug)]
pub enum Error {
    Io(io::Error),
    Framing(FramingError),
}

/// One end of a CQL connection on a socket.
pub struct Peer {
    pub stream: TcpStream,
    pub conn: Connection,
    /// Envelopes received but not yet asked for: one read may complete several.
    inbox: VecDeque<Received>,
}

impl Peer {
    pub fn new(stream: TcpStream, conn: Connection) -> Peer {
        Peer {
            stream,
            conn,
            inbox: VecDeque::new(),
        }
    }

    /// Sends one whole envelope: unframed during the handshake, framed after the switch; the
    /// connection knows which.
    pub fn send(&mut self, envelope: &[u8]) -> Result<(), Error> {
        let mut wire = Vec::new();
        self.conn.send(&[envelope], &mut wire)?;
        Ok(self.stream.write_all(&wire)?)
    }

    /// The peer's next envelope, unframed or framed alike, reading as much as it takes.
    pub fn receive(&mut self) -> Result<Received, Error> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            if let Some(envelope) = self.inbox.pop_front() {
                return Ok(envelope);
            }
            let n = self.stream.read(&mut buf)?;
            if n == 0 {
                // The stream ended: inside a frame or envelope, that breaks RECV-9.
                self.conn.finish()?;
                return Err(Error::Io(io::ErrorKind::UnexpectedEof.into()));
            }
            let inbox = &mut self.inbox;
            self.conn.receive(&buf[..n], |event| {
                match event {
                    ConnectionEvent::Unframed { envelope, .. }
                    | ConnectionEvent::Refused { envelope, .. }
                    | ConnectionEvent::Envelope(envelope) => inbox.push_back(Received {
                        header: envelope.header,
                        body: envelope.body.to_vec(),
                    }),
                    // An envelope refused on its own (wrong version byte, ENV-2): a fuller
                    // server answers it with `Connection::reject_response` and goes on.
                    ConnectionEvent::Rejected { error, .. } => return Err(error),
                    // Frames and the switch matter to tools that show the wire, not here.
                    _ => {}
                }
                Ok(())
            })?;
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<FramingError> for Error {
    fn from(e: FramingError) -> Self {
        Error::Framing(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "socket: {e}"),
            Error::Framing(e) => write!(f, "framing: {e}"),
        }
    }
}

impl std::error::Error for Error {}
