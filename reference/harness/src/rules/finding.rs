//! What the judge says: a [`Finding`] per rule broken, and the [`Tally`] of one connection (one
//! entry per rule with its count and first offset), which is what the reports print.

use crate::verdict::{Check, Level, Status};
use cqlframe::{FramingError, Role};
use serde::Serialize;

/// Which way the judged bytes went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Direction {
    #[serde(rename = "client-to-server")]
    ClientToServer,
    #[serde(rename = "server-to-client")]
    ServerToClient,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::ClientToServer, Direction::ServerToClient];

    /// The role that receives the bytes of this direction.
    pub fn receiver(self) -> Role {
        match self {
            Direction::ClientToServer => Role::Server,
            Direction::ServerToClient => Role::Client,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client-to-server",
            Direction::ServerToClient => "server-to-client",
        }
    }

    /// The other direction of the connection.
    pub fn other(self) -> Direction {
        match self {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
        }
    }

    /// Who wrote the bytes.
    pub fn sender(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client",
            Direction::ServerToClient => "server",
        }
    }

    /// 0 for client-to-server, 1 for server-to-client: an index into per-direction arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A rule broken by the bytes of one direction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule, as the receiver of these bytes detects it.
    pub rule: &'static str,
    /// The sender's rule behind it, where it differs (`RECV-2` is detected; `CRC-2` was broken).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_rule: Option<&'static str>,
    pub level: Level,
    pub direction: Direction,
    /// The error kind (`payload_checksum_mismatch`, ...) or `sender_rule` for a check of a
    /// sender rule that no receiver refuses.
    pub kind: &'static str,
    pub message: String,
    /// Stream offset: the first byte of the frame (or unframed envelope) at fault.
    pub offset: u64,
    /// The receiver stops decoding this direction here (RECV-11).
    pub fatal: bool,
}

impl Finding {
    /// A rule the sender broke that the receiver does not refuse (FMT-6, SEND-7, ENV-4, ...).
    pub fn sender(
        rule: &'static str,
        level: Level,
        direction: Direction,
        offset: u64,
        message: String,
    ) -> Self {
        Finding {
            rule,
            sender_rule: None,
            level,
            direction,
            kind: "sender_rule",
            message,
            offset,
            fatal: false,
        }
    }

    /// A framing error the receiver found: fatal for a stream error, not for an envelope
    /// refused on its own (ENV-2, ENV-5).
    pub fn error(e: &FramingError, direction: Direction, fatal: bool) -> Self {
        let sender = e.kind.sender_rule(direction.receiver());
        Finding {
            rule: e.rule(),
            sender_rule: (sender != e.rule()).then_some(sender),
            level: Level::Must,
            direction,
            kind: e.kind.name(),
            message: e.kind.to_string(),
            offset: e.offset,
            fatal,
        }
    }

    /// The rule the sender broke.
    pub fn broken_by_sender(&self) -> &'static str {
        self.sender_rule.unwrap_or(self.rule)
    }
}

/// One rule broken on one connection in one direction: how often, and where first.
#[derive(Clone, Debug, Serialize)]
pub struct RuleCount {
    /// The first finding of the rule (its offset, message and fatality).
    #[serde(flatten)]
    pub first: Finding,
    pub count: u64,
}

impl RuleCount {
    /// The failed check a case reports for this rule: the sender's rule, its level, and where
    /// it was first broken; `whose` says on which connection and whose bytes.
    pub fn as_check(&self, whose: &str) -> Check {
        let f = &self.first;
        let times = match self.count {
            1 => String::new(),
            n => format!("{n} times, first "),
        };
        let detected = match f.sender_rule {
            Some(_) => format!(" (the receiver rejected it under {})", f.rule),
            None => String::new(),
        };
        Check::new(
            f.broken_by_sender(),
            f.level,
            Status::Fail,
            format!(
                "{whose}: {times}at byte {}: {}{detected}",
                f.offset, f.message
            ),
        )
    }
}

/// The findings of one connection, one entry per (direction, rule), in the order first found.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(transparent)]
pub struct Tally {
    rules: Vec<RuleCount>,
}

impl Tally {
    /// Counts `finding`; true when it is the first of its rule in its direction.
    pub fn add(&mut self, finding: &Finding) -> bool {
        let same = |c: &&mut RuleCount| {
            c.first.direction == finding.direction
                && c.first.rule == finding.rule
                && c.first.sender_rule == finding.sender_rule
        };
        match self.rules.iter_mut().find(same) {
            Some(c) => {
                c.count += 1;
                false
            }
            None => {
                self.rules.push(RuleCount {
                    first: finding.clone(),
                    count: 1,
                });
                true
            }
        }
    }

    pub fn rules(&self) -> &[RuleCount] {
        &self.rules
    }

    /// Findings of `level`, counted in full.
    pub fn count(&self, level: Level) -> u64 {
        self.rules
            .iter()
            .filter(|c| c.first.level == level)
            .map(|c| c.count)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}
