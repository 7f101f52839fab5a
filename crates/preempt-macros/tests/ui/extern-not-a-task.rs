#[preempt::app]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        (Shared {}, Local {})
    }

    extern "Rust" {
        async fn helper(cx: helper::Context);
    }
}

fn main() {}
