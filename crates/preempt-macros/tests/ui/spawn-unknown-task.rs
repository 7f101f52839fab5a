#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        tsk::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task]
    fn task(_: task::Context) {}
}

fn main() {}
