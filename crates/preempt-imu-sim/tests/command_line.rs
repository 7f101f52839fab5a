//! The command line of `imu-sim`: `--help` prints the usage on stdout and exits 0, a bad flag
//! exits 2 naming it.

#[path = "../../preempt-rig/tests/support/command_line.rs"]
mod command_line;

#[test]
fn help_prints_the_usage_on_stdout_and_exits_0_and_a_bad_flag_exits_2() {
    command_line::assert_help_and_bad_flag(env!("CARGO_BIN_EXE_imu-sim"));
}
