//! Helpers every `harness = false` benchmark of this crate needs: its flags and medians.
//! Included with `#[path]` (a benchmark is its own crate root); not every benchmark uses
//! every helper.
#![allow(dead_code, reason = "each benchmark uses its own subset")]

/// The value after `flag` on the command line, if any.
pub(crate) fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The median (upper of the two middle values), or `None` for no values.
pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}
