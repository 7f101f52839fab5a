//! Compile-fail tests: every misuse of `#[preempt::app]` is a spanned error with a clear
//! message. One test function, because each trybuild run compiles the whole case set.
//! Re-bless the `.stderr` files with `TRYBUILD=overwrite cargo test -p preempt-macros --test ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
