//! Where the spec states a rule, so that a report can link each rule it names to its text.

/// The spec's page as `spec/build.sh` renders it (`build/spec/framing_v6.html` of the kit).
pub const SPEC_PAGE: &str = "framing_v6.html";

/// The address of `rule` in the rendered spec, relative to its folder. Each rule is stated under
/// an `[[ID]]` anchor, which Asciidoctor keeps as the element's id: the anchor is the rule ID.
pub fn spec_anchor(rule: &str) -> String {
    format!("{SPEC_PAGE}#{rule}")
}
