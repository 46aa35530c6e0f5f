//! What the connections of one server share: the script, the observations they record into,
//! the prepared statements, and the counts the [`Limits`] are held to.

use super::recording::{ConnRecord, Observations};
use crate::conformance::cases::ServerScript;
use crate::conformance::limits::Limits;
use crate::wire_log::{Dir, Line};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Wire-log lines kept per connection.
const LOG_LIMIT: usize = 400;

pub(super) struct Shared {
    pub(super) start: Instant,
    pub(super) script: ServerScript,
    pub(super) port: u16,
    pub(super) obs: Mutex<Observations>,
    pub(super) fault_used: AtomicBool,
    pub(super) prepared: Mutex<HashMap<Vec<u8>, String>>,
    pub(super) stop: AtomicBool,
    pub(super) limits: Limits,
    /// Connections open now.
    pub(super) open: AtomicUsize,
    /// Bytes read and written so far, all kept for the capture.
    pub(super) held: AtomicUsize,
    /// A SUPPORTED has been sent on some connection: the driver has heard what the node lists
    /// (NEG-4 counts a SUPPORTED received on any connection to the node).
    pub(super) supported_sent: AtomicBool,
}

impl Shared {
    pub(super) fn new(script: ServerScript, port: u16, limits: Limits) -> Shared {
        Shared {
            start: Instant::now(),
            script,
            port,
            obs: Mutex::new(Observations::default()),
            fault_used: AtomicBool::new(false),
            prepared: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            limits,
            open: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            supported_sent: AtomicBool::new(false),
        }
    }

    /// Counts `n` more bytes held; false once the total is past the cap.
    pub(super) fn hold(&self, n: usize) -> bool {
        self.held.fetch_add(n, Ordering::SeqCst) + n <= self.limits.held_bytes
    }

    /// Whether a new connection is taken on, or closed on accept.
    pub(super) fn room(&self) -> bool {
        self.open.load(Ordering::SeqCst) < self.limits.connections
            && self.held.load(Ordering::SeqCst) <= self.limits.held_bytes
    }

    /// A new connection's record; its id.
    pub(super) fn open_conn(&self, client_port: u16) -> usize {
        let mut obs = self.obs.lock().unwrap();
        let id = obs.connections.len();
        obs.connections.push(ConnRecord {
            id,
            opened_ms: self.ms(),
            client_port,
            ..Default::default()
        });
        id
    }

    pub(super) fn ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    pub(super) fn with_conn<R>(&self, id: usize, f: impl FnOnce(&mut ConnRecord) -> R) -> R {
        let mut obs = self.obs.lock().unwrap();
        f(&mut obs.connections[id])
    }

    pub(super) fn log(&self, id: usize, dir: Dir, text: String) {
        let t_ms = self.ms();
        self.with_conn(id, |c| {
            if c.log.len() < LOG_LIMIT {
                c.log.push(Line { t_ms, dir, text });
            } else {
                c.log_dropped += 1;
            }
        });
    }
}
