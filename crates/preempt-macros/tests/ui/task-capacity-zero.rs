#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(capacity = 0)]
    fn t(_: t::Context, x: u32) {}
}

fn main() {}
