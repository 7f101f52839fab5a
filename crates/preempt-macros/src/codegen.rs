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

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Pat, Type};

use crate::analyze::{Access, Analysis};
use crate::parse::{
    App, IdlePolicy, LocalAccess, OnMiss, OnPanic, RtSafety, SharedAccess, Task, TaskKind,
};

/// The attributes every generated item carries: the names follow the user's task names, and
/// the items are reached through the app module whatever its visibility.
fn allows() -> TokenStream {
    quote! {
        #[allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code,
                unreachable_pub, unused_unsafe, unused_mut)]
    }
}

fn shared_static(name: &Ident) -> Ident {
    format_ident!("__preempt_shared_{}", name)
}

fn local_static(owner: &str, local: &LocalAccess) -> Ident {
    match local {
        LocalAccess::Struct(ident) => format_ident!("__preempt_local_{}", ident),
        LocalAccess::Declared { ident, .. } => format_ident!("__preempt_local_{}_{}", owner, ident),
    }
}

fn bound_static(field: &Ident) -> Ident {
    local_static("", &LocalAccess::Struct(field.clone()))
}

fn lockstat_static(owner: &str, resource: &Ident) -> Ident {
    format_ident!("__preempt_lockstat_{}_{}", owner, resource)
}

fn msg_enum(priority: u8) -> Ident {
    format_ident!("__preempt_Msg_p{}", priority)
}

fn executor_static(priority: u8) -> Ident {
    format_ident!("__preempt_exec_p{}", priority)
}

fn tasks_static(priority: u8) -> Ident {
    format_ident!("__preempt_tasks_p{}", priority)
}

fn async_static(name: &Ident) -> Ident {
    format_ident!("__preempt_async_{}", name)
}

fn future_fn(name: &Ident) -> Ident {
    format_ident!("__preempt_future_{}", name)
}

fn wake_fn(name: &Ident) -> Ident {
    format_ident!("__preempt_wake_{}", name)
}

fn start_variant(name: &Ident) -> Ident {
    format_ident!("__preempt_start_{}", name)
}

fn poll_variant(name: &Ident) -> Ident {
    format_ident!("__preempt_poll_{}", name)
}

/// The index of task `t` in its level's task table.
fn index_in_level(analysis: &Analysis, app: &App, t: usize) -> usize {
    analysis
        .levels
        .iter()
        .find(|l| l.priority == app.tasks[t].priority)
        .and_then(|l| l.tasks.iter().position(|&i| i == t))
        .unwrap_or(0)
}

/// How a context reaches one shared resource.
struct SharedPlan {
    ident: Ident,
    /// The field type in `SharedResources<'a>`.
    field_ty: TokenStream,
    /// For proxies: the `let mut` that builds one (app-module paths) and its type;
    /// for plain references: the expression inside `__preempt_new`.
    kind: SharedKind,
    read_only: bool,
    ty: Type,
}

enum SharedKind {
    Proxy { build: TokenStream, ty: TokenStream },
    Plain(TokenStream),
}

/// Plans the shared resources of a context (task or idle) at `priority`.
fn shared_plan(
    app: &App,
    analysis: &Analysis,
    owner: &str,
    shared: &[SharedAccess],
    priority: u8,
) -> Vec<SharedPlan> {
    let mut out = Vec::new();
    for access in shared {
        let ident = &access.ident;
        let Some(field) = app.shared.fields.iter().find(|f| f.ident == *ident) else {
            continue; // reported by check
        };
        let ty = &field.ty;
        let info = &analysis.shared[&ident.to_string()];
        let st = shared_static(ident);
        let ro = access.read_only;
        let timed = app.args.accounting;
        // A `#[cfg]` resource has no critical-section record: the app's list of records is
        // an array, whose elements cannot be conditional.
        let stats = if app.args.accounting && field.cfgs.is_empty() {
            let ls = lockstat_static(owner, ident);
            quote!(::core::option::Option::Some(&#ls))
        } else {
            quote!(::core::option::Option::None)
        };
        let (field_ty, kind) = match (info.access, field.lock_free.is_some(), ro) {
            (Access::Exclusive, true, false) => (
                quote!(&'a mut #ty),
                // SAFETY: `run` wrote the cell after `init`, before any executor started;
                // every user of this `#[lock_free]` resource runs on this level's one
                // executor thread, one job at a time, so this `&mut` is the only reference.
                SharedKind::Plain(quote!(unsafe { super::#st.get_mut() })),
            ),
            (Access::Exclusive, true, true) | (Access::ReadOnly, _, _) => (
                quote!(&'a #ty),
                // SAFETY: `run` wrote the cell before any executor started; no context
                // gets a `&mut` to it (every user reads it, or the only users share this
                // level's thread and this one reads), and several threads reading it is
                // what the `assert_sync` emitted with its static allows.
                SharedKind::Plain(quote!(unsafe { super::#st.get() })),
            ),
            (Access::Exclusive, false, false) => {
                let pty = quote!(::preempt::resource::Exclusive<'a, #ty>);
                (
                    quote!(&'a mut #pty),
                    SharedKind::Proxy {
                        // SAFETY: the cell was written before the executors started, and
                        // all its users run on this level's one thread, one job at a time:
                        // the proxy of this job holds the only reference.
                        build: quote!(::preempt::resource::Exclusive::new(unsafe { #st.get_mut() })),
                        ty: pty,
                    },
                )
            }
            (Access::Exclusive, false, true) => {
                let pty = quote!(::preempt::resource::ExclusiveRef<'a, #ty>);
                (
                    quote!(&'a mut #pty),
                    SharedKind::Proxy {
                        // SAFETY: written before the executors started; its users share this
                        // level's one thread and run one job at a time, so no `&mut` to it is
                        // alive while this job reads.
                        build: quote!(::preempt::resource::ExclusiveRef::new(unsafe { #st.get() })),
                        ty: pty,
                    },
                )
            }
            (Access::Pcp { .. }, _, false) => {
                let pty = quote!(::preempt::resource::SharedMut<'a, #ty, #timed>);
                (
                    quote!(&'a mut #pty),
                    SharedKind::Proxy {
                        // SAFETY (`SharedMut::new`): `run` wrote the cell before the
                        // executors started; `#priority` is the static priority of the
                        // executor thread that dispatches this task and locks through the
                        // proxy; the dispatcher builds one proxy per job on its stack.
                        build: quote!(unsafe {
                            ::preempt::resource::SharedMut::new(&#st, #priority, #stats)
                        }),
                        ty: pty,
                    },
                )
            }
            (Access::Pcp { .. }, _, true) => {
                let pty = quote!(::preempt::resource::SharedRef<'a, #ty, #timed>);
                (
                    quote!(&'a mut #pty),
                    SharedKind::Proxy {
                        // SAFETY (`SharedRef::new`): as for `SharedMut::new` above: the cell
                        // is written before the executors start, `#priority` is the level of
                        // the locking thread, and there is one proxy per job.
                        build: quote!(unsafe {
                            ::preempt::resource::SharedRef::new(&#st, #priority, #stats)
                        }),
                        ty: pty,
                    },
                )
            }
            (Access::Unused, ..) => continue, // a used resource is never Unused
        };
        out.push(SharedPlan {
            ident: ident.clone(),
            field_ty,
            kind,
            read_only: ro,
            ty: ty.clone(),
        });
    }
    out
}

/// The statements that build a context's proxies and the context itself, bound to `cx`
/// (app-module paths).
fn build_context(plans: &[SharedPlan], module: &Ident) -> TokenStream {
    let mut lets = Vec::new();
    let mut args = Vec::new();
    for plan in plans {
        if let SharedKind::Proxy { build, .. } = &plan.kind {
            let px = format_ident!("__preempt_px_{}", plan.ident);
            lets.push(quote!(let mut #px = #build;));
            args.push(quote!(&mut #px));
        }
    }
    quote! {
        #(#lets)*
        // SAFETY: the executor of this level runs on one thread and runs one job at a time,
        // so this context is the only one of its task alive; resources were initialised
        // before the executors started.
        let cx = unsafe { #module::Context::__preempt_new(#(#args),*) };
    }
}

/// Generates the whole expansion.
pub(crate) fn app(app: &App, analysis: &Analysis) -> TokenStream {
    let allows = allows();
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

    // PCP groups.
    for g in 0..analysis.groups {
        let ident = format_ident!("__preempt_group_{}", g);
        items.push(quote! {
            #allows
            #[doc(hidden)]
            static #ident: ::preempt::__private::PcpGroup = ::preempt::__private::PcpGroup::new();
        });
    }

    // Shared resource storage, and the critical-section records of PCP resources.
    let mut lockstats: Vec<Ident> = Vec::new();
    for field in &app.shared.fields {
        let info = &analysis.shared[&field.ident.to_string()];
        let ident = shared_static(&field.ident);
        let ty = &field.ty;
        let cfgs = &field.cfgs;
        match info.access {
            Access::Pcp { group } => {
                let group = format_ident!("__preempt_group_{}", group);
                let ceiling = info.ceiling;
                items.push(quote! {
                    #allows
                    #(#cfgs)*
                    #[doc(hidden)]
                    static #ident: ::preempt::__private::PcpCell<#ty> =
                        ::preempt::__private::PcpCell::new(#ceiling, &#group);
                });
                if app.args.accounting && cfgs.is_empty() {
                    let resource = field.ident.to_string();
                    for (cx, priority, _) in &info.users {
                        let owner = match cx {
                            crate::analyze::Context::Task(i) => app.tasks[*i].name().to_string(),
                            _ => "idle".to_string(),
                        };
                        let ls = lockstat_static(&owner, &field.ident);
                        items.push(quote! {
                            #allows
                            #[doc(hidden)]
                            static #ls: ::preempt::__private::LockStats =
                                ::preempt::__private::LockStats::new(#resource, #owner, #priority, #ceiling);
                        });
                        lockstats.push(ls);
                    }
                }
            }
            Access::Exclusive | Access::ReadOnly | Access::Unused => {
                items.push(quote! {
                    #allows
                    #(#cfgs)*
                    #[doc(hidden)]
                    static #ident: ::preempt::__private::StaticCell<#ty> =
                        ::preempt::__private::StaticCell::uninit();
                });
                let priorities: std::collections::BTreeSet<u8> =
                    info.users.iter().map(|u| u.1).collect();
                if info.access == Access::ReadOnly && priorities.len() > 1 {
                    // `&T` reaches several threads at once.
                    items.push(quote! {
                        #(#cfgs)*
                        const _: () = ::preempt::__private::assert_sync::<#ty>();
                    });
                }
            }
        }
    }

    // Local resource storage.
    for field in &app.local.fields {
        let ident = local_static("", &LocalAccess::Struct(field.ident.clone()));
        let ty = &field.ty;
        let cfgs = &field.cfgs;
        items.push(quote! {
            #allows
            #(#cfgs)*
            #[doc(hidden)]
            static #ident: ::preempt::__private::StaticCell<#ty> =
                ::preempt::__private::StaticCell::uninit();
        });
    }
    let mut declared = |owner: &str, locals: &[LocalAccess], cfgs: &[syn::Attribute]| {
        for local in locals {
            if let LocalAccess::Declared { ty, expr, .. } = local {
                let ident = local_static(owner, local);
                items.push(quote! {
                    #allows
                    #(#cfgs)*
                    #[doc(hidden)]
                    static #ident: ::preempt::__private::StaticCell<#ty> =
                        ::preempt::__private::StaticCell::new(#expr);
                });
            }
        }
    };
    declared("init", &app.init.local, &[]);
    if let Some(idle) = &app.idle {
        declared("idle", &idle.local, &[]);
    }
    for task in &app.tasks {
        declared(&task.name().to_string(), &task.local, &task.cfgs);
    }

    // Context modules.
    items.push(init_module(app));
    let idle_plans = app.idle.as_ref().map(|idle| {
        let plans = shared_plan(app, analysis, "idle", &idle.shared, 0);
        items.push(context_module(
            app,
            &idle.item.sig.ident,
            &plans,
            &idle.local,
            ModuleExtras {
                binds: None,
                spawn: None,
                static_locals: true,
                spawner: None,
            },
        ));
        plans
    });
    let mut task_plans: Vec<Vec<SharedPlan>> = Vec::new();
    for (i, task) in app.tasks.iter().enumerate() {
        let plans = shared_plan(
            app,
            analysis,
            &task.name().to_string(),
            &task.shared,
            task.priority,
        );
        let cfgs = &task.cfgs;
        let module = context_module(
            app,
            task.name(),
            &plans,
            &task.local,
            ModuleExtras {
                binds: task.binds.as_ref(),
                spawn: task_spawn(app, analysis, i),
                static_locals: task.divergent,
                spawner: local_spawner(app, task.priority),
            },
        );
        items.push(quote!(#(#cfgs)* #module));
        task_plans.push(plans);
    }

    // Async tasks: header, future constructor, wake-up.
    for (i, task) in app.tasks.iter().enumerate() {
        if task.kind != TaskKind::Async {
            continue;
        }
        let name = task.name();
        let header = async_static(name);
        let future = future_fn(name);
        let wake = wake_fn(name);
        let exec = executor_static(task.priority);
        let msg = msg_enum(task.priority);
        let poll = poll_variant(name);
        let tys: Vec<&Type> = task.inputs.iter().map(|(_, ty)| &**ty).collect();
        let args: Vec<Ident> = (0..tys.len())
            .map(|j| format_ident!("__preempt_a{}", j))
            .collect();
        let build = build_context(&task_plans[i], name);
        let name_str = name.to_string();
        let cfgs = &task.cfgs;
        items.push(quote! {
            #allows
            #(#cfgs)*
            #[doc(hidden)]
            static #header: ::preempt::__private::AsyncTask =
                ::preempt::__private::AsyncTask::new(#wake);

            #allows
            #(#cfgs)*
            #[doc(hidden)]
            fn #wake() {
                if #exec.spawn_poll(#msg::#poll).is_err() {
                    // Cannot happen: `queued` admits one Poll per task and its queues have
                    // two slots (one Start, one Poll).
                    ::std::eprintln!("preempt: lost a wake-up of async task `{}`", #name_str);
                }
            }

            #allows
            #(#cfgs)*
            #[doc(hidden)]
            fn #future((#(#args,)*): (#(#tys,)*)) -> impl ::core::future::Future<Output = ()> {
                async move {
                    #build
                    #name(cx, #(#args),*).await
                }
            }
        });
    }

    // Message enums, task tables and executors, one per level.
    let mut executor_refs = Vec::new();
    for level in &analysis.levels {
        let priority = level.priority;
        let msg = msg_enum(priority);
        let exec = executor_static(priority);
        let table = tasks_static(priority);
        let capacity = level.capacity;
        let mut variants = Vec::new();
        let mut index_arms = Vec::new();
        let mut kind_arms = Vec::new();
        let mut dispatch_arms = Vec::new();
        let mut unit_arms = Vec::new();
        let mut controls = Vec::new();
        let mut periodic = Vec::new();
        let mut hardware = Vec::new();
        for (k, &t) in level.tasks.iter().enumerate() {
            let task = &app.tasks[t];
            let name = task.name();
            let name_str = name.to_string();
            let tys: Vec<&Type> = task.inputs.iter().map(|(_, ty)| &**ty).collect();
            let args: Vec<Ident> = (0..tys.len())
                .map(|j| format_ident!("__preempt_a{}", j))
                .collect();
            let cfgs = &task.cfgs;
            // A local task's arguments stay on this level's thread (`LocalMsg`).
            if !task.local_task {
                for ty in &tys {
                    items.push(quote! {
                        #(#cfgs)*
                        const _: () = ::preempt::__private::assert_send::<#ty>();
                    });
                }
            }
            let on_miss = match task.on_miss {
                OnMiss::Burst => quote!(::preempt::__private::OnMiss::Burst),
                OnMiss::Skip => quote!(::preempt::__private::OnMiss::Skip),
                OnMiss::Delay => quote!(::preempt::__private::OnMiss::Delay),
                OnMiss::Fault => quote!(::preempt::__private::OnMiss::Fault),
            };
            let (kind, cap) = match task.kind {
                TaskKind::Software => (quote!(Software), task.capacity),
                TaskKind::Async => (quote!(Async), 2),
                TaskKind::Periodic => (quote!(Periodic), 0),
                TaskKind::Hardware => (quote!(Hardware), 0),
            };
            controls.push(quote! {
                ::preempt::__private::TaskControl::new(
                    #name_str, ::preempt::__private::TaskKind::#kind, #cap, #on_miss)
            });
            let build = build_context(&task_plans[t], name);
            match task.kind {
                TaskKind::Software => {
                    let (variant, pattern) = match tys.len() {
                        0 => (quote!(#name), quote!(#msg::#name)),
                        1 => (quote!(#name(#(#tys)*)), quote!(#msg::#name(#(#args)*))),
                        _ => (
                            quote!(#name((#(#tys),*))),
                            quote!(#msg::#name((#(#args),*))),
                        ),
                    };
                    let any = if tys.is_empty() {
                        quote!(#msg::#name)
                    } else {
                        quote!(#msg::#name(..))
                    };
                    variants.push(quote!(#(#cfgs)* #variant));
                    index_arms.push(quote!(#(#cfgs)* #any => #k,));
                    kind_arms.push(quote!(#(#cfgs)* #any => ::preempt::__private::MsgKind::Job,));
                    dispatch_arms.push(quote! {
                        #(#cfgs)*
                        #pattern => {
                            #build
                            #name(cx, #(#args),*);
                            ::preempt::__private::Dispatched::Done
                        }
                    });
                }
                TaskKind::Async => {
                    let start = start_variant(name);
                    let poll = poll_variant(name);
                    let header = async_static(name);
                    let future = future_fn(name);
                    let (payload, args) = if task.local_task {
                        (
                            quote!(::preempt::__private::LocalMsg<(#(#tys,)*)>),
                            quote!(__preempt_args.into_inner()),
                        )
                    } else {
                        (quote!((#(#tys,)*)), quote!(__preempt_args))
                    };
                    variants.push(quote!(#(#cfgs)* #start(#payload)));
                    variants.push(quote!(#(#cfgs)* #poll));
                    index_arms.push(quote!(#(#cfgs)* #msg::#start(..) | #msg::#poll => #k,));
                    kind_arms.push(
                        quote!(#(#cfgs)* #msg::#start(..) => ::preempt::__private::MsgKind::Job,),
                    );
                    kind_arms.push(
                        quote!(#(#cfgs)* #msg::#poll => ::preempt::__private::MsgKind::Poll,),
                    );
                    dispatch_arms.push(quote! {
                        #(#cfgs)*
                        // SAFETY (`AsyncTask::start`): only this level's executor thread
                        // dispatches `#msg`, one message at a time, so it alone starts and
                        // polls this task; `#future` is the constructor `prepare` allocated
                        // the slot for (`#header.allocate(#future)`) before any executor ran.
                        #msg::#start(__preempt_args) => unsafe { #header.start(#future, #args) },
                        #(#cfgs)*
                        // SAFETY (`AsyncTask::poll`): the same thread and constructor as
                        // `start` above: only this executor polls, with the allocated `#future`.
                        #msg::#poll => unsafe { #header.poll(#future) },
                    });
                }
                TaskKind::Periodic | TaskKind::Hardware => {
                    if task.kind == TaskKind::Periodic {
                        periodic.push(k);
                    } else {
                        hardware.push(k);
                    }
                    unit_arms.push(quote! {
                        #k => {
                            #build
                            #name(cx);
                            ::preempt::__private::Dispatched::Done
                        }
                    });
                }
            }
        }
        let n_tasks = level.tasks.len();
        let (accounting, page_faults) = (app.args.accounting, app.args.page_faults);
        items.push(quote! {
            #allows
            #[doc(hidden)]
            pub enum #msg { #(#variants),* }

            #allows
            impl ::preempt::__private::Message for #msg {
                #[inline(always)]
                fn task(&self) -> usize {
                    match *self { #(#index_arms)* }
                }
                #[inline(always)]
                fn kind(&self) -> ::preempt::__private::MsgKind {
                    match *self { #(#kind_arms)* }
                }
                #[inline(always)]
                fn dispatch(self) -> ::preempt::__private::Dispatched {
                    match self { #(#dispatch_arms)* }
                }
                #[inline(always)]
                fn run_unit(task: usize) -> ::preempt::__private::Dispatched {
                    match task {
                        #(#unit_arms)*
                        _ => ::preempt::__private::Dispatched::Idle,
                    }
                }
            }

            #allows
            #[doc(hidden)]
            static #table: [::preempt::__private::TaskControl; #n_tasks] = [#(#controls),*];

            #allows
            #[doc(hidden)]
            static #exec: ::preempt::__private::Executor<#msg, #capacity> =
                ::preempt::__private::Executor::new(
                    #priority, &#table, &[#(#periodic),*], &[#(#hardware),*],
                    #accounting, #page_faults);
        });
        executor_refs.push(quote!(&#exec));
    }

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

    let main = if app.args.main {
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
    };

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

/// `mut cx`, and `mut` on proxies destructured from it (`let t::SharedResources { mut a, .. }
/// = cx.shared`), are needed by RTIC v2 code (proxies by value) and RTIC v1 code written for
/// them, but not here (the context holds `&mut` proxies): keep them from warning, in the
/// whole function.
///
/// An `async fn` may not elide the lifetime of `t::Context` (E0726), which RTIC v2 code
/// does: the hidden `'_` is written out.
fn allow_mut_context(item: &syn::ItemFn) -> syn::ItemFn {
    let mut item = item.clone();
    let is_async = item.sig.asyncness.is_some();
    item.attrs.push(syn::parse_quote!(#[allow(unused_mut)]));
    if let Some(syn::FnArg::Typed(pt)) = item.sig.inputs.first_mut() {
        if let (true, Type::Path(tp)) = (is_async, &mut *pt.ty) {
            if let Some(last) = tp.path.segments.last_mut() {
                if last.arguments.is_empty() {
                    last.arguments = syn::PathArguments::AngleBracketed(syn::parse_quote!(<'_>));
                }
            }
        }
    }
    item
}

/// The name a spawn function gives the `j`-th message argument.
fn arg_name(pat: &Pat, j: usize) -> Ident {
    match pat {
        Pat::Ident(pi) if pi.subpat.is_none() => {
            let name = pi.ident.to_string();
            if name.starts_with('_') {
                format_ident!("arg{}", j)
            } else {
                Ident::new(&name, pi.ident.span())
            }
        }
        _ => format_ident!("arg{}", j),
    }
}

/// A spawn function's argument types and names, and the type `Err` gives them back as.
fn spawn_signature(task: &Task) -> (Vec<&Type>, Vec<Ident>, TokenStream) {
    let tys: Vec<&Type> = task.inputs.iter().map(|(_, ty)| &**ty).collect();
    let args: Vec<Ident> = task
        .inputs
        .iter()
        .enumerate()
        .map(|(j, (pat, _))| arg_name(pat, j))
        .collect();
    let err_ty = match tys.len() {
        0 => quote!(()),
        1 => quote!(#(#tys)*),
        _ => quote!((#(#tys),*)),
    };
    (tys, args, err_ty)
}

/// The spawn functions of task `i`: `spawn`, `spawn_after`, `spawn_at` for software tasks,
/// `spawn` for async ones, none for periodic and hardware tasks.
fn task_spawn(app: &App, _analysis: &Analysis, i: usize) -> Option<TokenStream> {
    let task: &Task = &app.tasks[i];
    if matches!(task.kind, TaskKind::Periodic | TaskKind::Hardware) {
        return None;
    }
    let name = task.name();
    let msg = msg_enum(task.priority);
    let exec = executor_static(task.priority);
    let (tys, args, err_ty) = spawn_signature(task);
    let params = quote!(#(#args: #tys),*);
    let name_str = name.to_string();
    let back = match tys.len() {
        0 => quote!(()),
        1 => quote!(#(#args)*),
        _ => quote!((#(#args),*)),
    };

    if task.kind == TaskKind::Async && task.local_task {
        let start = start_variant(name);
        let header = async_static(name);
        return Some(quote! {
            /// Starts this local task (RTIC v2's `local_task`), through `cx.local_spawner` of
            /// a task of its priority; `Err` gives the arguments back while it runs.
            ///
            /// # Safety
            ///
            /// Call it only on the executor thread of this task's priority: the arguments
            /// need not be `Send` and must not change threads.
            #[doc(hidden)]
            #[inline]
            pub(super) unsafe fn __preempt_spawn_local(#params) -> ::core::result::Result<(), #err_ty> {
                if !super::#header.try_claim() {
                    return ::core::result::Result::Err(#back);
                }
                // SAFETY: the caller runs on this level's executor thread (this function's
                // contract), so `spawn` puts the message on that thread's ready ring and the
                // same thread dispatches it: the arguments never change threads.
                let msg = super::#msg::#start(unsafe {
                    ::preempt::__private::LocalMsg::new((#(#args,)*))
                });
                match super::#exec.spawn(msg) {
                    ::core::result::Result::Ok(()) => ::core::result::Result::Ok(()),
                    ::core::result::Result::Err(super::#msg::#start(m)) => {
                        super::#header.unclaim();
                        let (#(#args,)*) = m.into_inner();
                        ::core::result::Result::Err(#back)
                    }
                    ::core::result::Result::Err(_) => {
                        ::core::unreachable!("an executor gave back another task's message")
                    }
                }
            }
        });
    }

    if task.kind == TaskKind::Async {
        let start = start_variant(name);
        let header = async_static(name);
        let doc = format!(
            "Starts `{name_str}` (an async task: one live instance); `Err` gives the arguments \
             back while the previous instance runs."
        );
        return Some(quote! {
            #[doc = #doc]
            #[inline]
            pub fn spawn(#params) -> ::core::result::Result<(), #err_ty> {
                if !super::#header.try_claim() {
                    return ::core::result::Result::Err(#back);
                }
                match super::#exec.spawn(super::#msg::#start((#(#args,)*))) {
                    ::core::result::Result::Ok(()) => ::core::result::Result::Ok(()),
                    ::core::result::Result::Err(super::#msg::#start((#(#args,)*))) => {
                        super::#header.unclaim();
                        ::core::result::Result::Err(#back)
                    }
                    ::core::result::Result::Err(_) => {
                        ::core::unreachable!("an executor gave back another task's message")
                    }
                }
            }
        });
    }

    let taken = |n: &str| args.iter().any(|a| a == n);
    let instant = if taken("instant") {
        format_ident!("__preempt_instant")
    } else {
        format_ident!("instant")
    };
    let duration = if taken("duration") {
        format_ident!("__preempt_duration")
    } else {
        format_ident!("duration")
    };
    let (build, unbuild) = match tys.len() {
        0 => (quote!(super::#msg::#name), quote!(super::#msg::#name => ())),
        1 => (
            quote!(super::#msg::#name(#(#args)*)),
            quote!(super::#msg::#name(#(#args)*) => #(#args)*),
        ),
        _ => (
            quote!(super::#msg::#name((#(#args),*))),
            quote!(super::#msg::#name((#(#args),*)) => (#(#args),*)),
        ),
    };
    let doc_spawn = format!(
        "Spawns `{name_str}` now; `Err` gives the arguments back when its queue is full \
         (`capacity = {}` message(s) may wait).",
        task.capacity
    );
    let doc_after = format!("Spawns `{name_str}` once `{duration}` has elapsed (CLOCK_MONOTONIC).");
    let doc_at = format!("Spawns `{name_str}` at `{instant}` (CLOCK_MONOTONIC).");
    Some(quote! {
        #[doc(hidden)]
        #[inline(always)]
        fn __preempt_unbuild(msg: super::#msg) -> #err_ty {
            #[allow(unreachable_patterns)]
            match msg {
                #unbuild,
                _ => ::core::unreachable!("an executor gave back another task's message"),
            }
        }

        #[doc = #doc_spawn]
        #[inline]
        pub fn spawn(#params) -> ::core::result::Result<(), #err_ty> {
            super::#exec.spawn(#build).map_err(__preempt_unbuild)
        }

        #[doc = #doc_after]
        #[inline]
        pub fn spawn_after(#duration: ::core::time::Duration, #params)
            -> ::core::result::Result<(), #err_ty>
        {
            spawn_at(::preempt::Instant::now() + #duration, #(#args),*)
        }

        #[doc = #doc_at]
        #[inline]
        pub fn spawn_at(#instant: ::preempt::Instant, #params)
            -> ::core::result::Result<(), #err_ty>
        {
            super::#exec.spawn_at(#instant.as_nanos(), #build).map_err(__preempt_unbuild)
        }
    })
}

/// The methods of `cx.local_spawner` in the contexts of tasks at `priority`: one per
/// `local_task` of that priority, or `None` when it has none.
fn local_spawner(app: &App, priority: u8) -> Option<TokenStream> {
    let methods: Vec<TokenStream> = app
        .tasks
        .iter()
        .filter(|t| t.local_task && t.priority == priority && t.kind == TaskKind::Async)
        .map(|t| {
            let name = t.name();
            let cfgs = &t.cfgs;
            let (tys, args, err_ty) = spawn_signature(t);
            let doc = format!(
                "Starts local task `{name}` on this thread; `Err` gives the arguments back \
                 while it runs."
            );
            quote! {
                #(#cfgs)*
                #[doc = #doc]
                #[inline]
                pub fn #name(&self, #(#args: #tys),*) -> ::core::result::Result<(), #err_ty> {
                    // SAFETY: a `LocalSpawner` exists only in the context of a task of this
                    // priority, hence on this level's executor thread, and it is neither
                    // `Send` nor `Sync`, so it cannot leave that thread.
                    unsafe { super::#name::__preempt_spawn_local(#(#args),*) }
                }
            }
        })
        .collect();
    (!methods.is_empty()).then(|| quote!(#(#methods)*))
}

/// The `init` module: `Context`, `LocalResources`, `Monotonics`.
fn init_module(app: &App) -> TokenStream {
    let allows = allows();
    let name = &app.init.item.sig.ident;
    let mut fields = Vec::new();
    let mut inits = Vec::new();
    for local in &app.init.local {
        if let LocalAccess::Declared { ident, ty, .. } = local {
            let st = local_static("init", local);
            fields.push(quote!(pub #ident: &'static mut #ty,));
            // SAFETY (`StaticCell::get_mut`): a declared local is initialised by its
            // static's initialiser and belongs to `init` alone; `__preempt_new`'s contract
            // (called once, before the executors) makes this the only reference.
            inits.push(quote!(#ident: unsafe { super::#st.get_mut() },));
        }
    }
    quote! {
        #allows
        /// The context of `init`.
        pub mod #name {
            #[allow(unused_imports)]
            use super::*;

            /// What `init` can use.
            pub struct Context<'a> {
                /// `init`'s own local resources (`local = [name: Type = value]`).
                pub local: LocalResources<'a>,
            }

            /// `init`'s local resources; `'static` because `init` runs once.
            pub struct LocalResources<'a> {
                #(#fields)*
                #[doc(hidden)]
                pub __preempt_marker: ::core::marker::PhantomData<&'a ()>,
            }

            /// Kept for RTIC v1 compatibility: preempt's timers run on CLOCK_MONOTONIC and
            /// need no monotonic driver, so this is empty.
            pub struct Monotonics();

            impl<'a> Context<'a> {
                /// Builds `init`'s context.
                ///
                /// # Safety
                ///
                /// Call it once, before any executor thread starts (the generated `run`
                /// does): the context hands out `&'static mut` references to `init`'s
                /// declared locals, which nothing else may reach while they live.
                #[doc(hidden)]
                #[inline(always)]
                pub unsafe fn __preempt_new() -> Self {
                    Context {
                        local: LocalResources {
                            #(#inits)*
                            __preempt_marker: ::core::marker::PhantomData,
                        },
                    }
                }
            }
        }
    }
}

/// What a context module has beyond its resources.
struct ModuleExtras<'x> {
    /// The `#[local]` field of a hardware task's fd source (`binds`).
    binds: Option<&'x Ident>,
    /// The spawn functions (spawnable tasks).
    spawn: Option<TokenStream>,
    /// Locals are `&'static mut` (idle, divergent async tasks).
    static_locals: bool,
    /// The methods of `cx.local_spawner`, if the priority has local tasks.
    spawner: Option<TokenStream>,
}

/// The module of a task or of `idle`: `Context`, `LocalResources`, `SharedResources`,
/// `LockedResources` and, for spawnable tasks, the spawn functions (see `ModuleExtras`).
fn context_module(
    app: &App,
    name: &Ident,
    plans: &[SharedPlan],
    locals: &[LocalAccess],
    extras: ModuleExtras<'_>,
) -> TokenStream {
    let ModuleExtras {
        binds,
        spawn,
        static_locals,
        spawner,
    } = extras;
    let allows = allows();
    let owner = name.to_string();
    // `idle` and a divergent async task run once, so their local resources live as long as
    // the program (as in RTIC).
    let local_lifetime = if static_locals {
        quote!('static)
    } else {
        quote!('a)
    };

    let mut local_fields = Vec::new();
    let mut local_inits = Vec::new();
    for local in locals {
        let ident = local.ident();
        let ty = match local {
            LocalAccess::Declared { ty, .. } => (**ty).clone(),
            LocalAccess::Struct(id) => match app.local.fields.iter().find(|f| f.ident == *id) {
                Some(f) => f.ty.clone(),
                None => continue, // reported by check
            },
        };
        let st = local_static(&owner, local);
        local_fields.push(quote!(pub #ident: &#local_lifetime mut #ty,));
        // SAFETY (`StaticCell::get_mut`): `check` gives each local to one context (a
        // `#[local]` field to one task, a declared local to its owner), `run` wrote the
        // `#[local]` cells after `init`, and `__preempt_new`'s contract is one live context
        // per task, so this `&mut` is the only reference to the cell.
        local_inits.push(quote!(#ident: unsafe { super::#st.get_mut() },));
    }
    if let Some(field) = binds {
        if let Some(f) = app.local.fields.iter().find(|f| f.ident == *field) {
            let ty = &f.ty;
            let st = bound_static(field);
            local_fields.push(quote! {
                /// The fd source this hardware task is bound to (`binds`).
                pub #field: &'a mut #ty,
            });
            // SAFETY (`StaticCell::get_mut`): `check` lets only this hardware task bind the
            // field and use it (not as a local of another task); `run` wrote it after `init`;
            // one live context per task (`__preempt_new`'s contract); `fd_of` in `prepare`
            // read it before any executor started, and that reference is gone.
            local_inits.push(quote!(#field: unsafe { super::#st.get_mut() },));
        }
    }

    let mut shared_fields = Vec::new();
    let mut shared_inits = Vec::new();
    let mut params = Vec::new();
    let mut locked_fields = Vec::new();
    let mut locked_binds = Vec::new();
    let mut locked_open: Vec<Ident> = Vec::new();
    let mut locked_values = Vec::new();
    for plan in plans {
        let ident = &plan.ident;
        let ty = &plan.ty;
        let field_ty = &plan.field_ty;
        shared_fields.push(quote!(pub #ident: #field_ty,));
        match &plan.kind {
            SharedKind::Proxy { ty: pty, .. } => {
                params.push(quote!(#ident: &'a mut #pty));
                shared_inits.push(quote!(#ident,));
                locked_open.push(ident.clone());
                locked_values.push(quote!(#ident,));
            }
            SharedKind::Plain(init) => {
                shared_inits.push(quote!(#ident: #init,));
                if plan.read_only {
                    locked_values.push(quote!(#ident: *#ident,));
                } else {
                    locked_values.push(quote!(#ident: &mut **#ident,));
                }
            }
        }
        locked_fields.push(if plan.read_only {
            quote!(pub #ident: &'b #ty,)
        } else {
            quote!(pub #ident: &'b mut #ty,)
        });
        locked_binds.push(quote!(#ident,));
    }
    let mut body = quote! {
        f(LockedResources {
            #(#locked_values)*
            __preempt_marker: ::core::marker::PhantomData,
        })
    };
    for ident in locked_open.iter().rev() {
        body = quote!(#ident.lock(|#ident| #body));
    }
    let lock_all = quote! {
        impl<'a> SharedResources<'a> {
            /// Locks every shared resource of this context (nested, which the Priority
            /// Ceiling Protocol makes deadlock-free) and runs `f` with all of them.
            #[inline]
            pub fn lock_all<R>(&mut self, f: impl FnOnce(LockedResources<'_>) -> R) -> R {
                #[allow(unused_variables)]
                let SharedResources { #(#locked_binds)* .. } = self;
                #body
            }
        }
    };

    let (spawner_field, spawner_init, spawner_items) = match spawner {
        Some(methods) => (
            quote! {
                /// Spawns this priority's local tasks (`local_task`), whose arguments need not
                /// be `Send`.
                pub local_spawner: LocalSpawner,
            },
            quote!(local_spawner: LocalSpawner { _p: ::core::marker::PhantomData },),
            quote! {
                /// Spawns the local tasks (`local_task`) of this priority, on this thread.
                pub struct LocalSpawner {
                    _p: ::core::marker::PhantomData<*mut ()>,
                }

                impl LocalSpawner {
                    #methods
                }
            },
        ),
        None => (quote!(), quote!(), quote!()),
    };
    let doc = format!("The context of `{owner}`.");
    quote! {
        #allows
        #[doc = #doc]
        pub mod #name {
            #[allow(unused_imports)]
            use super::*;

            /// What the task can use.
            pub struct Context<'a> {
                /// Local resources: the task's own, no lock needed.
                pub local: LocalResources<'a>,
                /// Shared resources: lock them with `.lock(|r| ..)`.
                pub shared: SharedResources<'a>,
                #spawner_field
            }

            #spawner_items

            /// The local resources of this context.
            pub struct LocalResources<'a> {
                #(#local_fields)*
                #[doc(hidden)]
                pub __preempt_marker: ::core::marker::PhantomData<&'a ()>,
            }

            /// The shared resources of this context.
            pub struct SharedResources<'a> {
                #(#shared_fields)*
                #[doc(hidden)]
                pub __preempt_marker: ::core::marker::PhantomData<&'a ()>,
            }

            /// Every shared resource of this context, locked (see `SharedResources::lock_all`).
            pub struct LockedResources<'b> {
                #(#locked_fields)*
                #[doc(hidden)]
                pub __preempt_marker: ::core::marker::PhantomData<&'b ()>,
            }

            #lock_all

            impl<'a> Context<'a> {
                /// Builds this task's context from its job's resource proxies.
                ///
                /// # Safety
                ///
                /// Call it after `run` wrote the resources, on the executor thread of this
                /// task's priority (the idle thread for `idle`), with at most one context of
                /// this task alive: it hands out `&mut` references to the task's local and
                /// lock-free resources, which no other context may reach meanwhile.
                #[doc(hidden)]
                #[inline(always)]
                pub unsafe fn __preempt_new(#(#params),*) -> Self {
                    Context {
                        local: LocalResources {
                            #(#local_inits)*
                            __preempt_marker: ::core::marker::PhantomData,
                        },
                        shared: SharedResources {
                            #(#shared_inits)*
                            __preempt_marker: ::core::marker::PhantomData,
                        },
                        #spawner_init
                    }
                }
            }

            #spawn
        }
    }
}
