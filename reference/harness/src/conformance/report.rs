//! Reports of a run: the console matrix, `report.json`, `junit.xml` and `index.html`.

use super::adapter::{Driver, SelfCheck, CONTRACT_RULE};
use super::cases::{Case, Selection};
use super::runner::{CaseResult, READ_BOUNDARIES_RULE};
use crate::rules::{spec_anchor, SPEC_PAGE};
use crate::verdict::{Level, Outcome, Status};
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;

/// The command whose run a report shows: readers of `report.json` tell the two apart by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `cqlframe conformance`: drivers against the conformance server.
    Conformance,
    /// `cqlframe probe`: the reference as a client against a server.
    Probe,
}

impl Tool {
    /// The name in `report.json`'s `tool` and junit.xml's `testsuites`.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Conformance => "cqlframe conformance",
            Tool::Probe => "cqlframe probe",
        }
    }
}

/// A finished run, as the reports show it.
pub struct Run<'a> {
    pub tool: Tool,
    /// Which cases of which catalogue ran (none for the probe, whose cases are built in).
    pub selection: Option<&'a Selection>,
    pub cases: &'a [Case],
    pub drivers: &'a [Driver],
    pub results: &'a [CaseResult],
    pub seconds: f64,
}

impl Run<'_> {
    fn result(&self, driver: &str, case: &str) -> Option<&CaseResult> {
        self.results
            .iter()
            .find(|r| r.driver == driver && r.case == case)
    }

    /// How many of `driver`'s cases had each outcome, in [`Outcome::ALL`]'s order.
    fn counts(&self, driver: &str) -> [usize; Outcome::ALL.len()] {
        let mut n = [0; Outcome::ALL.len()];
        for r in self.results.iter().filter(|r| r.driver == driver) {
            n[r.outcome as usize] += 1;
        }
        n
    }
}

/// A driver's counts in words: every verdict, and the cases that gave none when there are any.
fn counts_line(n: &[usize; Outcome::ALL.len()]) -> String {
    Outcome::ALL
        .iter()
        .zip(n)
        .filter(|(o, k)| o.is_verdict() || **k > 0)
        .map(|(o, k)| format!("{k} {o}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The driver x case matrix, for the terminal.
pub fn console(run: &Run) -> String {
    let width = run
        .cases
        .iter()
        .map(|c| c.id.len())
        .max()
        .unwrap_or(10)
        .max(10);
    let mut s = String::new();
    let _ = write!(s, "{:width$}", "case");
    for d in run.drivers {
        let _ = write!(s, "  {:14}", d.name);
    }
    s.push('\n');
    for c in run.cases {
        let _ = write!(s, "{:width$}", c.id);
        for d in run.drivers {
            let o = run.result(&d.name, &c.id).map_or("-", |r| r.outcome.name());
            let _ = write!(s, "  {o:14}");
        }
        s.push('\n');
    }
    for d in run.drivers {
        let n = run.counts(&d.name);
        let _ = writeln!(
            s,
            "{}: {}{}",
            d.name,
            counts_line(&n),
            match &d.self_check {
                SelfCheck::Failed { why } => format!(" (adapter self-check failed: {why})"),
                _ => String::new(),
            }
        );
    }
    let reruns: Vec<(&CaseResult, &str)> = run
        .results
        .iter()
        .filter_map(|r| r.rerun_shown().map(|c| (r, c)))
        .collect();
    if !reruns.is_empty() {
        s.push_str("\nTo run a case that did not pass again:\n");
        for (r, command) in reruns {
            let cited = run
                .cases
                .iter()
                .find(|c| c.id == r.case)
                .map(|c| format!(" ({}{})", c.rules.join(", "), bugs_text(c)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {} {} {}{cited}: {command}",
                r.outcome, r.driver, r.case
            );
        }
    }
    s
}

/// Writes every report under `dir`; the matrix and where the reports are, to print.
pub fn publish(run: &Run, dir: &Path) -> Result<String, String> {
    write_all(run, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(format!(
        "{}\nreports: {1}/index.html, {1}/report.json, {1}/junit.xml",
        console(run),
        dir.display()
    ))
}

pub fn write_all(run: &Run, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let report = json!({
        "format": crate::output::REPORT,
        "tool": run.tool.name(),
        "version": env!("CARGO_PKG_VERSION"),
        "seconds": run.seconds,
        "selection": run.selection,
        "drivers": run.drivers,
        "cases": run.cases,
        "results": run.results,
        "summary": run.drivers.iter().map(|d| {
            let n = run.counts(&d.name);
            let mut counts = serde_json::Map::new();
            counts.insert("driver".into(), json!(d.name));
            for (o, k) in Outcome::ALL.iter().zip(n) {
                counts.insert(o.name().into(), json!(k));
            }
            counts
        }).collect::<Vec<_>>(),
    });
    std::fs::write(
        dir.join("report.json"),
        serde_json::to_string_pretty(&report).expect("serialisable"),
    )?;
    std::fs::write(dir.join("junit.xml"), junit(run))?;
    // The rule links of index.html resolve beside it, in this folder and in a copy of it.
    let spec = super::rendered_spec();
    if let Some(spec) = &spec {
        std::fs::copy(spec, dir.join(SPEC_PAGE))?;
    }
    std::fs::write(dir.join("index.html"), html(run, spec.is_some()))?;
    Ok(())
}

/// `s` as HTML or XML text.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn junit(run: &Run) -> String {
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\">\n",
        run.tool.name()
    );
    for d in run.drivers {
        let rs: Vec<&CaseResult> = run.results.iter().filter(|r| r.driver == d.name).collect();
        let failures = rs.iter().filter(|r| r.outcome == Outcome::Fail).count();
        let errors = rs.iter().filter(|r| !r.outcome.is_verdict()).count();
        let skipped = rs
            .iter()
            .filter(|r| r.outcome == Outcome::Unsupported)
            .count();
        let time: f64 = rs.iter().map(|r| r.adapter.seconds).sum();
        let _ = writeln!(
            s,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time:.3}\">",
            esc(&d.name),
            rs.len()
        );
        for r in rs {
            let _ = write!(
                s,
                "    <testcase classname=\"conformance.{}\" name=\"{}\" time=\"{:.3}\">",
                esc(&d.name),
                esc(&r.case),
                r.adapter.seconds
            );
            if let Some(c) = run.cases.iter().find(|c| c.id == r.case) {
                s.push_str(&junit_properties(c));
            }
            match r.outcome {
                Outcome::Fail => {
                    let _ = write!(
                        s,
                        "<failure message=\"{}\">{}{}</failure>",
                        esc(&r.summary),
                        esc(&checks_text(r)),
                        r.rerun_shown()
                            .map(|c| format!("\nrun it again: {}", esc(c)))
                            .unwrap_or_default()
                    );
                }
                Outcome::Unsupported => {
                    let _ = write!(s, "<skipped message=\"{}\"/>", esc(&r.summary));
                }
                Outcome::NotExercised | Outcome::AdapterBroken => {
                    let _ = write!(
                        s,
                        "<error type=\"{}\" message=\"{}\">{}</error>",
                        r.outcome.name(),
                        esc(&r.summary),
                        esc(&checks_text(r))
                    );
                }
                o => {
                    let _ = write!(
                        s,
                        "<system-out>{}: {}</system-out>",
                        o.name(),
                        esc(&r.summary)
                    );
                }
            }
            s.push_str("</testcase>\n");
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

/// The case's rules and the shipped bugs it catches, as JUnit properties of its test case.
fn junit_properties(c: &Case) -> String {
    let mut s = format!(
        "<properties><property name=\"rules\" value=\"{}\"/>",
        esc(&c.rules.join(", "))
    );
    if !c.bugs.is_empty() {
        let _ = write!(
            s,
            "<property name=\"bugs\" value=\"{}\"/>",
            esc(&c.bugs.join(", "))
        );
    }
    s.push_str("</properties>");
    s
}

/// The bugs a case catches, after its rules: nothing when it cites none.
fn bugs_text(c: &Case) -> String {
    if c.bugs.is_empty() {
        String::new()
    } else {
        format!("; bugs: {}", c.bugs.join(", "))
    }
}

fn checks_text(r: &CaseResult) -> String {
    r.checks
        .iter()
        .map(|c| format!("[{}] {} ({}): {}", c.status, c.rule, c.level, c.message))
        .collect::<Vec<_>>()
        .join("\n")
}

fn class(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Informational => "info",
        Outcome::Unsupported => "unsup",
        Outcome::NonStrict => "nonstrict",
        Outcome::Fail => "fail",
        Outcome::NotExercised => "unexercised",
        Outcome::AdapterBroken => "broken",
    }
}

fn expectation(c: &Case) -> String {
    use super::cases::Expect;
    if c.id.starts_with("probe.") {
        // `cqlframe probe` cases: the server is under test, the description says what it must do.
        return "the server answers as the description says".to_string();
    }
    let s = &c.server;
    let mut parts = vec![format!(
        "workload <code>{}</code>; ks.t has {} rows of {} bytes",
        esc(&c.client.action),
        s.rows,
        s.row_size
    )];
    if let Some(f) = &s.fault {
        parts.push(format!(
            "fault <code>{}</code> in the first response to a query on ks.t",
            f.kind
        ));
    }
    if s.chop > 0 {
        parts.push(format!(
            "server writes in {}-byte chunks with TCP_NODELAY",
            s.chop
        ));
    }
    parts.push(format!(
        "server frames hold at most {} bytes, sequences from {} bytes",
        s.capacity,
        s.split_at.unwrap_or(s.capacity)
    ));
    parts.push(
        match c.expect {
            Expect::Rows => "the application gets exactly the server's rows; the server's receiver accepts every byte the driver sends",
            Expect::Ok => "every request succeeds; the server's receiver accepts every byte the driver sends",
            Expect::Reject => "the request fails or the connection is dropped; the application never gets data from the faulty response, and the driver stops using that connection",
            Expect::Any => "the application's outcome is not judged, only the driver's bytes and connections (and that the adapter finishes)",
        }
        .to_string(),
    );
    parts.join("; ")
}

/// `rules`, each a link to where the spec states it; the harness's own checks (the adapter
/// contract, read boundaries) name no rule of the spec.
fn rule_links<S: AsRef<str>>(rules: &[S]) -> String {
    rules
        .iter()
        .map(|r| match r.as_ref() {
            own @ (CONTRACT_RULE | READ_BOUNDARIES_RULE) => own.to_string(),
            rule => format!("<a href=\"{}\">{}</a>", esc(&spec_anchor(rule)), esc(rule)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The reports' style sheet: outcomes by colour, wire-log lines by direction.
pub(crate) const STYLE: &str = r#"<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
.pass{background:#d8f5d0}.fail{background:#f8c8c8}.nonstrict{background:#fbe3b5}.unsup{background:#e4e4e4}.info{background:#d5e6fa}.unexercised{background:#fff3a8}.broken{background:#c9a0dc}
code,pre{font-family:ui-monospace,monospace;font-size:12px}pre{background:#f6f6f6;padding:6px;overflow-x:auto;max-height:500px}
.pcap{font-size:10px;color:#555}.c2s{color:#064}.s2c{color:#039}.note{color:#a40}details{margin:4px 0}h2{border-bottom:1px solid #ccc}
</style>"#;

/// A connection's wire log as the reports show it, one line per frame, envelope or event.
pub(crate) fn wire_log_html(lines: &[crate::wire_log::Line], dropped: usize) -> String {
    let mut s = String::new();
    for l in lines {
        let _ = writeln!(
            s,
            "<span class={}>{:9.1} ms {:4} {}</span>",
            l.dir.name(),
            l.t_ms,
            l.dir.name(),
            esc(&l.text)
        );
    }
    if dropped > 0 {
        let _ = writeln!(s, "... {dropped} more lines not kept");
    }
    s
}

/// The report page; `spec_beside` says whether the rendered spec was copied beside it.
fn html(run: &Run, spec_beside: bool) -> String {
    let mut s = String::new();
    s.push_str(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>CQL framing conformance report</title>
"#,
    );
    s.push_str(STYLE);
    s.push_str(
        r#"</head><body>
<h1>CQL native protocol framing: conformance report</h1>
"#,
    );
    let _ = writeln!(
        s,
        "<p>{} cases, {} drivers, {:.0} s. Outcomes: <span class=pass>PASS</span> <span class=info>INFORMATIONAL</span> <span class=unsup>UNSUPPORTED</span> <span class=nonstrict>NON-STRICT</span> (a SHOULD not met) <span class=fail>FAIL</span> (a MUST broken); no verdict: <span class=unexercised>NOT-EXERCISED</span> (the case could not be delivered as written) <span class=broken>ADAPTER-BROKEN</span> (the adapter broke its contract). Each rule ID links to its text in the spec as the kit's <code>spec/build.sh</code> renders it, <code>{SPEC_PAGE}</code> beside this page: {}.</p>",
        run.cases.len(),
        run.drivers.len(),
        run.seconds,
        if spec_beside {
            "copied here from the kit"
        } else {
            "not rendered in the kit this run came from, so render it there and copy it here"
        }
    );
    s.push_str("<h2>Summary</h2><table><tr><th>driver</th>");
    for o in Outcome::ALL {
        let _ = write!(s, "<th class={}>{}</th>", class(o), o.name());
    }
    s.push_str("<th>adapter self-check</th></tr>\n");
    for d in run.drivers {
        let n = run.counts(&d.name);
        let _ = write!(s, "<tr><td>{}</td>", esc(&d.name));
        for (i, _) in Outcome::ALL.iter().enumerate() {
            let _ = write!(s, "<td>{}</td>", n[i]);
        }
        let _ = writeln!(
            s,
            "<td>{}</td></tr>",
            match &d.self_check {
                SelfCheck::Passed => "ok (unknown case: exit 127 with a reason)".to_string(),
                SelfCheck::NotRun => "not run".to_string(),
                SelfCheck::Failed { why } => format!("BROKEN: {}", esc(why)),
            }
        );
    }
    s.push_str("</table>\n<h2>Matrix</h2><table><tr><th>case</th><th>level</th><th>rules</th>");
    for d in run.drivers {
        let _ = write!(s, "<th>{}</th>", esc(&d.name));
    }
    s.push_str("</tr>\n");
    for c in run.cases {
        let _ = write!(
            s,
            "<tr><td><a href=\"#{0}\">{0}</a></td><td>{1}</td><td>{2}{3}</td>",
            esc(&c.id),
            c.level,
            rule_links(&c.rules),
            esc(&bugs_text(c))
        );
        for d in run.drivers {
            match run.result(&d.name, &c.id) {
                Some(r) => {
                    let _ = write!(
                        s,
                        "<td class={} title=\"{}\"><a href=\"#{}--{}\">{}</a>{}</td>",
                        class(r.outcome),
                        esc(&r.summary),
                        esc(&c.id),
                        esc(&d.name),
                        r.outcome.name(),
                        r.pcap
                            .as_ref()
                            .map(|p| format!(
                                " <a class=pcap href=\"{}\" title=\"session capture\">pcap</a>",
                                esc(p)
                            ))
                            .unwrap_or_default()
                    );
                }
                None => s.push_str("<td>-</td>"),
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n<h2>Cases</h2>\n");
    for c in run.cases {
        let _ = writeln!(
            s,
            "<h3 id=\"{0}\">{0}: {1}</h3><p>{2}</p><p><b>Rules:</b> {3} ({4}){5}. <b>Expectation:</b> {6}.</p>",
            esc(&c.id),
            esc(&c.title),
            esc(&c.description),
            rule_links(&c.rules),
            c.level,
            if c.bugs.is_empty() {
                String::new()
            } else {
                format!(
                    ". <b>Catches the shipped bugs</b> (conformance/BUGS.md): {}",
                    esc(&c.bugs.join(", "))
                )
            },
            expectation(c)
        );
        for d in run.drivers {
            let Some(r) = run.result(&d.name, &c.id) else {
                continue;
            };
            let _ = writeln!(
                s,
                "<details id=\"{}--{}\"><summary><span class={}>{}</span> <b>{}</b>: {}</summary>",
                esc(&c.id),
                esc(&d.name),
                class(r.outcome),
                r.outcome.name(),
                esc(&d.name),
                esc(&r.summary)
            );
            if let Some(command) = r.rerun_shown() {
                let _ = writeln!(s, "<p>Run it again: <code>{}</code></p>", esc(command));
            }
            s.push_str("<table><tr><th>status</th><th>rule</th><th>level</th><th>check</th></tr>");
            for ch in &r.checks {
                let cl = match (ch.status, ch.level) {
                    (Status::Pass, _) => "pass",
                    (Status::Fail, Level::Must) => "fail",
                    (Status::Fail, Level::Should) => "nonstrict",
                    (Status::Info, _) => "info",
                    (Status::Unsupported, _) => "unsup",
                    (Status::NotExercised, _) => "unexercised",
                    (Status::AdapterBroken, _) => "broken",
                };
                let _ = write!(
                    s,
                    "<tr><td class={cl}>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    ch.status,
                    rule_links(&[&ch.rule]),
                    ch.level,
                    esc(&ch.message)
                );
            }
            s.push_str("</table>");
            if let Some(p) = &r.pcap {
                let _ = writeln!(
                    s,
                    "<p>Capture of the session (every connection, both directions, as the server saw them; server port shown as 9042): <a href=\"{0}\">{0}</a></p>",
                    esc(p)
                );
            }
            let _ = writeln!(
                s,
                "<p>Adapter: exit {}{} in {:.1} s: <code>{}</code></p><pre>{}</pre>",
                r.adapter.exit.map_or("none".to_string(), |c| c.to_string()),
                if r.adapter.timed_out {
                    format!(
                        " (killed with its process group at its {:.0} s limit)",
                        r.adapter.limit_seconds
                    )
                } else {
                    String::new()
                },
                r.adapter.seconds,
                esc(&r.adapter.command.join(" ")),
                esc(&serde_json::to_string_pretty(&r.adapter.report).unwrap_or_default())
            );
            if !r.adapter.stderr_tail.is_empty() {
                let _ = writeln!(
                    s,
                    "<details><summary>adapter stderr (tail)</summary><pre>{}</pre></details>",
                    esc(&r.adapter.stderr_tail)
                );
            }
            for conn in &r.server.connections {
                let _ = writeln!(
                    s,
                    "<details><summary>connection {}: {}{}, {} requests, closed by {}{}</summary><pre>",
                    conn.id,
                    esc(&conn.negotiated.map(|n| n.to_string()).unwrap_or_else(|| match conn.startup_version {
                        Some(v) => format!("v{v}, not framed"),
                        None => "not framed".to_string(),
                    })),
                    conn.refused_version
                        .map(|v| format!(" (refused protocol version {v})"))
                        .unwrap_or_default(),
                    conn.requests,
                    esc(conn.closed_by.as_deref().unwrap_or("?")),
                    conn.framing_error
                        .as_ref()
                        .map(|e| format!("; framing error in driver bytes: {}", esc(e)))
                        .unwrap_or_default()
                );
                s.push_str(&wire_log_html(&conn.log, conn.log_dropped));
                s.push_str("</pre></details>\n");
            }
            s.push_str("</details>\n");
        }
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JUnit carries a case's rules, and its bugs when it cites some, as properties.
    #[test]
    fn junit_names_the_rules_and_bugs_of_a_case() {
        let mut case = crate::conformance::load(None)
            .unwrap()
            .cases
            .into_iter()
            .find(|c| c.id == "recv.chop-2")
            .unwrap();
        case.bugs = vec!["A-1".into(), "b#2".into()];
        assert_eq!(
            junit_properties(&case),
            "<properties><property name=\"rules\" value=\"RECV-4, RECV-6\"/><property name=\"bugs\" value=\"A-1, b#2\"/></properties>"
        );
        assert_eq!(bugs_text(&case), "; bugs: A-1, b#2");
        case.bugs.clear();
        assert!(!junit_properties(&case).contains("bugs"));
        assert_eq!(bugs_text(&case), "");
    }

    /// A rule of the spec links to its anchor; the harness's own checks name none and stay text.
    #[test]
    fn rules_of_the_spec_link_to_it_and_the_harness_checks_do_not() {
        assert_eq!(
            rule_links(&["FMT-3", CONTRACT_RULE, READ_BOUNDARIES_RULE]),
            "<a href=\"framing_v6.html#FMT-3\">FMT-3</a>, adapter-contract, read-boundaries"
        );
    }
}
