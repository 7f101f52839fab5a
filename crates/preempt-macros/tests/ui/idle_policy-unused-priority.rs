#[preempt::app(idle_policy = [p3 = spin])]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2)]
    fn t(_: t::Context) {}
}

fn main() {}
