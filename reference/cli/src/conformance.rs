//! `cqlframe conformance`: the conformance suite on real drivers (see conformance/README.md).
//!
//! - `cqlframe conformance [run] [--quick] [--cases ..] [--drivers ..]`: the harness.
//! - `cqlframe conformance server --case ID`: the server of one case, for manual runs.
//! - `cqlframe conformance client --port P --case ID --action A`: the reference adapter.
//! - `cqlframe conformance list`: the catalogue.

use crate::Failure;
use clap::{Args as ClapArgs, Subcommand};
use cqlframe_harness::conformance::{cases, client, load, matches, report, runner, server};
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
    /// Run the server of one case until killed (or for --seconds), then print what it saw.
    Server(ServerArgs),
    /// The reference adapter: a client-role Connection running one case's workload.
    Client(client::ClientOptions),
    /// List the cases.
    List(ListArgs),
}

#[derive(ClapArgs, Clone)]
struct RunArgs {
    /// Case catalogue (default: conformance/cases.toml of the repository).
    #[arg(long)]
    catalogue: Option<PathBuf>,
    /// Adapters folder (default: conformance/drivers of the repository).
    #[arg(long)]
    drivers_dir: Option<PathBuf>,
    /// Drivers to run, comma-separated (default: every adapter found).
    #[arg(long, value_delimiter = ',')]
    drivers: Vec<String>,
    /// Cases to run: ids or prefixes ending in `*`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    cases: Vec<String>,
    /// Cases to leave out, same syntax.
    #[arg(long, value_delimiter = ',')]
    exclude: Vec<String>,
    /// Only the cases marked quick (the CI subset).
    #[arg(long)]
    quick: bool,
    /// Fail (exit 1) on any FAIL or NON-STRICT of any driver, not only the reference's FAILs.
    #[arg(long)]
    strict: bool,
    /// Where report.json, junit.xml and index.html go.
    #[arg(long, default_value = "build/conformance")]
    report_dir: PathBuf,
    /// Seconds before an adapter run is killed.
    #[arg(long, default_value_t = 40)]
    timeout: u64,
}

#[derive(ClapArgs)]
struct ServerArgs {
    #[arg(long)]
    case: String,
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Stop after this many seconds (0: run until killed).
    #[arg(long, default_value_t = 0)]
    seconds: u64,
    #[arg(long)]
    catalogue: Option<PathBuf>,
}

#[derive(ClapArgs)]
struct ListArgs {
    #[arg(long)]
    catalogue: Option<PathBuf>,
    #[arg(long)]
    quick: bool,
}

pub fn run(args: Args) -> Result<(), Failure> {
    match args.command {
        None => run_suite(args.run),
        Some(Sub::Run(r)) => run_suite(r),
        Some(Sub::Client(c)) => match client::run(c) {
            0 => Ok(()),
            code => std::process::exit(i32::from(code)),
        },
        Some(Sub::Server(s)) => run_server(s),
        Some(Sub::List(l)) => {
            let catalogue = load(l.catalogue).map_err(Failure::Io)?;
            for c in catalogue.cases.iter().filter(|c| !l.quick || c.quick) {
                println!(
                    "{:34} {:6} {:22} {}",
                    c.id,
                    format!("{:?}", c.level).to_uppercase(),
                    c.rules.join(","),
                    c.title
                );
            }
            Ok(())
        }
    }
}

fn run_server(args: ServerArgs) -> Result<(), Failure> {
    let catalogue = load(args.catalogue).map_err(Failure::Io)?;
    let case = catalogue
        .cases
        .iter()
        .find(|c| c.id == args.case)
        .ok_or_else(|| Failure::Io(format!("no case {}", args.case)))?;
    let server = server::Server::start(case.server.clone(), args.port)?;
    println!("listening on 127.0.0.1:{}", server.port);
    println!(
        "adapter arguments: {}",
        runner::adapter_args(case, server.port, 10.0).join(" ")
    );
    if args.seconds == 0 {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let obs = server.stop(Duration::from_secs(args.seconds));
    println!(
        "{}",
        serde_json::to_string_pretty(&obs).expect("serialisable")
    );
    Ok(())
}

fn run_suite(args: RunArgs) -> Result<(), Failure> {
    let started = Instant::now();
    let catalogue = load(args.catalogue.clone()).map_err(Failure::Io)?;
    let cases: Vec<cases::Case> = catalogue
        .cases
        .into_iter()
        .filter(|c| !args.quick || c.quick)
        .filter(|c| args.cases.is_empty() || matches(&c.id, &args.cases))
        .filter(|c| !matches(&c.id, &args.exclude))
        .collect();
    if cases.is_empty() {
        return Err(Failure::Io("no case selected".into()));
    }
    let drivers_dir = args
        .drivers_dir
        .clone()
        .unwrap_or_else(|| cqlframe_harness::conformance::conformance_dir().join("drivers"));
    let mut drivers = runner::discover(&drivers_dir, &args.drivers).map_err(Failure::Io)?;
    let timeout = Duration::from_secs(args.timeout);
    let total = cases.len() * drivers.len();
    // Captures of an earlier run would be linked from nowhere: start afresh.
    let _ = std::fs::remove_dir_all(args.report_dir.join("pcap"));
    let mut results = Vec::new();
    let mut done = 0;
    for driver in &mut drivers {
        // Adapter contract: an unknown case exits 127 (also warms up venvs and builds).
        eprintln!(
            "[{}] adapter self-check (unknown case must exit 127) ...",
            driver.name
        );
        let check = runner::run_adapter(
            driver,
            &[
                "--host".into(),
                "127.0.0.1".into(),
                "--port".into(),
                "9".into(),
                "--case".into(),
                "conformance.unknown-case".into(),
                "--action".into(),
                "unknown-action".into(),
            ],
            Duration::from_secs(900),
        );
        driver.self_check = check.exit;
        driver.self_check_ok = check.exit == Some(127);
        if !driver.self_check_ok {
            eprintln!(
                "[{}] adapter contract broken: unknown case exited {:?}\n{}",
                driver.name, check.exit, check.stderr_tail
            );
        }
        for case in &cases {
            done += 1;
            let mut r = runner::run_case(driver, case, timeout);
            if let Err(e) = runner::write_pcap(&mut r, &args.report_dir) {
                eprintln!("[{}] {}: capture not written: {e}", driver.name, case.id);
            }
            eprintln!(
                "[{done:3}/{total}] {:10} {:36} {:13} {:5.1}s  {}",
                driver.name,
                case.id,
                r.outcome.name(),
                r.adapter.seconds,
                r.progress_note()
            );
            results.push(r);
        }
    }
    let run = report::Run {
        cases: &cases,
        drivers: &drivers,
        results: &results,
        seconds: started.elapsed().as_secs_f64(),
    };
    report::publish(&run, &args.report_dir)?;
    let reference_failed = results
        .iter()
        .any(|r| r.driver == "reference" && r.outcome == runner::Outcome::Fail);
    let contract_broken = drivers.iter().any(|d| !d.self_check_ok);
    let strict_failed = args.strict
        && results.iter().any(|r| {
            matches!(
                r.outcome,
                runner::Outcome::Fail | runner::Outcome::NonStrict
            )
        });
    if reference_failed || contract_broken || strict_failed {
        eprintln!(
            "conformance: {}",
            if reference_failed {
                "the reference adapter FAILed a case"
            } else if contract_broken {
                "an adapter breaks the contract (unknown case must exit 127)"
            } else {
                "--strict: a driver has FAIL or NON-STRICT outcomes"
            }
        );
        return Err(Failure::Rule);
    }
    Ok(())
}
