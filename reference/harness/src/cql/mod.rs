//! The CQL the conformance server, the reference adapter, the probe and the vectors speak beyond
//! the frame layer: the messages on the wire ([`messages`]) and the conformance server's canned
//! database ([`database`]).

pub mod database;
pub mod messages;
