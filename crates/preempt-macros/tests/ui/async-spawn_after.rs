#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        worker::spawn_after(1.millis()).unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2)]
    async fn worker(_: worker::Context) {}
}

fn main() {}
