//! What is built around the sans-IO reference `cqlframe`: everything that judges, records or
//! replays CQL framing on real bytes.
//!
//! - [`rules`]: the one judge. Every tool (the conformance server, the capture checker, the
//!   probe) feeds it the bytes or events of a connection and reports what it decides.
//! - [`pcap`]: capture files, read (pcap, pcapng, TCP reassembly) and written.
//! - [`transcript`] and [`vectors`]: the golden test vectors and their expected results.
//! - [`conformance`]: the conformance server, the reference adapter and the runner.
//! - [`probe`]: the reference as a client testing a server.
//! - [`check`]: every CQL connection of a capture checked.
//! - [`proxy`]: a driver's live traffic to a node forwarded and judged as it flows.
//! - [`cql`]: the few CQL requests and results the server and clients speak.
//! - [`fault_builder`]: frames built part by part and broken on purpose, for the server and the probe.
//! - [`lz4_by_hand`]: LZ4 blocks written token by token, for the faults no compressor makes.
//! - [`verdict`]: the typed outcome of a case (level, outcome, check) shared by the reports.
//! - [`wire_log`]: the text lines of a connection's wire log, a frame's line included.
//! - [`output`]: the `format` version of every JSON document the tools write.

pub mod check;
pub mod conformance;
pub mod cql;
pub mod fault_builder;
pub mod lz4_by_hand;
pub mod output;
pub mod pcap;
pub mod probe;
pub mod proxy;
pub mod rules;
pub mod transcript;
pub mod vectors;
pub mod verdict;
pub mod wire_log;
