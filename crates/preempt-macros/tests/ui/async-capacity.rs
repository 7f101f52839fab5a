#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2, capacity = 4)]
    async fn worker(_: worker::Context) {}
}

fn main() {}
