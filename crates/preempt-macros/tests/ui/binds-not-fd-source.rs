#[preempt::app(main = false)]
mod app {
    #[local]
    struct Local {
        line: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local { line: 0 }, init::Monotonics())
    }

    #[task(binds = line, priority = 2)]
    fn on_line(_: on_line::Context) {}
}

fn main() {}
