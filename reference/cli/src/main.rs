//! `cqlframe`: the reference implementation's command line.
//!
//! Exit codes: 0 success; 1 the input breaks a framing rule (the error names it); 2 usage error;
//! 3 input/output error or unreadable input; `conformance client` alone follows the adapter
//! contract instead (0, 1, 127: see conformance/README.md). Output into a closed pipe
//! (`cqlframe ... | head -1`) ends the command quietly, the way `cat` ends: by SIGPIPE (status 141
//! in a shell).

mod check;
mod conformance;
mod crc;
mod decode;
mod encode;
mod input;
mod pcap;
mod probe;
mod proxy;
mod stop;
mod vectors;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cqlframe",
    version,
    about = "Reference tools for CQL native protocol framing (v5, v6-beta, CRC32C)"
)]
#[command(
    after_help = "Exit codes: 0 success, 1 the input breaks a framing rule, 2 usage error, 3 I/O error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Crc(crc::Args),
    Decode(decode::Args),
    Encode(encode::Args),
    /// Write a session's byte streams as a pcap capture.
    Pcap(pcap::Args),
    /// Run the conformance suite against real drivers.
    Conformance(Box<conformance::Args>),
    /// Golden test vectors: generate or verify.
    Vectors(vectors::Args),
    Check(check::Args),
    Probe(probe::Args),
    Proxy(proxy::Args),
}

/// Why a command failed, mapped to the documented exit codes.
pub enum Failure {
    /// The input breaks a rule; already reported.
    Rule,
    Io(String),
    /// Whoever read our output went away.
    ClosedPipe,
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Failure::ClosedPipe;
        }
        Failure::Io(e.to_string())
    }
}

/// Ends the process as a Unix filter ends when its reader goes away: by the default action of
/// SIGPIPE. (Rust ignores SIGPIPE so that socket writes fail with an error instead; the
/// default action is restored only here, at the very end.)
fn die_of_closed_pipe() -> ExitCode {
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action and raising it; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    ExitCode::from(3)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crc(args) => crc::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Vectors(args) => vectors::run(args),
        Command::Pcap(args) => pcap::run(args),
        Command::Conformance(args) => conformance::run(*args),
        Command::Check(args) => check::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Proxy(args) => proxy::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Rule) => ExitCode::from(1),
        Err(Failure::ClosedPipe) => die_of_closed_pipe(),
        Err(Failure::Io(message)) => {
            eprintln!("cqlframe: {message}");
            ExitCode::from(3)
        }
    }
}
