//! The app's entry points: the preparation after `init` (async slots, timing, fds), `run`,
//! `stats`, `rta`, `shutdown`, the app descriptor, and `main` with the global allocator.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use crate::analyze::Analysis;
use crate::codegen::names::{
    allows, async_static, bound_static, executor_static, future_fn, index_in_level, local_static,
    shared_static, tasks_static,
};
use crate::codegen::shared::{SharedPlan, build_context};
use crate::parse::{App, IdlePolicy, LocalAccess, OnPanic, RtSafety, TaskKind};

/// The statements `prepare` runs after `init`, before the executors start: allocate the
/// async tasks' slots, set periods, deadlines and minimum inter-arrival times, register the
/// hardware tasks' fds. Compile-time assertions on fd sources are pushed to `items`.
pub(crate) fn prepare(
    app: &App,
    analysis: &Analysis,
    items: &mut Vec<TokenStream>,
) -> Vec<TokenStream> {
    // The run-time preparation after init: async slots, periods and deadlines, fds.
    let mut prepare = Vec::new();
    for (t, task) in app.tasks.iter().enumerate() {
        let name = task.name();
        let name_str = name.to_string();
        let table = tasks_static(task.priority);
        let k = index_in_level(analysis, app, t);
        if task.kind == TaskKind::Async {
            let header = async_static(name);
            let future = future_fn(name);
            let cfgs = &task.cfgs;
            prepare.push(quote!(#(#cfgs)* #header.allocate(#future);));
        }
        if task.period.is_some() || task.deadline.is_some() || task.min_interarrival.is_some() {
            let what_p = format!("`period` of task `{name_str}`");
            let what_d = format!("`deadline` of task `{name_str}`");
            let what_m = format!("`min_interarrival` of task `{name_str}`");
            let interarrival = match &task.min_interarrival {
                Some(m) => {
                    let e = &m.expr;
                    quote!(::preempt::__private::duration_ns(#what_m, #e)?)
                }
                None => quote!(0_u64),
            };
            let period = match &task.period {
                Some(p) => {
                    let e = &p.expr;
                    quote!(::preempt::__private::duration_ns(#what_p, #e)?)
                }
                None => quote!(0_u64),
            };
            let deadline = match &task.deadline {
                Some(d) => {
                    let e = &d.expr;
                    quote!(::preempt::__private::duration_ns(#what_d, #e)?)
                }
                None => quote!(0_u64),
            };
            prepare.push(quote! {
                {
                    let __preempt_p: u64 = #period;
                    let __preempt_d: u64 = #deadline;
                    if __preempt_p > 0 && __preempt_d > __preempt_p {
                        return ::core::result::Result::Err(::std::format!(
                            "task `{}`: its deadline ({} ns) is longer than its period ({} ns); \
                             the runtime and the response-time analysis need deadline <= period",
                            #name_str, __preempt_d, __preempt_p
                        ));
                    }
                    #table[#k].set_timing(__preempt_p, __preempt_d, #interarrival);
                }
            });
        }
        if let Some(field) = &task.binds {
            let Some(f) = app.local.fields.iter().find(|f| f.ident == *field) else {
                continue; // reported by check
            };
            let ty = &f.ty;
            let st = bound_static(field);
            let exec = executor_static(task.priority);
            let field_str = field.to_string();
            items.push(quote! {
                const _: () = ::preempt::__private::assert_fd_source::<#ty>();
            });
            prepare.push(quote! {
                #exec.register_fd(
                    #k,
                    // SAFETY: `init` wrote the local resources before `prepare` runs, and no
                    // executor runs yet.
                    ::preempt::__private::fd_of(unsafe { #st.get() }),
                ).map_err(|e| ::std::format!(
                    "cannot watch the fd in `{}` for hardware task `{}` (binds = {}): {}",
                    #field_str, #name_str, #field_str, e
                ))?;
            });
        }
    }
    prepare
}

/// The app descriptor, `idle`'s entry, `run`, `stats`, `rta` and `shutdown`, pushed to
/// `items`.
pub(crate) fn entry(
    app: &App,
    idle_plans: Option<&[SharedPlan]>,
    executor_refs: &[TokenStream],
    lockstats: &[Ident],
    prepare: &[TokenStream],
    items: &mut Vec<TokenStream>,
) {
    let allows = allows();
    let mod_ident = &app.module.ident;

    // run(), stats(), rta(), shutdown(), the app descriptor.
    let app_name = mod_ident.to_string();
    let on_panic = match app.args.on_panic {
        OnPanic::Stop => quote!(::preempt::__private::OnPanic::Stop),
        OnPanic::Continue => quote!(::preempt::__private::OnPanic::Continue),
    };
    let stack_size = app.args.stack_size;
    let cores: Vec<TokenStream> = app
        .args
        .cores
        .iter()
        .map(|b| {
            let p = b.priority;
            let cpus = &b.cpus;
            quote!((#p, &[#(#cpus),*]))
        })
        .collect();
    let idle_policies: Vec<TokenStream> = app
        .args
        .idle
        .iter()
        .map(|b| {
            let p = b.priority;
            let policy = match b.policy {
                IdlePolicy::Sleep => quote!(::preempt::__private::IdlePolicy::Sleep),
                IdlePolicy::Spin => quote!(::preempt::__private::IdlePolicy::Spin),
                IdlePolicy::SpinThenSleep(us) => {
                    let ns = us.saturating_mul(1_000);
                    quote!(::preempt::__private::IdlePolicy::SpinThenSleep(#ns))
                }
            };
            quote!((#p, #policy))
        })
        .collect();
    let (accounting, summary, mock) = (app.args.accounting, app.args.summary, app.args.mock_clock);
    let explain = app.args.explain;
    let rt_safety = match app.args.rt_safety {
        Some(RtSafety::Off) => quote!(::preempt::rt_safety::Mode::Off),
        Some(RtSafety::Warn) => quote!(::preempt::rt_safety::Mode::Warn),
        Some(RtSafety::Abort) => quote!(::preempt::rt_safety::Mode::Abort),
        // Evaluated in the app's crate, with its build's `debug_assertions`.
        None => quote! {
            if ::core::cfg!(debug_assertions) {
                ::preempt::rt_safety::Mode::Warn
            } else {
                ::preempt::rt_safety::Mode::Off
            }
        },
    };
    let metrics = match &app.args.metrics {
        Some(addr) => quote!(::core::option::Option::Some(#addr)),
        None => quote!(::core::option::Option::None),
    };

    let init_ident = &app.init.item.sig.ident;
    let mut shared_writes = Vec::new();
    let mut shared_binds = Vec::new();
    for field in &app.shared.fields {
        let f = &field.ident;
        let cfgs = &field.cfgs;
        let tmp = format_ident!("__preempt_s_{}", f);
        let st = shared_static(f);
        shared_binds.push(quote!(#(#cfgs)* #f: #tmp));
        shared_writes.push(quote!(#(#cfgs)* #st.write(#tmp);));
    }
    let mut local_binds = Vec::new();
    for field in &app.local.fields {
        let f = &field.ident;
        let cfgs = &field.cfgs;
        let tmp = format_ident!("__preempt_l_{}", f);
        let st = local_static("", &LocalAccess::Struct(f.clone()));
        local_binds.push(quote!(#(#cfgs)* #f: #tmp));
        shared_writes.push(quote!(#(#cfgs)* #st.write(#tmp);));
    }
    let init_pattern = if app.init.monotonics {
        quote!((Shared { #(#shared_binds),* }, Local { #(#local_binds),* }, _))
    } else {
        quote!((Shared { #(#shared_binds),* }, Local { #(#local_binds),* }))
    };
    let (idle_entry, idle_arg) = match (&app.idle, &idle_plans) {
        (Some(idle), Some(plans)) => {
            let ident = &idle.item.sig.ident;
            let build = build_context(plans, ident);
            (
                quote! {
                    #allows
                    fn __preempt_idle_entry() {
                        #build
                        #ident(cx);
                    }
                },
                quote!(::core::option::Option::Some(__preempt_idle_entry as fn())),
            )
        }
        _ => (quote!(), quote!(::core::option::Option::None)),
    };

    items.push(quote! {
        #allows
        #[doc(hidden)]
        static __preempt_APP: ::preempt::__private::App = ::preempt::__private::App::new(
            ::preempt::__private::AppConfig {
                name: #app_name,
                on_panic: #on_panic,
                stack_size: #stack_size,
                cores: &[#(#cores),*],
                executors: &[#(#executor_refs),*],
                idle: &[#(#idle_policies),*],
                accounting: #accounting,
                summary: #summary,
                mock_clock: #mock,
                explain: #explain,
                locks: &[#(&#lockstats),*],
                metrics: #metrics,
                rt_safety: #rt_safety,
            },
        );

        #idle_entry

        /// Runs the application and returns its exit code.
        ///
        /// Checks that the process may run real-time threads (RLIMIT_RTPRIO, CAP_SYS_NICE,
        /// RLIMIT_MEMLOCK; `PREEMPT_SOFT=1` runs under SCHED_OTHER instead), locks memory,
        /// runs `init`, then starts one SCHED_FIFO executor thread per priority level and waits
        /// until a task calls [`preempt::exit`](::preempt::exit) or [`shutdown`].
        #allows
        pub fn run() -> i32 {
            ::preempt::__private::run(
                &__preempt_APP,
                ::preempt::__private::Entry {
                    init: &mut || {
                        let #init_pattern =
                            // SAFETY (`init::Context::__preempt_new`): `run` calls this
                            // closure once, before any executor exists, so init's `&'static
                            // mut` locals (declared cells, initialised) have no other user.
                            #init_ident(unsafe { #init_ident::Context::__preempt_new() });
                        // SAFETY (`StaticCell::write`, `PcpCell::write`): no executor or
                        // idle thread runs yet and `init`'s context is gone, so no reference
                        // to these cells exists; each is written exactly once, here.
                        unsafe { #(#shared_writes)* }
                    },
                    prepare: &mut || -> ::core::result::Result<(), ::std::string::String> {
                        #(#prepare)*
                        ::core::result::Result::Ok(())
                    },
                    idle: #idle_arg,
                },
            )
        }

        /// A snapshot of the app's accounting: per task its releases, release latency,
        /// execution time, deadline misses and page faults; per PCP resource its measured
        /// critical sections. Callable at any time, from any thread.
        #allows
        pub fn stats() -> ::preempt::AppStats {
            __preempt_APP.stats()
        }

        /// Response-time analysis of the tasks from their measured execution times and
        /// critical sections (see `preempt::stats`).
        #allows
        pub fn rta() -> ::core::result::Result<::preempt::rta::Report, ::preempt::rta::RtaError> {
            stats().rta()
        }

        /// Stops the application: running tasks finish, no new task starts, and [`run`]
        /// returns 0.
        #allows
        pub fn shutdown() {
            ::preempt::__private::shutdown(&__preempt_APP, 0);
        }
    });
}

/// `main` and the global allocator, unless `main = false`.
pub(crate) fn main(app: &App) -> TokenStream {
    let mod_ident = &app.module.ident;
    if app.args.main {
        // One per program, like `main`: the allocator that sees the real-time jobs'
        // allocations (`preempt::rt_safety`); `global_allocator = false` leaves it out. Not in
        // test builds, where libtest's `main` is the program's and one test crate may hold
        // several apps (a test that checks allocations declares `CheckedAlloc` itself).
        let allocator = if app.args.global_allocator {
            quote! {
                #[cfg(not(test))]
                #[global_allocator]
                static __PREEMPT_ALLOCATOR: ::preempt::rt_safety::CheckedAlloc =
                    ::preempt::rt_safety::CheckedAlloc::SYSTEM;
            }
        } else {
            quote!()
        };
        quote! {
            #allocator

            #[allow(dead_code)]
            fn main() {
                ::std::process::exit(#mod_ident::run())
            }
        }
    } else {
        quote!()
    }
}
