#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        (Shared {}, Local {})
    }

    #[task(local_task = true)]
    fn t(_: t::Context) {}
}

fn main() {}
