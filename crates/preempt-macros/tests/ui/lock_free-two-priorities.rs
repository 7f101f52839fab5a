#[preempt::app]
mod app {
    #[shared]
    struct Shared {
        #[lock_free]
        counter: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared { counter: 0 }, Local {}, init::Monotonics())
    }

    #[task(priority = 1, shared = [counter])]
    fn low(_: low::Context) {}

    #[task(priority = 2, shared = [counter])]
    fn high(_: high::Context) {}
}

fn main() {}
