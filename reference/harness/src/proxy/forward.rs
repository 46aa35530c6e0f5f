//! One proxied connection: the client's bytes to the upstream node and the node's back, each
//! write queued in the recorder before it is forwarded (so that the judge sees both directions
//! in the order they went) and judged once it has been.

use super::shared::Shared;
use crate::conformance::delivery::{self, Boundary, ClientSocket};
use crate::pcap::write::Peer;
use crate::wire_log::Dir;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a blocked read looks at the proxy's stop flag and the idle limit.
const TICK: Duration = Duration::from_millis(100);
/// How long connecting to the upstream may take.
const CONNECT: Duration = Duration::from_secs(5);

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
    for s in [&client, &upstream] {
        let _ = s.set_nodelay(true);
        let _ = s.set_read_timeout(Some(TICK));
        let _ = s.set_write_timeout(Some(shared.limits.idle));
    }
    let started = Instant::now();
    let activity = Arc::new(AtomicU64::new(0));
    let (Ok(client2), Ok(upstream2)) = (client.try_clone(), upstream.try_clone()) else {
        shared.recorder.lock().unwrap().end(id, Peer::Client, true);
        return;
    };
    let watch = (shared.chop > 0).then(|| ClientSocket::of(&client));
    let back = {
        let (shared, activity) = (shared.clone(), activity.clone());
        std::thread::spawn(move || {
            let mut to_client = Delivery {
                stream: client2,
                chop: shared.chop,
                watch,
                written: 0,
            };
            pump(
                &shared,
                id,
                Peer::Server,
                upstream2,
                &mut to_client,
                started,
                &activity,
            )
        })
    };
    let mut to_upstream = Delivery {
        stream: upstream,
        chop: 0,
        watch: None,
        written: 0,
    };
    pump(
        &shared,
        id,
        Peer::Client,
        client,
        &mut to_upstream,
        started,
        &activity,
    );
    let _ = back.join();
}

/// Where one direction's bytes go: the other end's socket, in pieces of `chop` bytes when set
/// (the client's reads then end where each piece ends, as the conformance server makes them:
/// [`delivery`]).
struct Delivery {
    stream: TcpStream,
    chop: usize,
    watch: Option<std::io::Result<ClientSocket>>,
    written: u64,
}

impl Delivery {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let chop = if self.chop == 0 {
            bytes.len().max(1)
        } else {
            self.chop
        };
        for piece in bytes.chunks(chop) {
            self.stream.write_all(piece)?;
            self.written += piece.len() as u64;
            if let Some(Ok(socket)) = &self.watch {
                match socket.wait_read(self.written, delivery::BOUND) {
                    Boundary::Confirmed => {}
                    // Unobservable or late: later pieces are not held back.
                    _ => self.watch = None,
                }
            }
        }
        Ok(())
    }
}

/// Forwards what `from` writes on `source` until it closes or the connection ends.
fn pump(
    shared: &Shared,
    id: usize,
    from: Peer,
    mut source: TcpStream,
    to: &mut Delivery,
    started: Instant,
    activity: &AtomicU64,
) {
    let mut buf = vec![0u8; 64 << 10];
    let cut = |source: &TcpStream, to: &TcpStream, why: Option<String>, by: Peer| {
        let mut r = shared.recorder.lock().unwrap();
        if let Some(why) = why {
            r.note(id, Dir::Note, why);
        }
        r.end(id, by, true);
        drop(r);
        let _ = source.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    };
    loop {
        if shared.stopping() {
            return cut(
                &source,
                &to.stream,
                Some("the proxy stops: connection closed".into()),
                from,
            );
        }
        match source.read(&mut buf) {
            Ok(0) => {
                let mut r = shared.recorder.lock().unwrap();
                if from == Peer::Client {
                    r.client_closed(id);
                }
                r.end(id, from, false);
                drop(r);
                let _ = to.stream.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                activity.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                let out = shared.recorder.lock().unwrap().forward(id, from, &buf[..n]);
                let (bytes, close) = match &out {
                    Some(f) => (&f.bytes[..], f.close),
                    None => (&buf[..n], false),
                };
                if to.write(bytes).is_err() {
                    return cut(&source, &to.stream, None, from.other());
                }
                shared.recorder.lock().unwrap().delivered(id, from);
                if close {
                    // A truncation: the node's side ends in order there (FIN), as the
                    // conformance server ends it, so that the judge sees the cut (RECV-9).
                    let mut r = shared.recorder.lock().unwrap();
                    r.note(id, Dir::Note, "the fault closes the node's side".into());
                    r.end(id, from, false);
                    drop(r);
                    let _ = to.stream.shutdown(Shutdown::Write);
                    let _ = source.shutdown(Shutdown::Both);
                    return;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                let quiet = started.elapsed().as_millis() as u64 - activity.load(Ordering::Relaxed);
                if Duration::from_millis(quiet) >= shared.limits.idle {
                    let idle = shared.limits.idle;
                    let why = format!("nothing sent for {idle:?}: closed");
                    return cut(&source, &to.stream, Some(why), from);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                if from == Peer::Client {
                    shared.recorder.lock().unwrap().client_closed(id);
                }
                return cut(&source, &to.stream, None, from);
            }
        }
    }
}
