//! Context modules: one per task, `init` and `idle`, with `Context`, `LocalResources`,
//! `SharedResources`, `LockedResources` and the task's spawn functions.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, Type};

use crate::analyze::Analysis;
use crate::codegen::names::{allows, bound_static, local_static};
use crate::codegen::shared::{SharedKind, SharedPlan, shared_plan};
use crate::codegen::spawn::{local_spawner, task_spawn};
use crate::parse::{App, LocalAccess};

/// The context modules, pushed to `items`; returns the shared-resource plans of `idle` and of
/// each task (in the order of `app.tasks`), which the dispatchers build contexts from.
pub(crate) fn modules(
    app: &App,
    analysis: &Analysis,
    items: &mut Vec<TokenStream>,
) -> (Option<Vec<SharedPlan>>, Vec<Vec<SharedPlan>>) {
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
    (idle_plans, task_plans)
}

/// `mut cx`, and `mut` on proxies destructured from it (`let t::SharedResources { mut a, .. }
/// = cx.shared`), are needed by RTIC v2 code (proxies by value) and RTIC v1 code written for
/// them, but not here (the context holds `&mut` proxies): keep them from warning, in the
/// whole function.
///
/// An `async fn` may not elide the lifetime of `t::Context` (E0726), which RTIC v2 code
/// does: the hidden `'_` is written out.
pub(crate) fn allow_mut_context(item: &syn::ItemFn) -> syn::ItemFn {
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

/// The `init` module: `Context`, `LocalResources`, `Monotonics`.
pub(crate) fn init_module(app: &App) -> TokenStream {
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
pub(crate) struct ModuleExtras<'x> {
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
pub(crate) fn context_module(
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
