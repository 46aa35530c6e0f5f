//! What the proxy's threads share: the recorder, the limits, the counters of the report.

use super::limits::Limits;
use super::recorder::Recorder;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub struct Shared {
    pub recorder: Mutex<Recorder>,
    pub limits: Limits,
    /// The upstream's addresses, tried in order.
    pub upstream: Vec<SocketAddr>,
    /// The upstream as given.
    pub upstream_name: String,
    /// Where the proxy listens.
    pub listen: SocketAddr,
    /// Delivery to the client in pieces of this many bytes (0: as read).
    pub chop: usize,
    /// How long a connection's thread polls its sockets without sleeping after bytes moved.
    pub spin: Duration,
    pub spinner: Spinner,
    pub stop: AtomicBool,
    /// Connections being served.
    pub open: AtomicUsize,
    /// Connections closed on accept, past the connection limit.
    pub refused: AtomicUsize,
    /// Connections closed because the upstream could not be reached.
    pub upstream_failures: AtomicUsize,
}

impl Shared {
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The one connection whose thread may spin at a time, so that spinning takes at most one CPU
/// however many connections are busy.
#[derive(Default)]
pub struct Spinner(AtomicUsize);

impl Spinner {
    /// Whether connection `id` holds the spinner now (taking it if nobody does).
    pub fn take(&self, id: usize) -> bool {
        let me = id + 1;
        match self
            .0
            .compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => true,
            Err(holder) => holder == me,
        }
    }

    /// Connection `id` stops spinning (if it was).
    pub fn release(&self, id: usize) {
        let _ = self
            .0
            .compare_exchange(id + 1, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
}
