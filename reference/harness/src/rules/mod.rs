//! The rules engine: the one judge of CQL framing. Every tool that says whether bytes keep the
//! spec asks it: the conformance server (what a driver sends), `cqlframe check` (every
//! connection of a capture), the probe (what a server sends). A rule is checked here once, and
//! the tools only report what it decides; the Wireshark dissector is tested against it.
//!
//! - [`Judge`]: one connection, both directions, bytes in and [`Finding`]s out. What a
//!   receiver refuses comes from the reference's own [`cqlframe::connection::Connection`],
//!   the rule it broke and the sender's rule behind it from the error's kind, where a kind added
//!   must name both ([`cqlframe::ErrorKind::rule`], [`cqlframe::ErrorKind::sender_rule`]);
//!   sender rules that no receiver enforces from [`SenderChecks`]; NEG-4 from the handshake.
//! - [`Tally`]: a connection's findings, one entry per rule with its count and first offset.
//! - [`Unjudged`]: what the judge could not decide from the bytes it was given.
//! - [`spec_anchor`]: where the rendered spec states a rule, for the reports to link to.

mod finding;
mod judge;
mod sender;
mod spec;
mod unjudged;

pub use finding::{Direction, Finding, RuleCount, Tally};
pub use judge::Judge;
pub use sender::{SenderChecks, Stats};
pub use spec::{spec_anchor, SPEC_PAGE};
pub use unjudged::Unjudged;

#[cfg(test)]
mod tests;
