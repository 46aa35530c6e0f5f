//! The golden vectors under `cargo test`: the committed files (manifest, cases, session
//! captures, the spec's generated examples) equal a fresh generation by the reference, and
//! every case decodes as its manifest entry says in every chunking.

use std::path::Path;

#[test]
fn committed_vectors_equal_a_fresh_generation_and_decode_as_expected() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match cqlframe_harness::vectors::verify(&root) {
        Ok(n) => assert!(n > 0, "no vector verified"),
        Err(problems) => panic!(
            "{} problems (regenerate with `cqlframe vectors generate` after a deliberate change):\n{}",
            problems.len(),
            problems.join("\n")
        ),
    }
}
