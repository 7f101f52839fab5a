//! Local resources: the cells of the `#[local]` struct's fields and of the locals each
//! context declares (`local = [name: Type = value]`).

use proc_macro2::TokenStream;
use quote::quote;

use crate::codegen::names::{allows, local_static};
use crate::parse::{App, LocalAccess};

/// The statics of the local resources, pushed to `items`.
pub(crate) fn statics(app: &App, items: &mut Vec<TokenStream>) {
    let allows = allows();

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
}
