//! One proxied connection, served by one thread: the client's bytes to the upstream node and the
//! node's back, each read queued in the recorder before it is forwarded (so that the judge sees
//! both directions in the order they went) and judged once it has been written.
//!
//! Both sockets are non-blocking and one loop moves both directions: a thread per direction
//! costs a wake-up more per message on a small machine, and a single thread with blocking
//! writes could deadlock against a peer that writes while it does not read. Each direction holds
//! at most one read's bytes (a read of a direction waits until its last one is out, but for the
//! start of a frame header that it keeps until the rest of the header comes: [`segments`]), so
//! memory stays bounded whatever the peers do.

use super::headers::Headers;
use super::shared::Shared;
use crate::conformance::delivery::{self, Boundary, ClientSocket, Pause};
use crate::conformance::segments::{self, Guard, Next};
use crate::pcap::write::Peer;
use crate::wire_log::Dir;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long connecting to the upstream may take.
const CONNECT: Duration = Duration::from_secs(5);
/// The most one read takes from a socket.
const READ: usize = 64 << 10;

/// Serves one accepted client until both ends have closed, a peer failed, the connection went
/// idle, or the proxy stops.
pub fn serve(shared: Arc<Shared>, client: TcpStream) {
    let peer = client
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let upstream = match shared
        .upstream
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, CONNECT).ok())
    {
        Some(s) => s,
        None => {
            shared.upstream_failures.fetch_add(1, Ordering::SeqCst);
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
    };
    let id = shared.recorder.lock().unwrap().open(format!(
        "client {peer}, upstream {}",
        upstream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string())
    ));
    // Without the kernel's word on unsent bytes, writes go as the sockets take them.
    let mut guard = true;
    for s in [&client, &upstream] {
        let _ = s.set_nodelay(true);
        guard &= segments::writable_when_sent(s).is_ok();
        if s.set_nonblocking(true).is_err() {
            let mut r = shared.recorder.lock().unwrap();
            r.note(
                id,
                Dir::Note,
                "the sockets could not be made non-blocking".into(),
            );
            r.end(id, Peer::Client, true);
            return;
        }
    }
    let watch = (shared.chop > 0)
        .then(|| ClientSocket::of(&client).ok())
        .flatten();
    let mut connection = Connection {
        shared: &shared,
        id,
        sockets: [client, upstream],
        flows: [
            Flow::new(Peer::Client, 0, None, guard.then(Guard::default)),
            Flow::new(
                Peer::Server,
                shared.chop,
                watch,
                (guard && shared.chop == 0).then(Guard::default),
            ),
        ],
        headers: Headers::default(),
        buf: vec![0u8; READ],
        moved: Instant::now(),
    };
    connection.run();
    shared.spinner.release(id);
}

/// One direction: the bytes last read from `from`, as forwarded, on their way to the other end.
struct Flow {
    from: Peer,
    out: Vec<u8>,
    /// How much of `out` is written.
    sent: usize,
    /// The bytes of the last read are not all out yet: the recorder is told when they are.
    owed: bool,
    /// A truncation fault: `from`'s side ends in order once `out` is out.
    close_after: bool,
    /// Nothing more is read from `from` (it closed, or the connection is cut on this side).
    done: bool,
    /// Delivery in pieces of this many bytes (0: as read), each read by the client before the
    /// next is written, as the conformance server makes them ([`delivery`]).
    chop: usize,
    watch: Option<ClientSocket>,
    /// Writes keep their segments from ending inside a frame header ([`segments`]), unless
    /// none (chopped delivery, or the kernel does not tell).
    guard: Option<Guard>,
    /// What the last write waited for, when it wrote nothing.
    held: Held,
    /// Bytes written to the other end in all.
    written: u64,
    /// A piece is written and the client has not read it all yet: since when, and the wait.
    confirming: Option<(Instant, Pause)>,
}

/// Why a flow holds bytes it could write.
enum Held {
    No,
    /// They begin with a frame header not all read yet: more bytes from `from`.
    ForBytes,
    /// Bytes written earlier wait unsent: the socket writable again (poll(2)).
    ForSending,
    /// The peer's receive window cannot hold the header they begin with: the wait, repeated.
    ForWindow(Pause),
}

impl Flow {
    fn new(from: Peer, chop: usize, watch: Option<ClientSocket>, guard: Option<Guard>) -> Flow {
        Flow {
            from,
            out: Vec::new(),
            sent: 0,
            owed: false,
            close_after: false,
            done: false,
            chop,
            watch,
            guard,
            held: Held::No,
            written: 0,
            confirming: None,
        }
    }

    fn pending(&self) -> bool {
        self.sent < self.out.len()
    }

    /// Whether the flow waits for bytes it reads (nothing owed, or a header to complete).
    fn reads(&self) -> bool {
        !self.done && (!self.owed || matches!(self.held, Held::ForBytes))
    }

    /// Once the client has read the last piece, writes what the socket takes of the next;
    /// whether any byte went.
    fn write(
        &mut self,
        to: &mut TcpStream,
        headers: &VecDeque<Range<u64>>,
    ) -> std::io::Result<bool> {
        if let Some((since, pause)) = &mut self.confirming {
            let watch = self.watch.as_ref().expect("confirming only while watching");
            match watch.read_by(self.written, *since, delivery::BOUND) {
                None => {
                    pause.pause();
                    return Ok(false);
                }
                Some(Boundary::Confirmed) => self.confirming = None,
                // Unobservable, closed or late: later pieces are not held back.
                Some(_) => {
                    self.confirming = None;
                    self.watch = None;
                }
            }
        }
        if !self.pending() {
            return Ok(false);
        }
        let end = match self.chop {
            0 => self.sent + self.guarded(to, headers, self.out.len() - self.sent),
            chop => ((self.sent / chop + 1) * chop).min(self.out.len()),
        };
        if end == self.sent {
            return Ok(false);
        }
        let n = write_some(to, &self.out[self.sent..end])?;
        self.sent += n;
        self.written += n as u64;
        if self.sent == end && self.chop > 0 && self.watch.is_some() {
            self.confirming = Some((Instant::now(), Pause::default()));
        }
        Ok(n > 0)
    }

    /// How many of the next `len` bytes one write may take ([`segments`]); when none, why not.
    fn guarded(&mut self, to: &TcpStream, headers: &VecDeque<Range<u64>>, len: usize) -> usize {
        let before = std::mem::replace(&mut self.held, Held::No);
        let Some(guard) = self
            .guard
            .as_mut()
            .filter(|_| !self.done && !self.close_after)
        else {
            // Unguarded, or the last bytes: nothing completes a header they end inside.
            return len;
        };
        self.held = match guard.next(to, self.written, len, headers) {
            Next::Write(n) => return n,
            Next::Unknown => {
                self.guard = None;
                return len;
            }
            Next::Unsent => Held::ForSending,
            Next::Incomplete => Held::ForBytes,
            Next::Window => match before {
                Held::ForWindow(mut pause) => {
                    pause.pause();
                    Held::ForWindow(pause)
                }
                _ => Held::ForWindow(Pause::sleeping()),
            },
        };
        0
    }
}

/// What a non-blocking socket takes of `bytes` now (0 when it is full or the call was
/// interrupted).
fn write_some(to: &mut TcpStream, bytes: &[u8]) -> std::io::Result<usize> {
    match to.write(bytes) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => Ok(0),
        other => other,
    }
}

/// A connection cut before both sides closed: by a peer's failure, or by the proxy (with a
/// note for the wire log).
struct Cut {
    by: Peer,
    why: Option<String>,
}

struct Connection<'a> {
    shared: &'a Shared,
    id: usize,
    /// The client's socket, then the node's (indexed by [`Peer::index`]).
    sockets: [TcpStream; 2],
    /// What the client sends, then what the node sends.
    flows: [Flow; 2],
    /// Where the frame headers lie in what each side's flow forwards.
    headers: Headers,
    buf: Vec<u8>,
    /// When bytes last moved either way.
    moved: Instant,
}

impl Connection<'_> {
    fn run(&mut self) {
        if let Err(Cut { by, why }) = self.relay() {
            let mut r = self.shared.recorder.lock().unwrap();
            if let Some(why) = why {
                r.note(self.id, Dir::Note, why);
            }
            r.end(self.id, by, true);
            drop(r);
            for s in &self.sockets {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }

    /// Moves bytes until both sides have closed.
    fn relay(&mut self) -> Result<(), Cut> {
        loop {
            if self.shared.stopping() {
                let why = "the proxy stops: connection closed".to_string();
                return Err(Cut {
                    by: Peer::Client,
                    why: Some(why),
                });
            }
            let mut moved = false;
            for i in 0..2 {
                moved |= self.step(i)?;
            }
            if self.flows.iter().all(|f| f.done && !f.owed) {
                return Ok(());
            }
            if moved {
                self.moved = Instant::now();
                continue;
            }
            let idle = self.shared.limits.idle;
            if self.moved.elapsed() >= idle {
                let why = format!("nothing sent for {idle:?}: closed");
                return Err(Cut {
                    by: Peer::Client,
                    why: Some(why),
                });
            }
            self.wait();
        }
    }

    /// One turn of flow `i`: write what it holds, read more once all is out (and write that at
    /// once: the common case costs no wait). Whether a byte moved.
    fn step(&mut self, i: usize) -> Result<bool, Cut> {
        let flushed = self.flush(i)?;
        if !self.flows[i].reads() || !self.read(i)? {
            return Ok(flushed);
        }
        self.flush(i)?;
        Ok(true)
    }

    /// Writes what flow `i` holds; once all is out, the recorder judges it. Whether a byte went.
    fn flush(&mut self, i: usize) -> Result<bool, Cut> {
        let from = self.flows[i].from;
        let (source, to) = (from.index(), from.other().index());
        let flow = &mut self.flows[i];
        if !flow.owed {
            return Ok(false);
        }
        let headers = self.headers.after(from, flow.written);
        let moved = flow
            .write(&mut self.sockets[to], headers)
            .map_err(|_| Cut {
                by: from.other(),
                why: None,
            })?;
        if flow.pending() || flow.confirming.is_some() {
            return Ok(moved);
        }
        flow.out.clear();
        flow.sent = 0;
        flow.owed = false;
        flow.held = Held::No;
        if flow.done {
            // The side that closed while bytes of it were held back: ends once they are out.
            let _ = self.sockets[to].shutdown(Shutdown::Write);
        }
        let mut r = self.shared.recorder.lock().unwrap();
        r.delivered(self.id, from);
        if flow.close_after {
            // A truncation: the node's side ends in order there (FIN), as the conformance
            // server ends it, so that the judge sees the cut (RECV-9).
            r.note(
                self.id,
                Dir::Note,
                "the fault closes the node's side".into(),
            );
            r.end(self.id, from, false);
            drop(r);
            flow.done = true;
            let _ = self.sockets[to].shutdown(Shutdown::Write);
            let _ = self.sockets[source].shutdown(Shutdown::Both);
        }
        Ok(moved)
    }

    /// Reads once from flow `i`'s source into the flow, as the recorder forwards it. Whether
    /// bytes came.
    fn read(&mut self, i: usize) -> Result<bool, Cut> {
        let from = self.flows[i].from;
        let (source, to) = (from.index(), from.other().index());
        match self.sockets[source].read(&mut self.buf) {
            Ok(0) => {
                let mut r = self.shared.recorder.lock().unwrap();
                if from == Peer::Client {
                    r.client_closed(self.id);
                }
                r.end(self.id, from, false);
                drop(r);
                let flow = &mut self.flows[i];
                flow.done = true;
                if !flow.owed {
                    let _ = self.sockets[to].shutdown(Shutdown::Write);
                }
                Ok(false)
            }
            Ok(n) => {
                let read = &self.buf[..n];
                let out = self
                    .shared
                    .recorder
                    .lock()
                    .unwrap()
                    .forward(self.id, from, read);
                let bytes = out.as_ref().map_or(read, |f| &f.bytes[..]);
                self.headers.feed(from, bytes);
                let flow = &mut self.flows[i];
                flow.close_after = out.as_ref().is_some_and(|f| f.close);
                flow.owed = true;
                // Straight out when nothing is held and no piece waits on the client's reads:
                // only what the write did not take is kept.
                let sent = match (flow.chop, flow.out.is_empty()) {
                    (0, true) => {
                        let headers = self.headers.after(from, flow.written);
                        match flow.guarded(&self.sockets[to], headers, bytes.len()) {
                            0 => 0,
                            n => {
                                write_some(&mut self.sockets[to], &bytes[..n]).map_err(|_| Cut {
                                    by: from.other(),
                                    why: None,
                                })?
                            }
                        }
                    }
                    _ => 0,
                };
                flow.written += sent as u64;
                flow.out.extend_from_slice(&bytes[sent..]);
                Ok(true)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                Ok(false)
            }
            Err(_) => {
                if from == Peer::Client {
                    self.shared.recorder.lock().unwrap().client_closed(self.id);
                }
                Err(Cut {
                    by: from,
                    why: None,
                })
            }
        }
    }

    /// Waits for the sockets to have something: spinning a while after bytes moved when the
    /// proxy is asked to ([`super::Config::spin`]), then in poll(2).
    fn wait(&mut self) {
        let spin = self.shared.spin;
        if !spin.is_zero() && self.moved.elapsed() < spin && self.shared.spinner.take(self.id) {
            std::hint::spin_loop();
            return;
        }
        self.shared.spinner.release(self.id);
        if self
            .flows
            .iter()
            .any(|f| f.confirming.is_some() || matches!(f.held, Held::ForWindow(_)))
        {
            // The flow's pause already waited.
            return;
        }
        let mut fds = self.sockets.each_ref().map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: 0,
            revents: 0,
        });
        for f in &self.flows {
            if f.reads() {
                fds[f.from.index()].events |= libc::POLLIN;
            } else if f.pending() {
                fds[f.from.other().index()].events |= libc::POLLOUT;
            }
        }
        super::wait_ready(&mut fds);
    }
}
