#[preempt::app]
mod app {
    #[task]
    fn t(_: t::Context) {}
}

fn main() {}
