#[preempt::app]
mod app {
    extern "Rust" {
        #[init]
        fn init(_: init::Context) -> (Shared, Local);
    }
}

fn main() {}
