//! `cqlframe conformance`: the conformance suite on real drivers (see conformance/README.md).
//!
//! - `cqlframe conformance [run] [--quick] [--cases ..] [--drivers ..]`: the harness.
//! - `cqlframe conformance server --case ID`: the server of one case, for manual runs.
//! - `cqlframe conformance client --port P --case ID --action A`: the reference adapter.
//! - `cqlframe conformance list [--json]`: the catalogue.
//! - `cqlframe conformance diff OLD.json NEW.json`: what changed between two runs.
//! - `cqlframe conformance baseline REPORT.json`: an expectations file a run meets.

use crate::stop::Stop;
use crate::Failure;
use clap::{Args as ClapArgs, Subcommand};
use cqlframe_harness::conformance::adapter;
use cqlframe_harness::conformance::expectations;
use cqlframe_harness::conformance::suite::{self, Progress};
use cqlframe_harness::conformance::{cases, diff, load, reference_adapter, server};
use cqlframe_harness::output::{self, Versioned};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(ClapArgs)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum Sub {
    /// Run the suite (the default).
    Run(RunArgs),
    /// Run the server of one case until SIGTERM or SIGINT (or for --seconds), then print what
    /// it saw as one JSON document (schemas/observations.schema.json).
    Server(ServerArgs),
    /// The reference adapter: a client-role Connection running one case's workload.
    Client(reference_adapter::ClientOptions),
    /// List the cases.
    List(ListArgs),
    /// Compare two runs' report.json, per driver and case; exit 1 when an outcome got worse or
    /// the runs do not compare like with like (another catalogue or selection, missing cases).
    Diff(DiffArgs),
    /// Write the expectations file a run's report.json meets (its FAILs and NON-STRICTs, each
    /// with the run's summary as the reason): the first baseline of a driver's CI.
    Baseline(BaselineArgs),
}

#[derive(ClapArgs)]
struct DiffArgs {
    /// The earlier run's report.json.
    old: PathBuf,
    /// The later run's report.json.
    new: PathBuf,
    /// Accept (driver, case) pairs of the earlier run that the later one lacks.
    #[arg(long)]
    allow_missing: bool,
}

#[derive(ClapArgs)]
struct BaselineArgs {
    /// The run's report.json.
    report: PathBuf,
    /// Only this driver's results.
    #[arg(long)]
    driver: Option<String>,
    /// Where to write the file (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(ClapArgs, Clone)]
struct RunArgs {
    /// Case catalogue (default: conformance/cases.toml as this cqlframe was built with it).
    #[arg(long)]
    catalogue: Option<PathBuf>,
    /// Adapters folder (default: conformance/drivers of the repository).
    #[arg(long)]
    drivers_dir: Option<PathBuf>,
    /// Drivers to run, comma-separated (default: every adapter found, or none when --adapter
    /// is given).
    #[arg(long, value_delimiter = ',')]
    drivers: Vec<String>,
    /// An adapter outside the kit, NAME=PATH (its `run`, or a folder holding one); repeatable.
    #[arg(long = "adapter", value_name = "NAME=PATH")]
    adapters: Vec<String>,
    /// Cases to run: ids or prefixes ending in `*`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    cases: Vec<String>,
    /// Cases to leave out, same syntax.
    #[arg(long, value_delimiter = ',')]
    exclude: Vec<String>,
    /// The cases that cite this bug of conformance/bugs.toml in their `bugs`, added to
    /// --cases: a reproduction's run.
    #[arg(long, value_name = "ID")]
    bug: Option<String>,
    /// Only the cases marked quick (the CI subset).
    #[arg(long)]
    quick: bool,
    /// Fail (exit 1) on any FAIL or NON-STRICT of any driver, not only the reference's FAILs.
    #[arg(long)]
    strict: bool,
    /// The drivers' known failures (conformance/README.md, "Expectations"): exit 1 on any
    /// outcome worse than listed; report what got better.
    #[arg(long, value_name = "FILE")]
    expectations: Option<PathBuf>,
    /// Where report.json, junit.xml and index.html go.
    #[arg(long, default_value = "build/conformance")]
    report_dir: PathBuf,
    /// The harness's limit on one adapter run, in seconds: then the adapter's whole process
    /// group is killed and the case FAILs as hung.
    #[arg(long, default_value_t = 40)]
    run_timeout: u64,
    /// The connect and request timeout the adapter sets in its driver, in seconds (passed to
    /// the adapter as `--timeout`). Default: a quarter of --run-timeout, 2 to 10.
    #[arg(long)]
    request_timeout: Option<f64>,
    /// The limit on the adapter self-check (unknown case), in seconds: it also builds or
    /// installs the driver on first use.
    #[arg(long, default_value_t = 900)]
    setup_timeout: u64,
}

#[derive(ClapArgs)]
struct ServerArgs {
    #[arg(long)]
    case: String,
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Stop after this many seconds (0: until SIGTERM or SIGINT).
    #[arg(long, default_value_t = 0)]
    seconds: u64,
    #[arg(long)]
    catalogue: Option<PathBuf>,
}

#[derive(ClapArgs)]
struct ListArgs {
    #[arg(long)]
    catalogue: Option<PathBuf>,
    /// Only the quick subset.
    #[arg(long)]
    quick: bool,
    /// Only the cases that cite this bug of conformance/bugs.toml.
    #[arg(long, value_name = "ID")]
    bug: Option<String>,
    /// Every case in full (what the adapter is asked to do, the server's script, the rules,
    /// the quick flag) as one JSON document.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<(), Failure> {
    match args.command {
        None => run_suite(args.run),
        Some(Sub::Run(r)) => run_suite(r),
        Some(Sub::Client(c)) => match reference_adapter::run(c) {
            0 => Ok(()),
            code => std::process::exit(i32::from(code)),
        },
        Some(Sub::Server(s)) => run_server(s),
        Some(Sub::Diff(d)) => {
            let diff = diff::compare(&d.old, &d.new, d.allow_missing).map_err(Failure::Io)?;
            writeln!(std::io::stdout(), "{diff}")?;
            if !diff.passed() {
                return Err(Failure::Rule);
            }
            Ok(())
        }
        Some(Sub::Baseline(b)) => baseline(b),
        Some(Sub::List(l)) => {
            let catalogue = load(l.catalogue).map_err(Failure::Io)?;
            let chosen: Vec<&cases::Case> = catalogue
                .cases
                .iter()
                .filter(|c| !l.quick || c.quick)
                .filter(|c| l.bug.as_deref().is_none_or(|b| c.cites(b)))
                .collect();
            if l.json {
                let doc = serde_json::json!({
                    "format": output::CATALOGUE,
                    "catalogue": catalogue.digest,
                    "cases": chosen,
                });
                writeln!(
                    std::io::stdout(),
                    "{}",
                    serde_json::to_string_pretty(&doc).expect("serialisable")
                )?;
            } else {
                write!(std::io::stdout(), "{}", cases::listing(chosen))?;
            }
            Ok(())
        }
    }
}

fn baseline(args: BaselineArgs) -> Result<(), Failure> {
    let report = diff::read(&args.report).map_err(Failure::Io)?;
    let results: Vec<diff::Entry> = report
        .results
        .into_iter()
        .filter(|r| args.driver.as_ref().is_none_or(|d| *d == r.driver))
        .collect();
    if results.is_empty() {
        return Err(Failure::Io(format!(
            "{}: no results{}",
            args.report.display(),
            args.driver
                .map(|d| format!(" for driver {d}"))
                .unwrap_or_default()
        )));
    }
    let known = expectations::baseline(&results).map_err(Failure::Io)?;
    let text = format!(
        "# Known failures of this driver in the cqlframe conformance suite, written by\n\
         # `cqlframe conformance baseline {}`. Replace each reason with your own words and add\n\
         # the link to its bug; `cqlframe conformance --expectations FILE` fails on anything\n\
         # worse and reports what got better.\n\n{}",
        args.report.display(),
        toml::to_string(&known).expect("serialisable")
    );
    match args.output {
        Some(path) => std::fs::write(&path, text)
            .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?,
        None => write!(std::io::stdout(), "{text}")?,
    }
    Ok(())
}

fn run_server(args: ServerArgs) -> Result<(), Failure> {
    let catalogue = load(args.catalogue).map_err(Failure::Io)?;
    let case = catalogue
        .cases
        .iter()
        .find(|c| c.id == args.case)
        .ok_or_else(|| Failure::Io(format!("no case {}", args.case)))?;
    // SIGTERM or SIGINT ends the run as --seconds does: what the server saw is printed.
    let stop = Stop::on_signals()?;
    let server = server::Server::start(case.server.clone(), args.port)?;
    writeln!(std::io::stdout(), "listening on 127.0.0.1:{}", server.port)?;
    writeln!(
        std::io::stdout(),
        "adapter arguments: {}",
        adapter::adapter_args(case, server.port, 10.0).join(" ")
    )?;
    stop.wait((args.seconds > 0).then(|| Instant::now() + Duration::from_secs(args.seconds)));
    let obs = server.stop(Duration::ZERO);
    let document = Versioned {
        format: output::OBSERVATIONS,
        document: &obs,
    };
    writeln!(
        std::io::stdout(),
        "{}",
        serde_json::to_string_pretty(&document).expect("serialisable")
    )?;
    Ok(())
}

fn run_suite(mut args: RunArgs) -> Result<(), Failure> {
    if let Some(bug) = &args.bug {
        let catalogue = load(args.catalogue.clone()).map_err(Failure::Io)?;
        let citing: Vec<String> = cases::citing(&catalogue.cases, bug)
            .map(|c| c.id.clone())
            .collect();
        if citing.is_empty() {
            return Err(Failure::Io(format!(
                "--bug {bug}: no case of the catalogue cites it"
            )));
        }
        args.cases.extend(citing);
    }
    let options = suite::Options {
        catalogue: args.catalogue,
        drivers_dir: args.drivers_dir,
        drivers: args.drivers,
        adapters: args.adapters,
        cases: args.cases,
        exclude: args.exclude,
        quick: args.quick,
        strict: args.strict,
        expectations: args.expectations,
        report_dir: args.report_dir,
        run_timeout: args.run_timeout,
        request_timeout: args.request_timeout,
        setup_timeout: args.setup_timeout,
        exe: std::env::args().next().unwrap_or_else(|| "cqlframe".into()),
    };
    let finished = suite::run(&options, |progress| match progress {
        Progress::SelfCheck { driver } => eprintln!(
            "[{driver}] adapter self-check (an unknown case must exit 127 with a reason) ..."
        ),
        Progress::Broken { driver, why } => {
            eprintln!("[{driver}] adapter broken, its cases are not run: {why}")
        }
        Progress::NoCapture { driver, case, why } => {
            eprintln!("[{driver}] {case}: capture not written: {why}")
        }
        Progress::Case {
            done,
            total,
            result: r,
        } => {
            eprintln!(
                "[{done:3}/{total}] {:10} {:36} {:14} {:5.1}s  {}",
                r.driver,
                r.case,
                r.outcome.name(),
                r.adapter.seconds,
                r.progress_note()
            );
            if let Some(command) = r.rerun_shown() {
                eprintln!("      run it again: {command}");
            }
        }
    })
    .map_err(Failure::Io)?;
    writeln!(std::io::stdout(), "{}", finished.published)?;
    if let Some(gate) = &finished.gate {
        writeln!(std::io::stdout(), "{gate}")?;
    }
    if finished.reasons.is_empty() {
        return Ok(());
    }
    for r in finished.reasons {
        eprintln!("conformance: {r}");
    }
    Err(Failure::Rule)
}
