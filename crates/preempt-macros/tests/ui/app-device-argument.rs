#[preempt::app(device = lm3s6965, dispatchers = [SSI0])]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }
}

fn main() {}
