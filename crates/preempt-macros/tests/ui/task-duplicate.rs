#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task]
    fn t(_: t::Context) {}

    #[task(priority = 2)]
    fn t(_: t::Context) {}
}

fn main() {}
