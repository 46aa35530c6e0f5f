//! Counts of the vectors where the documentation states them, filled in from the cases so that
//! no count is typed by hand. A document marks each generated span as
//! `<!-- vectors:NAME -->...<!-- /vectors -->`; generation replaces what is between the markers,
//! and `vectors verify` fails when a committed document differs.

use super::{Case, Group, Input};
use std::fmt::Write;

/// Documents with generated spans, relative to the repository root.
pub const DOCS: [&str; 2] = ["vectors/README.md", "kaitai/README.md"];

const OPEN: &str = "<!-- vectors:";
const CLOSE: &str = "<!-- /vectors -->";

/// `text` with every marked span replaced by its value.
pub fn fill(text: &str, cases: &[Case]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let name_end = after
            .find(" -->")
            .ok_or("a `<!-- vectors:` marker is not closed by ` -->`")?;
        let name = &after[..name_end];
        let body = &after[name_end + " -->".len()..];
        let end = body
            .find(CLOSE)
            .ok_or_else(|| format!("span `{name}` has no `{CLOSE}`"))?;
        out.push_str(&rest[..start]);
        let _ = write!(out, "{OPEN}{name} -->{}{CLOSE}", value(name, cases)?);
        rest = &body[end + CLOSE.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

fn value(name: &str, cases: &[Case]) -> Result<String, String> {
    let frames = |c: &&Case| matches!(c.input, Input::Frames { .. });
    let count = |keep: &dyn Fn(&&Case) -> bool| cases.iter().filter(keep).count().to_string();
    Ok(match name {
        "cases" => cases.len().to_string(),
        "frames" => count(&frames),
        "sessions" => count(&|c| c.group == Group::Sessions),
        "frames-crc32c" => count(&|c| frames(c) && c.id.contains(".crc32c.")),
        "summary" => summary(cases),
        "groups" => groups(cases),
        _ => return Err(format!("unknown generated span `{name}`")),
    })
}

/// The totals, and the frames cases by setting.
fn summary(cases: &[Case]) -> String {
    let valid = cases.iter().filter(|c| c.breaks.is_none()).count();
    let sessions = cases.iter().filter(|c| c.group == Group::Sessions).count();
    let mut settings: Vec<(String, usize)> = Vec::new();
    for case in cases {
        if let Input::Frames { settings: s, .. } = &case.input {
            let tag = format!("{}/{}", s.format.name(), s.checksum.name());
            match settings.iter_mut().find(|(t, _)| *t == tag) {
                Some((_, n)) => *n += 1,
                None => settings.push((tag, 1)),
            }
        }
    }
    let by_setting = settings
        .iter()
        .map(|(tag, n)| format!("{tag} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "The generator emits {} cases: {} frames cases and {sessions} session cases. {valid} are \
         valid and {} invalid. By setting, the frames cases are: {by_setting}.",
        cases.len(),
        cases.len() - sessions,
        cases.len() - valid
    )
}

/// The table of case groups: counts, and the case names after their setting prefix.
fn groups(cases: &[Case]) -> String {
    let mut out = String::from(
        "\n| group | cases | valid | invalid | names (after `<format>.<checksum>.` or `session.`) |\n\
         | --- | ---: | ---: | ---: | --- |\n",
    );
    for group in Group::ALL {
        let members: Vec<&Case> = cases.iter().filter(|c| c.group == group).collect();
        let valid = members.iter().filter(|c| c.breaks.is_none()).count();
        let names =
            |want_valid: bool| names(members.iter().filter(|c| c.breaks.is_none() == want_valid));
        let (good, bad) = (names(true), names(false));
        let listed = match (good.is_empty(), bad.is_empty()) {
            (_, true) => good,
            (true, false) => bad,
            (false, false) => format!("{good}; invalid: {bad}"),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {valid} | {} | {listed} |",
            group.label(),
            members.len(),
            members.len() - valid
        );
    }
    out
}

/// Distinct names in order of first appearance, with how many settings each exists in.
fn names<'a>(cases: impl Iterator<Item = &'a &'a Case>) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for case in cases {
        let name = match &case.input {
            Input::Frames { .. } => case.id.splitn(3, '.').nth(2).unwrap_or(&case.id),
            Input::Session(_) => case.id.trim_start_matches("session."),
        };
        match seen.iter_mut().find(|(n, _)| *n == name) {
            Some((_, k)) => *k += 1,
            None => seen.push((name, 1)),
        }
    }
    let uniform = seen.windows(2).all(|w| w[0].1 == w[1].1);
    let times = |k: usize| {
        if k > 1 {
            format!(" (× {k})")
        } else {
            String::new()
        }
    };
    let list = |each: bool| {
        seen.iter()
            .map(|(n, k)| format!("`{n}`{}", if each { times(*k) } else { String::new() }))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match seen.first() {
        Some((_, k)) if uniform => format!("{}{}", list(false), times(*k)),
        _ => list(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_replaced_and_the_rest_kept() {
        let cases = super::super::cases();
        let text = "a <!-- vectors:cases -->0<!-- /vectors --> b <!-- vectors:frames -->x<!-- /vectors -->";
        let filled = fill(text, &cases).unwrap();
        let frames = cases
            .iter()
            .filter(|c| matches!(c.input, Input::Frames { .. }))
            .count();
        assert_eq!(
            filled,
            format!(
                "a <!-- vectors:cases -->{}<!-- /vectors --> b <!-- vectors:frames -->{frames}<!-- /vectors -->",
                cases.len()
            )
        );
        assert_eq!(fill(&filled, &cases).unwrap(), filled);
    }

    #[test]
    fn unknown_or_unclosed_spans_fail() {
        let cases = super::super::cases();
        assert!(fill("<!-- vectors:nope -->1<!-- /vectors -->", &cases).is_err());
        assert!(fill("<!-- vectors:cases -->1", &cases).is_err());
    }
}
