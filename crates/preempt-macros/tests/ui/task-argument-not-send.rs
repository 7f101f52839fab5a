#[preempt::app(main = false)]
mod app {
    use std::rc::Rc;

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task]
    fn t(_: t::Context, x: Rc<u32>) {}
}

fn main() {}
