#[preempt::app]
mod app {
    #[shared]
    struct Shared {
        a: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared { a: 0 }, Local {}, init::Monotonics())
    }

    #[task(shared = [a, missing])]
    fn t(_: t::Context) {}
}

fn main() {}
