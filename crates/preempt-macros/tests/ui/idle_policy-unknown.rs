#[preempt::app(idle_policy = [p2 = busy_wait])]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2)]
    fn t(_: t::Context) {}
}

fn main() {}
