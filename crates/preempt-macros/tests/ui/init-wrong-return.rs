#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Local, Shared) {
        (Shared {}, Local {})
    }
}

fn main() {}
