#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2, on_miss = Skip)]
    fn t(_: t::Context) {}
}

fn main() {}
