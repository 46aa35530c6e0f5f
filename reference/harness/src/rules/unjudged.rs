//! What a judge cannot decide from the bytes it was given (JUDGE-11): said as such, never as a
//! finding, and never passed over, so that a connection without findings is not taken for one
//! shown clean.

use super::finding::Direction;
use std::fmt;

/// One thing the judge of a connection could not decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unjudged {
    /// A STARTUP that could switch the connection (v5 or later) was never answered: whether the
    /// server would take it, and where the switch would come, are unknown.
    StartupUnanswered { offset: u64 },
    /// A `FRAME_CHECKSUM` other than `crc32` that NEG-4 (asked in STARTUP) or NEG-6 (taken by
    /// the server's answer) cannot be judged against: nothing said what the node accepts.
    Checksum {
        rule: &'static str,
        offset: u64,
        value: String,
    },
}

impl Unjudged {
    /// The direction whose bytes it concerns: the client's STARTUP (an unanswered one, NEG-4),
    /// or the server's answer (NEG-6).
    pub fn direction(&self) -> Direction {
        match self {
            Unjudged::StartupUnanswered { .. } | Unjudged::Checksum { rule: "NEG-4", .. } => {
                Direction::ClientToServer
            }
            Unjudged::Checksum { .. } => Direction::ServerToClient,
        }
    }
}

impl fmt::Display for Unjudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unjudged::StartupUnanswered { offset } => write!(
                f,
                "the STARTUP at byte {offset} of client-to-server was never answered: how the handshake would end is unknown (JUDGE-11)"
            ),
            Unjudged::Checksum {
                rule: "NEG-4",
                offset,
                value,
            } => write!(
                f,
                "NEG-4 not judged: the STARTUP at byte {offset} of client-to-server asks FRAME_CHECKSUM={value}, and no SUPPORTED of the node came before it (JUDGE-11)"
            ),
            Unjudged::Checksum {
                rule,
                offset,
                value,
            } => write!(
                f,
                "{rule} not judged: the server took or refused FRAME_CHECKSUM={value} with the answer at byte {offset} of server-to-client, and what the node accepts is unknown (JUDGE-11)"
            ),
        }
    }
}
