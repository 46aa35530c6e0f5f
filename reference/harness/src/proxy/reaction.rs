//! What the driver did about a disturbance the proxy made, where the bytes cannot show it: the
//! proxy's own checks, beside the judge's findings (which are about the bytes alone).
//!
//! Delivery in pieces (`--fault chop=N`): a driver that takes every split (RECV-4) goes on with
//! its work once it has read an answer. One that did not decode it waits for it until its own
//! timeout, then gives the connection up. So when the client closes a connection after having
//! read the node's last bytes on it, sent nothing since for at least [`STALL`], and no other
//! connection of the proxy carried a byte meanwhile (a pool's idle connection closed at shutdown
//! is not waiting for anything), the proxy reports that the driver did not take the answer
//! delivered in pieces. The inference is the proxy's, and the message says what was seen.

use crate::verdict::Level;
use serde::Serialize;
use std::time::Duration;

/// Silence after an answer, before a close, that counts as waiting for it: longer than a
/// driver takes between an answer and its next request or its shutdown, shorter than the
/// drivers' request timeouts (2 s and more).
pub const STALL: Duration = Duration::from_secs(1);

/// One of the proxy's checks of the driver's reaction that failed.
#[derive(Clone, Debug, Serialize)]
pub struct Reaction {
    pub connection: usize,
    pub rule: &'static str,
    pub level: Level,
    pub message: String,
}

impl Reaction {
    /// The text line the proxy prints, in the style of a finding's.
    pub fn line(&self) -> String {
        format!(
            "connection {}: {} ({}) driver: {}",
            self.connection, self.rule, self.level, self.message
        )
    }

    /// A connection given up after an answer delivered in pieces of `chop` bytes.
    pub fn stalled(connection: usize, chop: usize, silence: Duration) -> Reaction {
        Reaction {
            connection,
            rule: "RECV-4",
            level: Level::Must,
            message: format!(
                "the client read the node's last bytes on this connection (delivered in pieces of \
                 {chop} bytes, every one a valid frame or envelope as far as the judge saw), sent \
                 nothing for {:.1} s while no other connection carried a byte, then closed it: it \
                 did not take the answer delivered in pieces",
                silence.as_secs_f64()
            ),
        }
    }
}
