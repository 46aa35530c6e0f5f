//! The proxy's reports when it stops, the conformance run's three: `report.json` (versioned:
//! schemas/proxy-report.schema.json), `junit.xml` (a test case per connection and per rule
//! broken on it) and `index.html` (each connection's summary, rules and wire log).

use super::Outcome;
use crate::check::{summary_text, violation_line};
use crate::conformance::report::{esc, wire_log_html, STYLE};
use crate::verdict::Level;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// The report.json document.
pub fn json(o: &Outcome) -> Value {
    json!({
        "format": crate::output::PROXY_REPORT,
        "tool": "cqlframe proxy",
        "version": env!("CARGO_PKG_VERSION"),
        "listen": o.listen.to_string(),
        "upstream": o.upstream,
        "seconds": o.seconds,
        "limits": {
            "connections": o.limits.connections,
            "idle_seconds": o.limits.idle.as_secs_f64(),
            "max_body": o.limits.max_body,
        },
        "chop": (o.chop > 0).then_some(o.chop),
        "fault": o.fault.map(|(f, expect)| json!({
            "kind": f.kind,
            "rule": f.kind.rule(),
            "to": match f.from { crate::pcap::write::Peer::Server => "client", crate::pcap::write::Peer::Client => "server" },
            "connection": f.connection,
            "after": f.after,
            "expect_fault": expect,
            "applied": o.faults_applied,
        })),
        "verdict": if o.broke_must() { "FAIL" } else { "PASS" },
        "totals": o.totals,
        "refused_connections": o.refused_connections,
        "upstream_failures": o.upstream_failures,
        "connections_not_kept": o.connections_not_kept,
        "reactions": o.reactions,
        "capture_error": o.capture_error,
        "connections": o.connections.iter().map(|c| &c.summary).collect::<Vec<_>>(),
    })
}

/// Writes report.json, junit.xml and index.html into `dir`.
pub fn write_all(o: &Outcome, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let doc = serde_json::to_string_pretty(&json(o)).expect("serialisable");
    std::fs::write(dir.join("report.json"), doc)?;
    std::fs::write(dir.join("junit.xml"), junit(o))?;
    std::fs::write(dir.join("index.html"), html(o))?;
    Ok(())
}

fn junit(o: &Outcome) -> String {
    let mut cases = String::new();
    let (mut tests, mut failures) = (0, 0);
    for r in &o.reactions {
        tests += 1;
        failures += usize::from(r.level == Level::Must);
        let _ = writeln!(
            cases,
            "    <testcase classname=\"proxy.connection-{}\" name=\"{} driver reaction\"><failure message=\"{}\">{}</failure></testcase>",
            r.connection,
            r.rule,
            esc(&r.message),
            esc(&r.line())
        );
    }
    for c in &o.connections {
        let s = &c.summary;
        let class = format!("proxy.connection-{}", s.id);
        tests += 1;
        let _ = writeln!(
            cases,
            "    <testcase classname=\"{class}\" name=\"connection\"><system-out>{}</system-out></testcase>",
            esc(&summary_text(s, false))
        );
        for v in &s.rules {
            tests += 1;
            let f = &v.rule.first;
            let name = format!("{} {}", f.rule, f.direction.name());
            let line = violation_line(v);
            let _ = write!(
                cases,
                "    <testcase classname=\"{class}\" name=\"{}\">",
                esc(&name)
            );
            if f.level == Level::Must {
                failures += 1;
                let _ = write!(
                    cases,
                    "<failure message=\"{}\">{}</failure>",
                    esc(line.trim()),
                    esc(&line)
                );
            } else {
                let _ = write!(cases, "<system-out>{}</system-out>", esc(&line));
            }
            cases.push_str("</testcase>\n");
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cqlframe proxy\">\n  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{:.3}\">\n{cases}  </testsuite>\n</testsuites>\n",
        esc(&o.upstream),
        o.seconds
    )
}

fn html(o: &Outcome) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>CQL framing: proxy report</title>\n",
    );
    s.push_str(STYLE);
    s.push_str("</head><body>\n<h1>CQL native protocol framing: proxy report</h1>\n");
    let t = &o.totals;
    let _ = writeln!(
        s,
        "<p>Upstream <code>{}</code>, listening on <code>{}</code>, {:.0} s{}. <span class={}>{}</span>: {} connections, {} violations (MUST), {} findings (SHOULD); {} refused past the limit of {} connections, {} could not reach the upstream{}. Rules refer to <code>spec/framing_v6.adoc</code>.</p>",
        esc(&o.upstream),
        o.listen,
        o.seconds,
        if o.chop > 0 { format!(", the node's bytes delivered in pieces of {} bytes", o.chop) } else { String::new() },
        if o.broke_must() { "fail" } else { "pass" },
        if o.broke_must() { "FAIL" } else { "PASS" },
        t.connections,
        t.violations,
        t.findings,
        o.refused_connections,
        o.limits.connections,
        o.upstream_failures,
        if o.connections_not_kept > 0 {
            format!("; {} later connections counted, not shown", o.connections_not_kept)
        } else {
            String::new()
        }
    );
    for r in &o.reactions {
        let _ = writeln!(s, "<p class=fail>{}</p>", esc(&r.line()));
    }
    for c in &o.connections {
        let sm = &c.summary;
        let class = match (sm.violations, sm.findings) {
            (0, 0) => "pass",
            (0, _) => "nonstrict",
            _ => "fail",
        };
        let _ = writeln!(
            s,
            "<details><summary><span class={class}>connection {}</span>: {}, {} violations, {} findings</summary><pre>{}</pre><pre>",
            sm.id,
            esc(sm.negotiated.as_deref().unwrap_or("not framed")),
            sm.violations,
            sm.findings,
            esc(&summary_text(sm, false))
        );
        s.push_str(&wire_log_html(&c.log.lines, c.log.dropped));
        s.push_str("</pre></details>\n");
    }
    s.push_str("</body></html>\n");
    s
}
