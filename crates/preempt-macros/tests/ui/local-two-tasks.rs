#[preempt::app]
mod app {
    #[local]
    struct Local {
        buffer: [u8; 4],
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local { buffer: [0; 4] }, init::Monotonics())
    }

    #[task(local = [buffer])]
    fn a(_: a::Context) {}

    #[task(local = [buffer])]
    fn b(_: b::Context) {}
}

fn main() {}
