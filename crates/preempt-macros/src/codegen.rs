//! Code generation: the checked model becomes statics, context types, spawn functions, one
//! message enum and executor per priority level, and `run`.
//!
//! For `mod app` with tasks `a` (priority 1, shared `x`) and `b` (priority 2, shared `x`) the
//! output has this shape (names of internal items start with `__preempt_`):
//!
//! ```text
//! fn main() { std::process::exit(app::run()) }          // unless `main = false`
//! mod app {
//!     use ::preempt::prelude::*;                        // Instant, Duration, Lock, exit
//!     <user items, #[shared]/#[local] structs, init, idle and task functions>
//!     static __preempt_group_0: PcpGroup;               // one per group of tasks sharing locks
//!     static __preempt_shared_x: PcpCell<T>;            // ceiling 2, group 0
//!     enum __preempt_Msg_p1 { a(args) }                 // one message enum per level
//!     static __preempt_exec_p1: Executor<__preempt_Msg_p1, CAPACITY>;
//!     pub mod a { pub struct Context; pub fn spawn(..); pub fn spawn_after(..); .. }
//!     pub fn run() -> i32;                              // readiness, init, executors
//! }
//! ```

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Pat, Type};

use crate::analyze::{Access, Analysis};
use crate::parse::{App, LocalAccess, OnPanic, SharedAccess};

/// The attributes every generated item carries: the names follow the user's task names, and
/// the items are reached through the app module whatever its visibility.
fn allows() -> TokenStream {
    quote! {
        #[allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code,
                unreachable_pub, unused_unsafe, clippy::all)]
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

fn msg_enum(priority: u8) -> Ident {
    format_ident!("__preempt_Msg_p{}", priority)
}

fn executor_static(priority: u8) -> Ident {
    format_ident!("__preempt_exec_p{}", priority)
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

    // Shared resource storage.
    for field in &app.shared.fields {
        let info = &analysis.shared[&field.ident.to_string()];
        let ident = shared_static(&field.ident);
        let ty = &field.ty;
        match info.access {
            Access::Pcp { group } => {
                let group = format_ident!("__preempt_group_{}", group);
                let ceiling = info.ceiling;
                items.push(quote! {
                    #allows
                    #[doc(hidden)]
                    static #ident: ::preempt::__private::PcpCell<#ty> =
                        ::preempt::__private::PcpCell::new(#ceiling, &#group);
                });
            }
            Access::Exclusive | Access::ReadOnly | Access::Unused => {
                items.push(quote! {
                    #allows
                    #[doc(hidden)]
                    static #ident: ::preempt::__private::StaticCell<#ty> =
                        ::preempt::__private::StaticCell::uninit();
                });
                let priorities: std::collections::BTreeSet<u8> =
                    info.users.iter().map(|u| u.1).collect();
                if info.access == Access::ReadOnly && priorities.len() > 1 {
                    // `&T` reaches several threads at once.
                    items.push(quote! {
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
        items.push(quote! {
            #allows
            #[doc(hidden)]
            static #ident: ::preempt::__private::StaticCell<#ty> =
                ::preempt::__private::StaticCell::uninit();
        });
    }
    let mut declared = |owner: &str, locals: &[LocalAccess]| {
        for local in locals {
            if let LocalAccess::Declared { ty, expr, .. } = local {
                let ident = local_static(owner, local);
                items.push(quote! {
                    #allows
                    #[doc(hidden)]
                    static #ident: ::preempt::__private::StaticCell<#ty> =
                        ::preempt::__private::StaticCell::new(#expr);
                });
            }
        }
    };
    declared("init", &app.init.local);
    if let Some(idle) = &app.idle {
        declared("idle", &idle.local);
    }
    for task in &app.tasks {
        declared(&task.name().to_string(), &task.local);
    }

    // Context modules.
    items.push(init_module(app));
    if let Some(idle) = &app.idle {
        items.push(context_module(
            app,
            analysis,
            &idle.item.sig.ident,
            &idle.shared,
            &idle.local,
            0,
            None,
        ));
    }
    for (i, task) in app.tasks.iter().enumerate() {
        items.push(context_module(
            app,
            analysis,
            task.name(),
            &task.shared,
            &task.local,
            task.priority,
            Some(task_spawn(app, i)),
        ));
    }

    // Message enums and executors, one per level.
    let mut executor_refs = Vec::new();
    for level in &analysis.levels {
        let priority = level.priority;
        let msg = msg_enum(priority);
        let exec = executor_static(priority);
        let slots = format_ident!("__preempt_slots_p{}", priority);
        let capacity = level.capacity;
        let mut variants = Vec::new();
        let mut index_arms = Vec::new();
        let mut names = Vec::new();
        let mut dispatch_arms = Vec::new();
        let mut slot_inits = Vec::new();
        for (k, &t) in level.tasks.iter().enumerate() {
            let task = &app.tasks[t];
            let name = task.name();
            let name_str = name.to_string();
            let tys: Vec<&Type> = task.inputs.iter().map(|(_, ty)| &**ty).collect();
            let args: Vec<Ident> = (0..tys.len())
                .map(|j| format_ident!("__preempt_a{}", j))
                .collect();
            let (variant, pattern) = match tys.len() {
                0 => (quote!(#name), quote!(#msg::#name)),
                1 => (quote!(#name(#(#tys)*)), quote!(#msg::#name(#(#args)*))),
                _ => (
                    quote!(#name((#(#tys),*))),
                    quote!(#msg::#name((#(#args),*))),
                ),
            };
            variants.push(variant);
            index_arms.push(quote!(#pattern => #k,));
            names.push(name_str);
            dispatch_arms.push(quote! {
                #pattern => {
                    // SAFETY: the executor of this level runs on one thread and runs one
                    // message at a time, so this task's context is not alive anywhere else;
                    // its resources were initialised before the executor started.
                    let cx = unsafe { #name::Context::__preempt_new() };
                    #name(cx, #(#args),*)
                }
            });
            for ty in &tys {
                items.push(quote! {
                    const _: () = ::preempt::__private::assert_send::<#ty>();
                });
            }
            let cap = task.capacity;
            slot_inits.push(quote!(::preempt::__private::TaskSlots::new(#cap)));
        }
        let n_tasks = level.tasks.len();
        items.push(quote! {
            #allows
            #[doc(hidden)]
            pub enum #msg { #(#variants),* }

            #allows
            impl ::preempt::__private::Message for #msg {
                #[inline(always)]
                fn task(&self) -> usize {
                    #[allow(unused_variables)]
                    match self { #(#index_arms)* }
                }
                const NAMES: &'static [&'static str] = &[#(#names),*];
                #[inline(always)]
                fn dispatch(self) {
                    match self { #(#dispatch_arms)* }
                }
            }

            #allows
            #[doc(hidden)]
            static #slots: [::preempt::__private::TaskSlots; #n_tasks] = [#(#slot_inits),*];

            #allows
            #[doc(hidden)]
            static #exec: ::preempt::__private::Executor<#msg, #capacity> =
                ::preempt::__private::Executor::new(#priority, &#slots);
        });
        executor_refs.push(quote!(&#exec));
    }

    // run(), shutdown(), the app descriptor.
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

    let init_ident = &app.init.item.sig.ident;
    let mut shared_writes = Vec::new();
    let mut shared_binds = Vec::new();
    for field in &app.shared.fields {
        let f = &field.ident;
        let tmp = format_ident!("__preempt_s_{}", f);
        let st = shared_static(f);
        shared_binds.push(quote!(#f: #tmp));
        shared_writes.push(quote!(#st.write(#tmp);));
    }
    let mut local_binds = Vec::new();
    for field in &app.local.fields {
        let f = &field.ident;
        let tmp = format_ident!("__preempt_l_{}", f);
        let st = local_static("", &LocalAccess::Struct(f.clone()));
        local_binds.push(quote!(#f: #tmp));
        shared_writes.push(quote!(#st.write(#tmp);));
    }
    let (idle_entry, idle_arg) = match &app.idle {
        Some(idle) => {
            let ident = &idle.item.sig.ident;
            (
                quote! {
                    #allows
                    fn __preempt_idle_entry() {
                        // SAFETY: `run` calls this once, on the one idle thread.
                        #ident(unsafe { #ident::Context::__preempt_new() });
                    }
                },
                quote!(::core::option::Option::Some(__preempt_idle_entry as fn())),
            )
        }
        None => (quote!(), quote!(::core::option::Option::None)),
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
                &mut || {
                    // SAFETY: `run` calls this closure once, before any executor exists.
                    let (Shared { #(#shared_binds),* }, Local { #(#local_binds),* }, _) =
                        #init_ident(unsafe { #init_ident::Context::__preempt_new() });
                    // SAFETY: no executor or idle thread runs yet, so nothing reads these
                    // cells; each is written exactly once, here.
                    unsafe { #(#shared_writes)* }
                },
                #idle_arg,
            )
        }

        /// Stops the application: running tasks finish, no new task starts, and [`run`]
        /// returns 0.
        #allows
        pub fn shutdown() {
            ::preempt::__private::shutdown(&__preempt_APP, 0);
        }
    });

    let main = if app.args.main {
        quote! {
            #[allow(dead_code)]
            fn main() {
                ::std::process::exit(#mod_ident::run())
            }
        }
    } else {
        quote!()
    };

    let init_item = &app.init.item;
    let idle_item = app.idle.as_ref().map(|i| &i.item);
    let task_items = app.tasks.iter().map(|t| &t.item);

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

/// `spawn`, `spawn_after` and `spawn_at` of task `i`.
fn task_spawn(app: &App, i: usize) -> TokenStream {
    let task = &app.tasks[i];
    let name = task.name();
    let msg = msg_enum(task.priority);
    let exec = executor_static(task.priority);
    let tys: Vec<&Type> = task.inputs.iter().map(|(_, ty)| &**ty).collect();
    let args: Vec<Ident> = task
        .inputs
        .iter()
        .enumerate()
        .map(|(j, (pat, _))| arg_name(pat, j))
        .collect();
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
    let (err_ty, build, unbuild) = match tys.len() {
        0 => (
            quote!(()),
            quote!(super::#msg::#name),
            quote!(super::#msg::#name => ()),
        ),
        1 => (
            quote!(#(#tys)*),
            quote!(super::#msg::#name(#(#args)*)),
            quote!(super::#msg::#name(#(#args)*) => #(#args)*),
        ),
        _ => (
            quote!((#(#tys),*)),
            quote!(super::#msg::#name((#(#args),*))),
            quote!(super::#msg::#name((#(#args),*)) => (#(#args),*)),
        ),
    };
    let params = quote!(#(#args: #tys),*);
    let name_str = name.to_string();
    let doc_spawn = format!(
        "Spawns `{name_str}` now; `Err` gives the arguments back when its queue is full \
         (`capacity = {}` message(s) may wait).",
        task.capacity
    );
    let doc_after = format!("Spawns `{name_str}` once `{duration}` has elapsed (CLOCK_MONOTONIC).");
    let doc_at = format!("Spawns `{name_str}` at `{instant}` (CLOCK_MONOTONIC).");
    quote! {
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
    }
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

/// The module of a task or of `idle`: `Context`, `LocalResources`, `SharedResources`,
/// `LockedResources` and, for tasks, the spawn functions.
#[allow(clippy::too_many_arguments)]
fn context_module(
    app: &App,
    analysis: &Analysis,
    name: &Ident,
    shared: &[SharedAccess],
    locals: &[LocalAccess],
    priority: u8,
    spawn: Option<TokenStream>,
) -> TokenStream {
    let allows = allows();
    let owner = name.to_string();

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
        local_fields.push(quote!(pub #ident: &'a mut #ty,));
        local_inits.push(quote!(#ident: unsafe { super::#st.get_mut() },));
    }

    let mut shared_fields = Vec::new();
    let mut shared_inits = Vec::new();
    let mut locked_fields = Vec::new();
    let mut locked_binds = Vec::new();
    let mut locked_open: Vec<Ident> = Vec::new();
    let mut locked_values = Vec::new();
    for access in shared {
        let ident = &access.ident;
        let Some(field) = app.shared.fields.iter().find(|f| f.ident == *ident) else {
            continue; // reported by check
        };
        let ty = &field.ty;
        let info = &analysis.shared[&ident.to_string()];
        let st = shared_static(ident);
        let ro = access.read_only;
        let (field_ty, init, lockable) = match (info.access, field.lock_free.is_some(), ro) {
            (Access::Exclusive, true, false) => (
                quote!(&'a mut #ty),
                quote!(unsafe { super::#st.get_mut() }),
                false,
            ),
            (Access::Exclusive, true, true) | (Access::ReadOnly, _, _) => {
                (quote!(&'a #ty), quote!(unsafe { super::#st.get() }), false)
            }
            (Access::Exclusive, false, false) => (
                quote!(::preempt::resource::Exclusive<'a, #ty>),
                quote!(::preempt::resource::Exclusive::new(unsafe { super::#st.get_mut() })),
                true,
            ),
            (Access::Exclusive, false, true) => (
                quote!(::preempt::resource::ExclusiveRef<'a, #ty>),
                quote!(::preempt::resource::ExclusiveRef::new(unsafe { super::#st.get() })),
                true,
            ),
            (Access::Pcp { .. }, _, false) => (
                quote!(::preempt::resource::SharedMut<'a, #ty>),
                quote!(unsafe { ::preempt::resource::SharedMut::new(&super::#st, #priority) }),
                true,
            ),
            (Access::Pcp { .. }, _, true) => (
                quote!(::preempt::resource::SharedRef<'a, #ty>),
                quote!(unsafe { ::preempt::resource::SharedRef::new(&super::#st, #priority) }),
                true,
            ),
            (Access::Unused, ..) => continue, // a used resource is never Unused
        };
        shared_fields.push(quote!(pub #ident: #field_ty,));
        shared_inits.push(quote!(#ident: #init,));
        locked_fields.push(if ro {
            quote!(pub #ident: &'b #ty,)
        } else {
            quote!(pub #ident: &'b mut #ty,)
        });
        locked_binds.push(quote!(#ident,));
        if lockable {
            locked_open.push(ident.clone());
            locked_values.push(quote!(#ident,));
        } else if ro {
            locked_values.push(quote!(#ident: *#ident,));
        } else {
            locked_values.push(quote!(#ident: &mut **#ident,));
        }
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
            }

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
                #[doc(hidden)]
                #[inline(always)]
                pub unsafe fn __preempt_new() -> Self {
                    Context {
                        local: LocalResources {
                            #(#local_inits)*
                            __preempt_marker: ::core::marker::PhantomData,
                        },
                        shared: SharedResources {
                            #(#shared_inits)*
                            __preempt_marker: ::core::marker::PhantomData,
                        },
                    }
                }
            }

            #spawn
        }
    }
}
