#[preempt::app(clock = realtime)]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }
}

fn main() {}
