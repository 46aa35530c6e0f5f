//! `cqlframe probe HOST:PORT`: the reference as a client testing a server's framing (the work
//! is `cqlframe_harness::probe`; this is its command line).

use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe_harness::conformance::adapter::{Driver, SelfCheck};
use cqlframe_harness::conformance::cases::listing;
use cqlframe_harness::conformance::report;
use cqlframe_harness::probe::{cases, probe, Deviations};
use cqlframe_harness::verdict::{Check, Level, Outcome, Status};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    let target = args.target.clone().expect("clap requires a target");
    let mut deviations = Vec::new();
    for path in &args.deviations {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
        deviations.extend(
            toml::from_str::<Deviations>(&text)
                .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?
                .deviation,
        );
    }
    let started = Instant::now();
    let (cases, mut results, release) = probe(
        &target,
        &args.cases,
        Duration::from_secs_f64(args.timeout),
        Duration::from_secs_f64(args.fault_wait),
        |i, n, r| {
            eprintln!(
                "[{i:2}/{n}] {:32} {:13} {:5.1}s  {}",
                r.case,
                r.outcome.name(),
                r.adapter.seconds,
                r.progress_note()
            )
        },
    );
    let name = args.name.clone().unwrap_or_else(|| match &release {
        Some(r) => format!("{target} ({r})"),
        None => target.clone(),
    });
    let mut unexpected = Vec::new();
    for r in &mut results {
        r.driver = name.clone();
        let known = deviations.iter().find(|d| d.case == r.case);
        match (r.outcome, known) {
            (Outcome::Fail, Some(d)) => {
                r.checks.push(Check::new(
                    &d.rule,
                    Level::Must,
                    Status::Info,
                    format!(
                        "known deviation of this server{}: {}",
                        d.errata
                            .as_ref()
                            .map(|e| format!(" (spec errata: {e})"))
                            .unwrap_or_default(),
                        d.note
                    ),
                ));
                r.summary = format!("known deviation ({}): {}", d.rule, r.summary);
            }
            (Outcome::Fail, None) => unexpected.push(r.case.clone()),
            (_, Some(d)) => eprintln!(
                "probe: {} is listed as a known deviation ({}) but did not fail",
                d.case, d.rule
            ),
            _ => {}
        }
    }
    let drivers = [Driver {
        name: name.clone(),
        run: PathBuf::new(),
        external: false,
        self_check: SelfCheck::NotRun,
    }];
    let run = report::Run {
        selection: None,
        cases: &cases,
        drivers: &drivers,
        results: &results,
        seconds: started.elapsed().as_secs_f64(),
    };
    report::publish(&run, &args.report_dir)?;
    if !unexpected.is_empty() {
        eprintln!(
            "probe: FAIL outside the known deviations: {}",
            unexpected.join(", ")
        );
        return Err(Failure::Rule);
    }
    Ok(())
}
