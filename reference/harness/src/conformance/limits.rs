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

#[cfg(test)]
mod tests {
    use super::Limits;
    use crate::conformance::cases::ServerScript;
    use crate::conformance::server::Server;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    fn script() -> ServerScript {
        toml::from_str("").expect("the default script")
    }

    /// Reads until the server closes; how long that took.
    fn until_closed(mut s: TcpStream) -> Duration {
        let started = Instant::now();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 4096];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        started.elapsed()
    }

    #[test]
    fn a_connection_past_the_limit_is_closed_on_accept() {
        let limits = Limits {
            connections: 2,
            ..Limits::DEFAULT
        };
        let server = Server::start_with(script(), 0, limits).expect("server");
        let open: Vec<TcpStream> = (0..2)
            .map(|_| TcpStream::connect(("127.0.0.1", server.port)).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        let third = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        assert!(until_closed(third) < Duration::from_secs(2));
        drop(open);
        let obs = server.stop(Duration::from_millis(100));
        assert_eq!(obs.refused_connections, 1);
        assert_eq!(obs.connections.len(), 2);
    }

    #[test]
    fn bytes_past_the_cap_close_the_connection_that_sends_them() {
        let limits = Limits {
            held_bytes: 1 << 20,
            ..Limits::DEFAULT
        };
        let server = Server::start_with(script(), 0, limits).expect("server");
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        // An unframed v4 QUERY announcing a 10 MB body (under the server's envelope limit),
        // then its body a chunk at a time: the server would hold it all.
        let mut header = vec![4, 0, 0, 1, 7];
        header.extend_from_slice(&10_000_000u32.to_be_bytes());
        s.write_all(&header).unwrap();
        let chunk = vec![0x5a; 64 << 10];
        // Far more than the kernel's socket buffers take in (tcp_rmem allows 32 MiB here).
        let mut sent = 0usize;
        while sent < 256 << 20 && s.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
        assert!(sent < 128 << 20, "the server kept reading past its cap");
        let obs = server.stop(Duration::from_millis(100));
        let c = &obs.connections[0];
        assert_eq!(c.closed_by.as_deref(), Some("server (memory cap)"), "{c:?}");
        let held: usize = c.turns.iter().map(|(_, b)| b.len()).sum();
        assert!(held <= 1 << 20, "{held} bytes held");
    }

    #[test]
    fn an_idle_connection_is_closed() {
        let limits = Limits {
            idle: Duration::from_millis(300),
            ..Limits::DEFAULT
        };
        let server = Server::start_with(script(), 0, limits).expect("server");
        let s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        let waited = until_closed(s);
        assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(3));
        let obs = server.stop(Duration::ZERO);
        assert_eq!(
            obs.connections[0].closed_by.as_deref(),
            Some("server (idle)")
        );
    }
}
