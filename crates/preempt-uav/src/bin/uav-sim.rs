//! The quadrotor simulator process (see `preempt_uav::sim`).

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::ExitCode::from(preempt_uav::sim::main_with_args(&argv))
}
