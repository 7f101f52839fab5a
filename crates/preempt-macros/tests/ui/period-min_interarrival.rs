#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2, period = 1.millis(), min_interarrival = 1.millis())]
    fn tick(_: tick::Context) {}
}

fn main() {}
