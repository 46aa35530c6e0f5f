//! `cqlframe probe HOST:PORT`: the reference as a client testing a server's framing (the work
//! is `cqlframe_harness::probe`; this is its command line).

use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe_harness::conformance::cases::listing;
use cqlframe_harness::probe::{self, cases, Options};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Test a CQL server's framing: negotiation, the switch, packing, splitting, chopped delivery
/// and faults, each judged against spec/framing_v6.adoc.
#[derive(ClapArgs)]
pub struct Args {
    /// The server, HOST:PORT.
    #[arg(required_unless_present = "list")]
    target: Option<String>,
    /// Cases to run: ids or prefixes ending in `*`, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    cases: Vec<String>,
    /// Where report.json, junit.xml and index.html go.
    #[arg(long, default_value = "build/probe")]
    report_dir: PathBuf,
    /// Seconds to wait for an answer.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Seconds to watch the server after a fault for its ERROR and close.
    #[arg(long, default_value_t = 3.0)]
    fault_wait: f64,
    /// Known deviations of this server (TOML, `[[deviation]] case, rule, note`): their FAILs
    /// are reported but do not fail the run. Repeatable: the lists add up.
    #[arg(long)]
    deviations: Vec<PathBuf>,
    /// Name of the server in the reports (default: the release_version it reports, and the
    /// address).
    #[arg(long)]
    name: Option<String>,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
}

pub fn run(args: Args) -> Result<(), Failure> {
    if args.list {
        write!(std::io::stdout(), "{}", listing(&cases::catalogue()))?;
        return Ok(());
    }
    let options = Options {
        target: args.target.expect("clap requires a target"),
        cases: args.cases,
        report_dir: args.report_dir,
        timeout: Duration::from_secs_f64(args.timeout),
        fault_wait: Duration::from_secs_f64(args.fault_wait),
        deviations: args.deviations,
        name: args.name,
    };
    let finished = probe::run(&options, |i, n, r| {
        eprintln!(
            "[{i:2}/{n}] {:32} {:13} {:5.1}s  {}",
            r.case,
            r.outcome.name(),
            r.adapter.seconds,
            r.progress_note()
        )
    })
    .map_err(Failure::Io)?;
    for (case, rule) in &finished.listed_but_passed {
        eprintln!("probe: {case} is listed as a known deviation ({rule}) but did not fail");
    }
    writeln!(std::io::stdout(), "{}", finished.published)?;
    if !finished.unexpected.is_empty() {
        eprintln!(
            "probe: FAIL outside the known deviations: {}",
            finished.unexpected.join(", ")
        );
        return Err(Failure::Rule);
    }
    Ok(())
}
