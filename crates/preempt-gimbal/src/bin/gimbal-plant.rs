//! `gimbal-plant`: the gimbal's plant process (see `preempt_gimbal::plant`).

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::ExitCode::from(preempt_gimbal::plant::main_with_args(&argv))
}
