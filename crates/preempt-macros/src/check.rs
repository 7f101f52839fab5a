//! Checks: the rules that span several items, reported as spanned `syn::Error`s.
//!
//! Each rule has a UI test in `tests/ui/<item>-<violation>.rs`.

use std::collections::BTreeSet;

use syn::visit::Visit;

use crate::analyze::{Analysis, Context};
use crate::parse::{App, LocalAccess, TaskKind};

/// Runs every check and returns all errors found, combined.
pub(crate) fn app(app: &App, analysis: &Analysis) -> syn::Result<()> {
    let mut errors: Vec<syn::Error> = Vec::new();
    let context_name = |cx: Context| -> String {
        match cx {
            Context::Init => "init".into(),
            Context::Idle => "idle".into(),
            Context::Task(i) => format!("task `{}`", app.tasks[i].name()),
        }
    };

    // Undeclared shared resources.
    let mut shared_lists: Vec<&[crate::parse::SharedAccess]> = Vec::new();
    if let Some(idle) = &app.idle {
        shared_lists.push(&idle.shared);
    }
    for task in &app.tasks {
        shared_lists.push(&task.shared);
    }
    for list in shared_lists {
        for access in list {
            if !analysis.shared.contains_key(&access.ident.to_string()) {
                errors.push(syn::Error::new(
                    access.ident.span(),
                    format!(
                        "undeclared shared resource `{0}`: add `{0}: Type` to the #[shared] struct",
                        access.ident
                    ),
                ));
            }
        }
    }

    // Undeclared / doubly used local resources, and declared locals shadowing struct fields.
    let local_fields: BTreeSet<String> = app
        .local
        .fields
        .iter()
        .map(|f| f.ident.to_string())
        .collect();
    let mut local_lists: Vec<&[LocalAccess]> = vec![&app.init.local];
    if let Some(idle) = &app.idle {
        local_lists.push(&idle.local);
    }
    for task in &app.tasks {
        local_lists.push(&task.local);
    }
    for list in local_lists {
        for access in list {
            match access {
                LocalAccess::Struct(ident) if !local_fields.contains(&ident.to_string()) => {
                    errors.push(syn::Error::new(
                        ident.span(),
                        format!(
                            "undeclared local resource `{0}`: add `{0}: Type` to the #[local] \
                             struct, or declare it here as `{0}: Type = initial_value`",
                            ident
                        ),
                    ));
                }
                LocalAccess::Declared { ident, .. }
                    if local_fields.contains(&ident.to_string()) =>
                {
                    errors.push(syn::Error::new(
                        ident.span(),
                        format!(
                            "`{ident}` is already a field of the #[local] struct: rename this \
                             declared local resource or use the field (`local = [{ident}]`)"
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    for (name, owners) in &analysis.local_owners {
        if let Some((Context::Init, ident)) = owners.iter().find(|o| o.0 == Context::Init) {
            errors.push(syn::Error::new(
                ident.span(),
                format!(
                    "#[init] creates `{name}` (it returns the #[local] struct) and cannot use it; \
                     declare init's own local resources as `name: Type = value`"
                ),
            ));
            continue;
        }
        if owners.len() > 1 {
            let mut err = syn::Error::new(
                owners[1].1.span(),
                format!(
                    "local resource `{name}` is used by {} and {}: a local resource belongs to \
                     one task; move it to the #[shared] struct to share it",
                    context_name(owners[0].0),
                    context_name(owners[1].0),
                ),
            );
            err.combine(syn::Error::new(owners[0].1.span(), "first used here"));
            errors.push(err);
        }
    }

    // Hardware tasks: the bound field exists, is bound once, and nobody else uses it.
    let mut bound: Vec<(&syn::Ident, usize)> = Vec::new();
    for (i, task) in app.tasks.iter().enumerate() {
        let Some(field) = &task.binds else { continue };
        if !local_fields.contains(&field.to_string()) {
            errors.push(syn::Error::new(
                field.span(),
                format!(
                    "`binds = {field}` names no field of the #[local] struct: add `{field}: \
                     <an fd source, e.g. preempt::fd::TimerSource>` to it and create the source \
                     in #[init]"
                ),
            ));
            continue;
        }
        if let Some((first, j)) = bound.iter().find(|(f, _)| *f == field) {
            let mut err = syn::Error::new(
                field.span(),
                format!(
                    "`{field}` is bound to two hardware tasks, `{}` and `{}`: an fd wakes one \
                     task; spawn the second from the first",
                    app.tasks[*j].name(),
                    task.name()
                ),
            );
            err.combine(syn::Error::new(first.span(), "first bound here"));
            errors.push(err);
            continue;
        }
        bound.push((field, i));
    }
    for (field, owner) in &bound {
        if let Some(owners) = analysis.local_owners.get(&field.to_string()) {
            for (cx, ident) in owners {
                if *cx == Context::Task(*owner) {
                    errors.push(syn::Error::new(
                        ident.span(),
                        format!(
                            "`{field}` is already this task's (`binds = {field}` gives it \
                             `cx.local.{field}`): remove it from `local = [..]`"
                        ),
                    ));
                    continue;
                }
                let mut err = syn::Error::new(
                    ident.span(),
                    format!(
                        "local resource `{field}` is the fd of hardware task `{}` (`binds = \
                         {field}`), which owns it; {} cannot use it",
                        app.tasks[*owner].name(),
                        context_name(*cx)
                    ),
                );
                err.combine(syn::Error::new(field.span(), "bound here"));
                errors.push(err);
            }
        }
    }

    // Idle policies must name a priority level that exists.
    for binding in &app.args.idle {
        if !analysis
            .levels
            .iter()
            .any(|l| l.priority == binding.priority)
        {
            errors.push(syn::Error::new(
                binding.span,
                format!(
                    "no task runs at priority {}: `idle_policy` configures executor threads",
                    binding.priority
                ),
            ));
        }
    }

    // #[lock_free] resources must stay on one priority level.
    for field in &app.shared.fields {
        let Some(span) = field.lock_free else {
            continue;
        };
        let info = &analysis.shared[&field.ident.to_string()];
        if let Some(other) = info.users.iter().find(|u| u.1 != info.users[0].1) {
            let first = info.users[0];
            let mut err = syn::Error::new(
                span,
                format!(
                    "#[lock_free] resource `{}` is used at priority {} by {} and at priority {} \
                     by {}: lock-free access needs every user on one priority (one thread); \
                     remove #[lock_free] to lock it instead",
                    field.ident,
                    first.1,
                    context_name(first.0),
                    other.1,
                    context_name(other.0),
                ),
            );
            let user_span = match other.0 {
                Context::Task(i) => app.tasks[i].name().span(),
                Context::Idle | Context::Init => app
                    .idle
                    .as_ref()
                    .map_or(span, |idle| idle.item.sig.ident.span()),
            };
            err.combine(syn::Error::new(user_span, "used at another priority here"));
            errors.push(err);
        }
    }

    // An async task keeps its context, and so a #[lock_free] resource's `&mut`, across
    // `.await`, where the other tasks of its priority run and take their own reference to the
    // same value: two live `&mut`, or a `&` and a `&mut`. RTIC v2 forbids this too.
    for field in &app.shared.fields {
        let Some(span) = field.lock_free else {
            continue;
        };
        let info = &analysis.shared[&field.ident.to_string()];
        let is_async =
            |cx: Context| matches!(cx, Context::Task(i) if app.tasks[i].kind == TaskKind::Async);
        let Some(task) = info.users.iter().find(|u| is_async(u.0)) else {
            continue;
        };
        let Some(other) = info.users.iter().find(|u| u.0 != task.0) else {
            continue;
        };
        if info.users.iter().all(|u| u.2) {
            continue; // every user reads: `&T` for all
        }
        let mut err = syn::Error::new(
            span,
            format!(
                "#[lock_free] resource `{}` is used by async task `{}` and by {}: an async task \
                 keeps its reference across `.await`, while the other runs; remove #[lock_free] \
                 to lock it instead",
                field.ident,
                match task.0 {
                    Context::Task(i) => app.tasks[i].name().to_string(),
                    _ => String::new(),
                },
                context_name(other.0),
            ),
        );
        if let Context::Task(i) = task.0 {
            err.combine(syn::Error::new(
                app.tasks[i].name().span(),
                "the async task is here",
            ));
        }
        errors.push(err);
    }

    // Affinity bindings must name a priority level that exists.
    for binding in &app.args.cores {
        if !analysis
            .levels
            .iter()
            .any(|l| l.priority == binding.priority)
        {
            let levels: Vec<String> = analysis
                .levels
                .iter()
                .map(|l| format!("p{}", l.priority))
                .collect();
            errors.push(syn::Error::new(
                binding.span,
                format!(
                    "no task runs at priority {}: `cores` binds executor threads, and this app \
                     has {}",
                    binding.priority,
                    if levels.is_empty() {
                        "none".to_string()
                    } else {
                        levels.join(", ")
                    }
                ),
            ));
        }
    }

    // Priority-0 tasks run when nothing else does, as idle does: an app has one or the other
    // (RTIC v2's rule).
    if let Some(idle) = &app.idle {
        for task in app.tasks.iter().filter(|t| t.priority == 0) {
            let mut err = syn::Error::new(
                task.name().span(),
                format!(
                    "async task `{}` has priority 0, but `#[idle]` is defined: priority-0 tasks \
                     run when no other task does, as idle does, so an app has either (as in \
                     RTIC); give the task priority 1 or remove #[idle]",
                    task.name()
                ),
            );
            err.combine(syn::Error::new(
                idle.item.sig.ident.span(),
                "#[idle] is here",
            ));
            errors.push(err);
        }
    }

    // Spawns of tasks that do not exist (when the module's names are all known).
    errors.extend(unknown_spawns(app));

    let mut errors = errors.into_iter();
    match errors.next() {
        None => Ok(()),
        Some(mut first) => {
            for err in errors {
                first.combine(err);
            }
            Err(first)
        }
    }
}

/// Finds `name::spawn(..)`, `name::spawn_after(..)` and `name::spawn_at(..)` calls whose
/// `name` is neither a task nor any other name the module defines or imports. A glob import
/// (`use super::*`) could bring any name into scope, so it turns this check off; rustc then
/// reports the unresolved path itself.
fn unknown_spawns(app: &App) -> Vec<syn::Error> {
    let mut known: BTreeSet<String> = app.tasks.iter().map(|t| t.name().to_string()).collect();
    known.insert("init".into());
    known.insert("idle".into());
    // A glob import (or a macro) could bring any name into scope: then only the checks on
    // known task names run.
    let mut all_names_known = true;
    for item in &app.user_items {
        match item {
            syn::Item::Use(u) if !collect_use_names(&u.tree, &mut known) => {
                all_names_known = false;
            }
            syn::Item::Mod(m) => {
                known.insert(m.ident.to_string());
            }
            syn::Item::Struct(s) => {
                known.insert(s.ident.to_string());
            }
            syn::Item::Enum(e) => {
                known.insert(e.ident.to_string());
            }
            syn::Item::Type(t) => {
                known.insert(t.ident.to_string());
            }
            syn::Item::Trait(t) => {
                known.insert(t.ident.to_string());
            }
            syn::Item::Union(u) => {
                known.insert(u.ident.to_string());
            }
            syn::Item::ExternCrate(e) => {
                known.insert(
                    e.rename
                        .as_ref()
                        .map_or(e.ident.to_string(), |(_, r)| r.to_string()),
                );
            }
            syn::Item::Macro(_) => all_names_known = false,
            _ => {}
        }
    }
    // Names every module can use without importing them.
    for name in [
        "std", "core", "alloc", "crate", "self", "super", "Self", "preempt",
    ] {
        known.insert(name.into());
    }

    struct Finder<'a> {
        known: &'a BTreeSet<String>,
        all_names_known: bool,
        tasks: Vec<String>,
        kinds: std::collections::BTreeMap<String, TaskKind>,
        errors: Vec<syn::Error>,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_expr_path(&mut self, e: &'ast syn::ExprPath) {
            let segments: Vec<_> = e.path.segments.iter().collect();
            if e.qself.is_none()
                && e.path.leading_colon.is_none()
                && segments.len() == 2
                && matches!(
                    segments[1].ident.to_string().as_str(),
                    "spawn" | "spawn_after" | "spawn_at"
                )
            {
                let target = segments[0].ident.to_string();
                let method = segments[1].ident.to_string();
                let kind_error = match self.kinds.get(&target) {
                    Some(TaskKind::Periodic) => Some(format!(
                        "task `{target}` is periodic: the runtime releases it every period; it \
                         has no `{method}`"
                    )),
                    Some(TaskKind::Hardware) => Some(format!(
                        "task `{target}` is a hardware task: its fd releases it; it has no \
                         `{method}`"
                    )),
                    Some(TaskKind::Async) if method != "spawn" => Some(format!(
                        "async task `{target}` has `spawn` only (RTIC v2): wait inside it with \
                         `Mono::delay(..).await` or `Mono::delay_until(..).await`"
                    )),
                    _ => None,
                };
                if let Some(msg) = kind_error {
                    self.errors
                        .push(syn::Error::new(segments[1].ident.span(), msg));
                } else if self.all_names_known && !self.known.contains(&target) {
                    self.errors.push(syn::Error::new(
                        segments[0].ident.span(),
                        format!(
                            "spawn of unknown task `{target}`: this app's tasks are {}",
                            if self.tasks.is_empty() {
                                "none".to_string()
                            } else {
                                self.tasks.join(", ")
                            }
                        ),
                    ));
                }
            }
            syn::visit::visit_expr_path(self, e);
        }
    }
    let mut finder = Finder {
        known: &known,
        all_names_known,
        kinds: app
            .tasks
            .iter()
            .map(|t| (t.name().to_string(), t.kind))
            .collect(),
        tasks: app
            .tasks
            .iter()
            .map(|t| format!("`{}`", t.name()))
            .collect(),
        errors: Vec::new(),
    };
    finder.visit_item_fn(&app.init.item);
    if let Some(idle) = &app.idle {
        finder.visit_item_fn(&idle.item);
    }
    for task in &app.tasks {
        finder.visit_item_fn(&task.item);
    }
    for item in &app.user_items {
        finder.visit_item(item);
    }
    finder.errors
}

/// Adds the names a `use` tree brings into scope; returns `false` for a glob import.
fn collect_use_names(tree: &syn::UseTree, names: &mut BTreeSet<String>) -> bool {
    match tree {
        syn::UseTree::Path(p) => collect_use_names(&p.tree, names),
        syn::UseTree::Name(n) => {
            names.insert(n.ident.to_string());
            true
        }
        syn::UseTree::Rename(r) => {
            names.insert(r.rename.to_string());
            true
        }
        syn::UseTree::Glob(_) => false,
        syn::UseTree::Group(g) => g.items.iter().all(|t| collect_use_names(t, names)),
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn check(tokens: proc_macro2::TokenStream) -> Result<(), String> {
        let app = crate::parse::app(quote!(), tokens).map_err(|e| e.to_string())?;
        let analysis = crate::analyze::app(&app);
        super::app(&app, &analysis).map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_a_consistent_app() {
        check(quote! {
            mod app {
                use std::time::Duration;
                #[shared] struct Shared { a: u32 }
                #[local] struct Local { l: u32 }
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) { loop {} }
                #[task(priority = 1, shared = [a], local = [l])]
                fn t(_: t::Context) { u::spawn_after(Duration::from_secs(1)).ok(); }
                #[task(priority = 2, shared = [a])] fn u(_: u::Context) { t::spawn().ok(); }
            }
        })
        .unwrap();
    }

    #[test]
    fn reports_unknown_spawn_but_not_with_glob_imports() {
        let app = quote! {
            mod app {
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                    nope::spawn().ok(); loop {}
                }
            }
        };
        let err = check(app).unwrap_err();
        assert!(err.contains("spawn of unknown task `nope`"), "{err}");
        check(quote! {
            mod app {
                use super::*;
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                    nope::spawn().ok(); loop {}
                }
            }
        })
        .unwrap();
    }

    #[test]
    fn reports_a_local_shared_by_two_tasks() {
        let err = check(quote! {
            mod app {
                #[local] struct Local { l: u32 }
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) { loop {} }
                #[task(local = [l])] fn a(_: a::Context) {}
                #[task(local = [l])] fn b(_: b::Context) {}
            }
        })
        .unwrap_err();
        assert!(err.contains("used by task `a` and task `b`"), "{err}");
    }
}
