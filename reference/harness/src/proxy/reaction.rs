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
//!
//! A frame fault the driver must refuse (`--fault KIND --expect-fault`): the driver stops
//! decoding at that frame (RECV-11) and gives the connection up. One that writes on it again
//! after the node's next bytes reached it (what it wrote before may have been on its way before
//! it read the fault), or keeps it open [`REACT`] after, or until the proxy stops, is reported
//! under the fault's rule.

use crate::conformance::cases::FaultKind;
use crate::verdict::Level;
use serde::Serialize;
use std::time::Duration;

/// Silence after an answer, before a close, that counts as waiting for it: longer than a
/// driver takes between an answer and its next request or its shutdown, shorter than the
/// drivers' request timeouts (2 s and more).
pub const STALL: Duration = Duration::from_secs(1);

/// How long a driver may go on with a connection after a frame it must refuse, before it
/// counts as using it still: longer than it takes to read the frame and close.
pub const REACT: Duration = Duration::from_secs(10);

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

    /// `--expect-fault`: a connection still used after a `fault` in the node's bytes that the
    /// driver must refuse (`closed_after`: when it closed it, if it did).
    pub fn kept(
        connection: usize,
        fault: FaultKind,
        used_after: Option<Duration>,
        closed_after: Option<Duration>,
    ) -> Reaction {
        let closed = match closed_after {
            Some(d) => format!("closed it {:.1} s after", d.as_secs_f64()),
            None => "had not closed it when the proxy stopped".to_string(),
        };
        let what = match used_after {
            Some(d) => format!(
                "wrote on the connection again {:.3} s after the fault {fault} in the node's \
                 bytes, once the node's next bytes had reached it, and {closed}",
                d.as_secs_f64()
            ),
            None => format!(
                "did not give the connection up within {} s of the fault {fault} in the node's \
                 bytes: it {closed}",
                REACT.as_secs()
            ),
        };
        Reaction {
            connection,
            rule: fault.rule(),
            level: Level::Must,
            message: format!(
                "the driver {what}; a receiver stops decoding at such a frame and gives the \
                 connection up (RECV-11)"
            ),
        }
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
