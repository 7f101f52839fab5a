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
    fn sync_user(_: sync_user::Context) {}

    #[task(priority = 1, shared = [counter])]
    async fn async_user(_: async_user::Context) {}
}

fn main() {}
