#[preempt::app]
mod app {
    use preempt::fd::EventSource;

    #[local]
    struct Local {
        line: EventSource,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local { line: EventSource::new().unwrap() }, init::Monotonics())
    }

    #[task(binds = line, priority = 2)]
    fn on_line(_: on_line::Context, count: u64) {}
}

fn main() {}
