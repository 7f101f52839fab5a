#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        (Shared {}, Local {})
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {}
    }

    #[task(priority = 0)]
    async fn background(_: background::Context) {}
}

fn main() {}
