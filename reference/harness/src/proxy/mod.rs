//! `cqlframe proxy`: conformance with no adapter. The proxy stands between a driver and a
//! node, forwards every connection to the upstream node as it is, and judges both directions
//! as they flow, with the judge `cqlframe check` uses on a capture of the same bytes (each
//! write becomes a TCP segment of a capture the checker reads: [`recorder`]). Findings come as
//! they happen, a summary per connection as it closes; at the end the reports of a
//! conformance run (report.json, junit.xml, index.html with the wire logs: [`report`]).
//!
//! Where a driver's reads end is kept out of a clean run's verdict: no segment the proxy writes
//! ends inside a frame header ([`crate::conformance::segments`]). It can also disturb the
//! traffic on purpose: deliver the node's bytes to the client in pieces of N bytes (the read
//! boundaries a chopping conformance case makes), so that a driver meets real traffic the way
//! the suite's cases make it, or break the node's frames with a fault of the catalogue
//! ([`tamper`]).

mod forward;
mod headers;
pub mod limits;
mod log;
mod negotiation;
pub mod reaction;
pub mod recorder;
pub mod report;
mod shared;
pub mod tamper;
#[cfg(test)]
mod tests;

pub use limits::Limits;
pub use reaction::Reaction;
pub use recorder::{Closed, Live, Sink};
pub use tamper::FaultSpec;

use crate::check::Totals;
use crate::verdict::Level;
use recorder::Recorder;
use shared::Shared;
use std::io::{ErrorKind, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the proxy runs.
pub struct Config {
    pub listen: SocketAddr,
    /// `HOST:PORT` of the node.
    pub upstream: String,
    pub limits: Limits,
    /// Deliver the node's bytes to the client in pieces of this many bytes (0: as read).
    pub chop: usize,
    /// A frame fault of the catalogue on real frames, and whether the driver's reaction to it
    /// is checked (`--expect-fault`).
    pub fault: Option<(FaultSpec, bool)>,
    /// Where the capture of every connection goes, if anywhere.
    pub capture: Option<Box<dyn Write + Send>>,
    /// After bytes moved, a connection's thread looks at its sockets without sleeping for this
    /// long (one connection at a time) before it sleeps in poll(2). A few microseconds keep its
    /// CPU from going idle between the steps of one exchange (the CLI's default: where idle CPUs
    /// halt at once the scheduler then moves the thread and its peers less); some hundreds
    /// forward an answer soon after its request without a wake-up, for a CPU kept busy. Zero:
    /// it sleeps at once.
    pub spin: Duration,
}

/// A running proxy.
pub struct Proxy {
    /// The address it listens on (the port chosen when 0 was asked).
    pub local: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    started: Instant,
}

/// What the proxy saw, from start to stop.
pub struct Outcome {
    pub upstream: String,
    pub listen: SocketAddr,
    pub limits: Limits,
    pub chop: usize,
    pub fault: Option<(FaultSpec, bool)>,
    /// Connections in the order they closed (the first [`recorder::KEPT_CONNECTIONS`]).
    pub connections: Vec<Closed>,
    pub connections_not_kept: usize,
    /// The proxy's checks of the drivers' reactions that failed.
    pub reactions: Vec<Reaction>,
    /// Connections on which the frame fault was applied.
    pub faults_applied: usize,
    pub refused_connections: usize,
    pub upstream_failures: usize,
    pub totals: Totals,
    pub capture_error: Option<String>,
    pub seconds: f64,
}

impl Outcome {
    /// Whether a MUST was broken on any connection, in its bytes or by the driver's reaction.
    pub fn broke_must(&self) -> bool {
        self.totals.violations > 0 || self.reactions.iter().any(|r| r.level == Level::Must)
    }
}

impl Proxy {
    /// Listens on `config.listen`; each event (a rule first broken, a connection closed) goes
    /// to `sink` as it happens.
    pub fn start(config: Config, sink: Sink) -> std::io::Result<Proxy> {
        let upstream: Vec<SocketAddr> = config.upstream.to_socket_addrs()?.collect();
        if upstream.is_empty() {
            return Err(std::io::Error::new(
                ErrorKind::NotFound,
                format!("{}: no address", config.upstream),
            ));
        }
        let listener = TcpListener::bind(config.listen)?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let shared = Arc::new(Shared {
            recorder: Mutex::new(Recorder::new(
                config.limits.max_body,
                config.chop,
                config.fault,
                config.capture,
                sink,
            )),
            limits: config.limits,
            upstream,
            upstream_name: config.upstream,
            listen: local,
            chop: config.chop,
            spin: config.spin,
            spinner: Default::default(),
            stop: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            upstream_failures: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let acceptor = std::thread::spawn(move || {
            let mut handles: Vec<JoinHandle<()>> = Vec::new();
            while !s.stopping() {
                match listener.accept() {
                    Ok((stream, _)) if s.open.load(Ordering::SeqCst) >= s.limits.connections => {
                        s.refused.fetch_add(1, Ordering::SeqCst);
                        let _ = stream.shutdown(Shutdown::Both);
                    }
                    Ok((stream, _)) => {
                        handles.retain(|h| !h.is_finished());
                        s.open.fetch_add(1, Ordering::SeqCst);
                        let s2 = s.clone();
                        handles.push(std::thread::spawn(move || {
                            forward::serve(s2.clone(), stream);
                            s2.open.fetch_sub(1, Ordering::SeqCst);
                        }));
                    }
                    // Nothing to accept: wait for a connection.
                    Err(_) => wait_ready(&mut [libc::pollfd {
                        fd: listener.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    }]),
                }
            }
            handles
        });
        Ok(Proxy {
            local,
            shared,
            acceptor: Some(acceptor),
            started: Instant::now(),
        })
    }

    /// Connections being served now.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Stops accepting, cuts the connections still open, and returns what the proxy saw.
    pub fn stop(mut self) -> Outcome {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(acceptor) = self.acceptor.take() {
            if let Ok(handles) = acceptor.join() {
                for h in handles {
                    let _ = h.join();
                }
            }
        }
        let s = &self.shared;
        let mut r = s.recorder.lock().unwrap();
        r.finish();
        Outcome {
            upstream: s.upstream_name.clone(),
            listen: s.listen,
            limits: s.limits,
            chop: s.chop,
            fault: r.fault,
            connections: std::mem::take(&mut r.closed),
            connections_not_kept: r.closed_not_kept,
            reactions: std::mem::take(&mut r.reactions),
            faults_applied: r.faults_applied,
            refused_connections: s.refused.load(Ordering::SeqCst),
            upstream_failures: s.upstream_failures.load(Ordering::SeqCst),
            totals: std::mem::take(r.totals_mut()),
            capture_error: r.capture_error().map(str::to_string),
            seconds: self.started.elapsed().as_secs_f64(),
        }
    }
}

/// How long a thread of the proxy sleeps at most when nothing happens: how often it looks at
/// the stop flag (and a connection at its idle limit).
const TICK: Duration = Duration::from_millis(100);

/// Sleeps until one of `fds` is ready for what it asks, or [`TICK`] has passed.
fn wait_ready(fds: &mut [libc::pollfd]) {
    // SAFETY: `fds` is a valid array of pollfd for the length given.
    unsafe {
        libc::poll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            TICK.as_millis() as libc::c_int,
        )
    };
}
