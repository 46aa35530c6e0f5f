//! Packet captures, both ways: the golden session captures and the conformance suite's per-case
//! captures are written here ([`mod@write`], [`session`]); `cqlframe check` reads pcap and pcapng
//! ([`read`]) and reassembles each TCP direction ([`tcp`]).

pub mod generate;
pub mod pcapng;
pub mod read;
pub mod session;
pub mod tcp;
pub mod write;
