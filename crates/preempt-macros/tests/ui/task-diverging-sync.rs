#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        (Shared {}, Local {})
    }

    #[task]
    fn forever(_: forever::Context) -> ! {
        loop {}
    }
}

fn main() {}
