#[preempt::app(cores = [p1 = 0, p7 = 1])]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn t(_: t::Context) {}
}

fn main() {}
