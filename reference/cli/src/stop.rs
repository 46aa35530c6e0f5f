//! How a long-running command (`conformance server`, `proxy`) is ended: by SIGTERM or SIGINT,
//! or at a deadline, after which it still writes what it saw.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};

/// Set when SIGTERM or SIGINT arrives. Made before the command announces where it listens, so
/// a signal sent as soon as a client has been served never meets the default action (which
/// would end the process without its report).
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn on_signals() -> std::io::Result<Stop> {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [SIGTERM, SIGINT] {
            signal_hook::flag::register(signal, flag.clone())?;
        }
        Ok(Stop(flag))
    }

    /// Returns when a signal has arrived or `deadline` has passed.
    pub fn wait(&self, deadline: Option<Instant>) {
        while !self.0.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
