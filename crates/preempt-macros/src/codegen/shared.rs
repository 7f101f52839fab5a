//! Shared resources: their storage (PCP groups, cells, critical-section records) and how a
//! context reaches each one (a plain reference or a proxy built per job).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Type};

use crate::analyze::{Access, Analysis};
use crate::codegen::names::{allows, lockstat_static, shared_static};
use crate::parse::{App, SharedAccess};

/// The statics of the shared resources, pushed to `items`: one `PcpGroup` per group, one
/// cell per resource and, with `accounting`, one critical-section record per user of a PCP
/// resource, whose names it returns.
pub(crate) fn statics(app: &App, analysis: &Analysis, items: &mut Vec<TokenStream>) -> Vec<Ident> {
    let allows = allows();
    let mut lockstats: Vec<Ident> = Vec::new();

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
    lockstats
}

/// How a context reaches one shared resource.
pub(crate) struct SharedPlan {
    pub(crate) ident: Ident,
    /// The field type in `SharedResources<'a>`.
    pub(crate) field_ty: TokenStream,
    /// For proxies: the `let mut` that builds one (app-module paths) and its type;
    /// for plain references: the expression inside `__preempt_new`.
    pub(crate) kind: SharedKind,
    pub(crate) read_only: bool,
    pub(crate) ty: Type,
}

pub(crate) enum SharedKind {
    Proxy { build: TokenStream, ty: TokenStream },
    Plain(TokenStream),
}

/// Plans the shared resources of a context (task or idle) at `priority`.
pub(crate) fn shared_plan(
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
                // executor thread, one job at a time, and `check` refuses one that an async
                // task (whose job spans `.await`) shares: this `&mut` is the only reference.
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
                        // SAFETY (`Exclusive::from_cell`): `run` wrote the cell before the
                        // executors started, and all its users run on this level's one
                        // thread; the proxy makes its `&mut` only inside `lock`'s closure,
                        // which cannot `.await`, so closures never overlap.
                        build: quote!(unsafe { ::preempt::resource::Exclusive::from_cell(&#st) }),
                        ty: pty,
                    },
                )
            }
            (Access::Exclusive, false, true) => {
                let pty = quote!(::preempt::resource::ExclusiveRef<'a, #ty>);
                (
                    quote!(&'a mut #pty),
                    SharedKind::Proxy {
                        // SAFETY (`ExclusiveRef::from_cell`): as for `Exclusive` above: an
                        // initialised cell, one thread, references only inside `lock`
                        // closures, which do not overlap.
                        build: quote!(unsafe { ::preempt::resource::ExclusiveRef::from_cell(&#st) }),
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
pub(crate) fn build_context(plans: &[SharedPlan], module: &Ident) -> TokenStream {
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
