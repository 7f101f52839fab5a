#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(binds = UART0, priority = 2)]
    fn uart(_: uart::Context) {}
}

fn main() {}
