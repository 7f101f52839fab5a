//! Priority levels: per level one message enum, task table and executor, with the
//! dispatcher of each task; per async task its header, future constructor and wake-up.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Type};

use crate::analyze::Analysis;
use crate::codegen::names::{
    allows, async_static, executor_static, future_fn, msg_enum, poll_variant, start_variant,
    tasks_static, wake_fn,
};
use crate::codegen::shared::{SharedPlan, build_context};
use crate::parse::{App, OnMiss, TaskKind};

/// The items of the async tasks, pushed to `items`: header, wake-up, future constructor.
pub(crate) fn async_tasks(app: &App, task_plans: &[Vec<SharedPlan>], items: &mut Vec<TokenStream>) {
    let allows = allows();

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
}

/// The message enum, task table and executor of each level, pushed to `items`; returns
/// references to the executors, in the order of `analysis.levels`.
pub(crate) fn executors(
    app: &App,
    analysis: &Analysis,
    task_plans: &[Vec<SharedPlan>],
    items: &mut Vec<TokenStream>,
) -> Vec<TokenStream> {
    let allows = allows();

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
    executor_refs
}
