//! Spawn functions: `spawn`, `spawn_after`, `spawn_at` of software tasks, `spawn` of async
//! ones, and the methods of `cx.local_spawner` for local tasks.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Pat, Type};

use crate::analyze::Analysis;
use crate::codegen::names::{async_static, executor_static, msg_enum, start_variant};
use crate::parse::{App, Task, TaskKind};

/// The name a spawn function gives the `j`-th message argument.
pub(crate) fn arg_name(pat: &Pat, j: usize) -> Ident {
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
pub(crate) fn spawn_signature(task: &Task) -> (Vec<&Type>, Vec<Ident>, TokenStream) {
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
pub(crate) fn task_spawn(app: &App, _analysis: &Analysis, i: usize) -> Option<TokenStream> {
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
pub(crate) fn local_spawner(app: &App, priority: u8) -> Option<TokenStream> {
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
