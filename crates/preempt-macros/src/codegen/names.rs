//! The names of the generated items (`__preempt_*`), and the attributes they all carry.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use crate::analyze::Analysis;
use crate::parse::{App, LocalAccess};

/// The attributes every generated item carries: the names follow the user's task names, and
/// the items are reached through the app module whatever its visibility.
pub(crate) fn allows() -> TokenStream {
    quote! {
        #[allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code,
                unreachable_pub, unused_unsafe, unused_mut)]
    }
}

pub(crate) fn shared_static(name: &Ident) -> Ident {
    format_ident!("__preempt_shared_{}", name)
}

pub(crate) fn local_static(owner: &str, local: &LocalAccess) -> Ident {
    match local {
        LocalAccess::Struct(ident) => format_ident!("__preempt_local_{}", ident),
        LocalAccess::Declared { ident, .. } => format_ident!("__preempt_local_{}_{}", owner, ident),
    }
}

pub(crate) fn bound_static(field: &Ident) -> Ident {
    local_static("", &LocalAccess::Struct(field.clone()))
}

pub(crate) fn lockstat_static(owner: &str, resource: &Ident) -> Ident {
    format_ident!("__preempt_lockstat_{}_{}", owner, resource)
}

pub(crate) fn msg_enum(priority: u8) -> Ident {
    format_ident!("__preempt_Msg_p{}", priority)
}

pub(crate) fn executor_static(priority: u8) -> Ident {
    format_ident!("__preempt_exec_p{}", priority)
}

pub(crate) fn tasks_static(priority: u8) -> Ident {
    format_ident!("__preempt_tasks_p{}", priority)
}

pub(crate) fn async_static(name: &Ident) -> Ident {
    format_ident!("__preempt_async_{}", name)
}

pub(crate) fn future_fn(name: &Ident) -> Ident {
    format_ident!("__preempt_future_{}", name)
}

pub(crate) fn wake_fn(name: &Ident) -> Ident {
    format_ident!("__preempt_wake_{}", name)
}

pub(crate) fn start_variant(name: &Ident) -> Ident {
    format_ident!("__preempt_start_{}", name)
}

pub(crate) fn poll_variant(name: &Ident) -> Ident {
    format_ident!("__preempt_poll_{}", name)
}

/// The index of task `t` in its level's task table.
pub(crate) fn index_in_level(analysis: &Analysis, app: &App, t: usize) -> usize {
    analysis
        .levels
        .iter()
        .find(|l| l.priority == app.tasks[t].priority)
        .and_then(|l| l.tasks.iter().position(|&i| i == t))
        .unwrap_or(0)
}
