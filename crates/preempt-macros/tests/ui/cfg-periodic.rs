#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        (Shared {}, Local {})
    }

    #[cfg(feature = "never")]
    #[task(priority = 2, period = 1.millis())]
    fn tick(_: tick::Context) {}
}

fn main() {}
