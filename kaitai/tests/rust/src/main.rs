//! kaitai-rust runs the Kaitai Struct parsers generated for Rust against the golden vectors:
//! the checks of run_python.py (see its docstring), with the official Rust runtime and this
//! crate's own checksum code. kaitai/test.sh builds it with the generated modules copied into
//! src/generated/ and the runtime patched in from KAITAI_RUST_RUNTIME.
//!
//!     kaitai-rust --root REPO [--verbose]
//!
//! The last line is `kaitai-rust: N passed, M failed`.

mod checks;
#[rustfmt::skip] // generated code, copied in by kaitai/test.sh
mod generated;
mod grammar;
mod kst;
mod manifest;
mod receiver;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use manifest::{compare_envelopes, compare_frames, Case, FramesCase, Manifest, Negative};
use receiver::{Format, Outcome, Receiver};

/// vector_negatives.yaml: by format, by case name (the id without `<format>.<checksum>.`).
type Negatives = BTreeMap<Format, BTreeMap<String, Negative>>;

/// Counts the results and prints the failures (every result with --verbose).
struct Report {
    verbose: bool,
    passed: usize,
    failed: usize,
}

impl Report {
    fn add(&mut self, name: &str, problems: &[String]) {
        let ok = problems.is_empty();
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        if !ok || self.verbose {
            let detail = if ok {
                String::new()
            } else {
                format!(": {}", problems.join("; "))
            };
            println!("{} {name}{detail}", if ok { "ok  " } else { "FAIL" });
        }
    }
}

/// Runs `check`; a panic of the runtime or the generated code is a failed test, not the end
/// of the run.
fn guarded(check: impl FnOnce() -> Vec<String>) -> Vec<String> {
    panic::catch_unwind(AssertUnwindSafe(check)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        vec![format!("panic: {message}")]
    })
}

/// The problems of one frames case: its decode against `expected`, or against the outcome
/// vector_negatives.yaml gives for an invalid case. `used` collects the table lines taken.
fn check_case(
    case: &FramesCase,
    vectors: &Path,
    negatives: &Negatives,
    used: &mut BTreeSet<(Format, String)>,
) -> Vec<String> {
    let data = match std::fs::read(vectors.join(&case.input.file)) {
        Ok(data) => data,
        Err(e) => return vec![format!("{}: {e}", case.input.file)],
    };
    let receiver = Receiver {
        algorithm: case.checksum,
        max_body: case.max_envelope_body,
    };
    let got = match receiver.decode(case.format, &data) {
        Ok(got) => got,
        Err(e) => return vec![e.to_string()],
    };
    let exp = &case.expected;
    if case.valid {
        let mut problems = Vec::new();
        if got.outcome != Outcome::Accepted {
            problems.push(format!("unexpected error {}", got.outcome));
        }
        problems.extend(compare_frames(&got.frames, &exp.frames, true));
        problems.extend(compare_envelopes(&got.envelopes, &exp.envelopes));
        return problems;
    }
    let short = case
        .id
        .splitn(3, '.')
        .nth(2)
        .unwrap_or_default()
        .to_string();
    let Some(entry) = negatives
        .get(&case.format)
        .and_then(|entries| entries.get(&short))
    else {
        return vec!["no entry in vector_negatives.yaml".into()];
    };
    used.insert((case.format, short));
    let mut problems = Vec::new();
    let manifest_rule = exp.error.as_ref().map(|e| e.rule.as_str());
    if manifest_rule != Some(entry.rule.as_str()) {
        problems.push(format!(
            "table says {}, manifest {manifest_rule:?}",
            entry.rule
        ));
    }
    if entry.runner.is_some() {
        problems.extend(compare_frames(&got.frames, &exp.frames, false));
    }
    if !entry.matches(&got.outcome) {
        problems.push(format!(
            "outcome {}, expected {}",
            got.outcome,
            entry.want()
        ));
    }
    problems
}

fn read<T: serde::de::DeserializeOwned>(
    path: &Path,
    parse: fn(&str) -> Result<T, String>,
) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(root: &Path, verbose: bool) -> Result<Report, String> {
    let vectors = root.join("vectors");
    let tests = root.join("kaitai/tests");
    let manifest: Manifest = read(&vectors.join("manifest.json"), |t| {
        serde_json::from_str(t).map_err(|e| e.to_string())
    })?;
    let negatives: Negatives = read(&tests.join("vector_negatives.yaml"), |t| {
        serde_yaml_ng::from_str(t).map_err(|e| e.to_string())
    })?;
    let mut report = Report {
        verbose,
        passed: 0,
        failed: 0,
    };

    // 1. the runner's own checksum code against the spec's catalogue
    for c in &checks::CATALOGUE {
        let got = (c.function)(c.input);
        let problems = if got == c.want {
            vec![]
        } else {
            vec![format!("{got:#x} != {:#x}", c.want)]
        };
        report.add(&format!("catalogue: {}", c.name), &problems);
    }

    // 2. the golden vectors
    let mut used = BTreeSet::new();
    for case in &manifest.cases {
        if let Case::Frames(case) = case {
            let problems = guarded(|| check_case(case, &vectors, &negatives, &mut used));
            report.add(&case.id, &problems);
        }
    }
    for (format, entries) in &negatives {
        for short in entries.keys() {
            if !used.contains(&(*format, short.clone())) {
                report.add(
                    &format!("vector_negatives.yaml {}.{short}", format.name()),
                    &["no such invalid case".into()],
                );
            }
        }
    }

    // 3. kst-like cases
    let mut files: Vec<PathBuf> = std::fs::read_dir(tests.join("kst"))
        .map_err(|e| format!("kaitai/tests/kst: {e}"))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|x| x == "kst"))
        .collect();
    files.sort();
    for file in &files {
        let mut name = file.display().to_string();
        let problems = guarded(|| match kst::run(file, &vectors) {
            Ok((case, problems)) => {
                name = case;
                problems
            }
            Err(e) => vec![e],
        });
        report.add(&name, &problems);
    }
    Ok(report)
}

fn main() -> ExitCode {
    let mut root = PathBuf::from(".");
    let mut verbose = false;
    let usage = || {
        eprintln!("usage: kaitai-rust --root REPO [--verbose]");
        ExitCode::from(2)
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--verbose" => verbose = true,
            "--root" => match args.next() {
                Some(path) => root = PathBuf::from(path),
                None => return usage(),
            },
            _ => return usage(),
        }
    }
    // A panic is reported as the case's failure (guarded), not printed on its own.
    panic::set_hook(Box::new(|_| {}));
    match run(&root, verbose) {
        Ok(report) => {
            println!(
                "kaitai-rust: {} passed, {} failed",
                report.passed, report.failed
            );
            if report.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("kaitai-rust: {e}");
            ExitCode::from(2)
        }
    }
}
