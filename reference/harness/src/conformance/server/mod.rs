//! The conformance server: a CQL server on 127.0.0.1 that speaks through a server-role
//! [`Connection`](cqlframe::connection::Connection), answers the primed queries of
//! [`crate::cql`], and frames its responses as the case's script says: split sizes, TCP
//! chopping, injected faults. Every byte of each connection, both ways, also goes to a
//! [`Judge`](crate::rules::Judge): what the driver sent is judged there, and the server records
//! the judge's tally for the harness.

mod answers;
mod connection;
mod recording;
mod responses;
mod shared;
#[cfg(test)]
mod tests;

pub use recording::{ConnRecord, FaultRecord, Observations, ReadBoundaries};

use super::cases::ServerScript;
use super::limits::Limits;
use crate::conformance::delivery::ClientSocket;
use crate::wire_log::Dir;
use connection::Conn;
use shared::Shared;
use std::io::{ErrorKind as IoKind, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
                    shared.log(id, Dir::Note, note);
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
                        Dir::Note,
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
    shared.log(id, Dir::Note, format!("connection closed by {closed_by}"));
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
