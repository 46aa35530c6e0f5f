//! What the proxy's threads share: the recorder, the limits, the counters of the report.

use super::limits::Limits;
use super::recorder::Recorder;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

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
