//! Compile-time behaviour of `#[processor]` and `agent!`: what compiles, and the error every
//! mistake gets.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
