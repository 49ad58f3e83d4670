//! The README's "Testing a processor": its code is this crate's
//! `tests/readme/testing_a_processor.rs`, compiled and run here, and the README shows exactly
//! that file.

include!("../readme/testing_a_processor.rs");

#[test]
fn the_readme_shows_the_test_that_runs_here() {
    let readme = include_str!("../../README.md");
    let code = include_str!("../readme/testing_a_processor.rs");
    assert!(
        readme.contains(&format!("```rust\n{code}```\n")),
        "the README's \"Testing a processor\" block differs from tests/readme/testing_a_processor.rs"
    );
}
