//! Code generation: the checked model becomes statics, context types, spawn functions, one
//! message enum, task table and executor per priority level, and `run`.
//!
//! For `mod app` with a software task `a` (priority 1, shared `x`), an async task `b` and a
//! periodic task `c` (priority 2, shared `x`) the output has this shape (names of internal
//! items start with `__preempt_`):
//!
//! ```text
//! fn main() { std::process::exit(app::run()) }          // unless `main = false`
//! mod app {
//!     use ::preempt::prelude::*;                        // Instant, Duration, Mono, Lock, exit
//!     <user items, #[shared]/#[local] structs, init, idle and task functions>
//!     static __preempt_group_0: PcpGroup;               // one per group of tasks sharing locks
//!     static __preempt_shared_x: PcpCell<T>;            // ceiling 2, group 0
//!     static __preempt_lockstat_a_x: LockStats;         // a's critical sections on x
//!     enum __preempt_Msg_p1 { a(args) }                 // one message enum per level
//!     enum __preempt_Msg_p2 { __preempt_start_b((args)), __preempt_poll_b }
//!     static __preempt_tasks_p2: [TaskControl; 2];      // b, c: kind, slots, stats
//!     static __preempt_exec_p2: Executor<__preempt_Msg_p2, 2>;
//!     static __preempt_async_b: AsyncTask;              // b's single-instance header
//!     fn __preempt_future_b(args) -> impl Future;      // builds b's proxies and context
//!     pub mod a { pub struct Context<'a>; pub fn spawn(..); pub fn spawn_after(..); .. }
//!     pub mod b { pub struct Context<'a>; pub fn spawn(..) }
//!     pub mod c { pub struct Context<'a> }              // released by the runtime
//!     pub fn run() -> i32;                              // readiness, init, prepare, executors
//!     pub fn stats() -> AppStats;  pub fn rta() -> ..;  pub fn shutdown();
//! }
//! ```
//!
//! A context holds `&'a mut` references to resource proxies that the dispatcher builds on
//! its stack for each job (`cx.shared.x: &'a mut SharedMut<'a, T>`), so `cx.shared.x.lock(..)`
//! compiles through an immutable `cx`, as in RTIC v1.
//!
//! One module per item, as `rtic-macros` does: [`names`] (the generated items' names),
//! [`shared`] and [`local`] (resource storage and access), [`context`] (the context
//! modules), [`spawn`] (spawn functions), [`levels`] (message enums, task tables, executors,
//! async tasks) and [`run`] (the preparation after `init`, `run` and `main`); [`app`] puts
//! them together in this order.

mod context;
mod levels;
mod local;
mod names;
mod run;
mod shared;
mod spawn;

use proc_macro2::TokenStream;
use quote::quote;

use crate::analyze::Analysis;
use crate::codegen::context::allow_mut_context;
use crate::parse::App;

/// Generates the whole expansion.
pub(crate) fn app(app: &App, analysis: &Analysis) -> TokenStream {
    let module = &app.module;
    let mod_ident = &module.ident;
    let mod_vis = &module.vis;
    let mod_attrs = &module.attrs;

    let user_items = &app.user_items;
    let shared_struct = match &app.shared.item {
        Some(item) => quote!(#item),
        None => quote! {
            /// The shared resources (none).
            struct Shared {}
        },
    };
    let local_struct = match &app.local.item {
        Some(item) => quote!(#item),
        None => quote! {
            /// The local resources (none).
            struct Local {}
        },
    };

    let mut items: Vec<TokenStream> = Vec::new();

    let lockstats = shared::statics(app, analysis, &mut items);
    local::statics(app, &mut items);
    let (idle_plans, task_plans) = context::modules(app, analysis, &mut items);
    levels::async_tasks(app, &task_plans, &mut items);
    let executor_refs = levels::executors(app, analysis, &task_plans, &mut items);
    let prepare = run::prepare(app, analysis, &mut items);
    run::entry(
        app,
        idle_plans.as_deref(),
        &executor_refs,
        &lockstats,
        &prepare,
        &mut items,
    );
    let main = run::main(app);

    let init_item = allow_mut_context(&app.init.item);
    let idle_item = app.idle.as_ref().map(|i| allow_mut_context(&i.item));
    let task_items = app
        .tasks
        .iter()
        .filter(|t| !t.is_extern)
        .map(|t| allow_mut_context(&t.item));

    quote! {
        #main

        #(#mod_attrs)*
        #mod_vis mod #mod_ident {
            #[allow(unused_imports)]
            use ::preempt::prelude::*;

            #(#user_items)*

            #shared_struct
            #local_struct

            #init_item
            #idle_item
            #(#task_items)*

            #(#items)*
        }
    }
}
