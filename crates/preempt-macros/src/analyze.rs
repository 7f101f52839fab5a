//! Analysis: who uses which resource at which priority, and what that implies.
//!
//! * **Priority levels.** Every distinct task priority gets one executor thread; its message
//!   queues hold the sum of its tasks' capacities.
//! * **Ceilings.** The ceiling of a shared resource is the highest priority among its users
//!   (tasks, and `idle` at priority 0), as in the Priority Ceiling Protocol (Sha, Rajkumar and
//!   Lehoczky, 1990; thesis §2.2.2).
//! * **Access.** A resource needs a real lock only when users at *different* priorities,
//!   hence on different threads, may touch it mutably. When every user runs at one priority
//!   they share one executor thread and run to completion one after the other, so the access
//!   is exclusive without any atomic operation. When every user reads (`&res`), no lock is
//!   needed either: everyone gets `&T`, as in RTIC v2.
//! * **Groups.** Tasks that transitively share locked resources form one PCP group with its
//!   own system ceiling (`preempt_sync::pcp::PcpGroup`); independent groups never block each
//!   other, unlike the single process-wide ceiling of `pcp-mutex` 0.2.

use std::collections::BTreeMap;

use proc_macro2::Ident;

use crate::parse::{App, LocalAccess, TaskKind};

/// Who accesses a resource: a task (by index in `App::tasks`) or `idle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Context {
    Init,
    Idle,
    Task(usize),
}

/// How a shared resource is stored and reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// `#[lock_free]`, or every user at one priority: plain storage; `lock` is free.
    Exclusive,
    /// Every user reads (`&res`): plain storage, `&T` for everyone.
    ReadOnly,
    /// Users at several priorities, some writing: a PCP mutex of group `group`.
    Pcp { group: usize },
    /// Declared but used by no task.
    Unused,
}

/// The analysis of one shared resource.
#[derive(Debug)]
pub(crate) struct SharedInfo {
    /// `(user, priority, read_only)`, in the order of the tasks.
    pub(crate) users: Vec<(Context, u8, bool)>,
    pub(crate) ceiling: u8,
    pub(crate) access: Access,
}

/// One executor: a priority level and its tasks.
#[derive(Debug)]
pub(crate) struct Level {
    pub(crate) priority: u8,
    /// Indices into `App::tasks`.
    pub(crate) tasks: Vec<usize>,
    /// Message slots per queue: the software tasks' capacities plus two per async task
    /// (a `Start` and a `Poll`), at least 1.
    pub(crate) capacity: usize,
}

/// Message slots a task needs in each of its executor's queues.
pub(crate) fn queue_slots(app: &App, task: usize) -> usize {
    let t = &app.tasks[task];
    match t.kind {
        TaskKind::Software => usize::from(t.capacity),
        TaskKind::Async => 2,
        TaskKind::Periodic | TaskKind::Hardware => 0,
    }
}

/// The result of the analysis.
#[derive(Debug)]
pub(crate) struct Analysis {
    /// By field name of the `#[shared]` struct.
    pub(crate) shared: BTreeMap<String, SharedInfo>,
    /// `#[local]` struct field name -> the contexts that name it (more than one is an error).
    pub(crate) local_owners: BTreeMap<String, Vec<(Context, Ident)>>,
    /// Priority levels in increasing priority.
    pub(crate) levels: Vec<Level>,
    /// Number of PCP groups.
    pub(crate) groups: usize,
}

impl Analysis {
    /// The priority of a context (`idle` is 0, below every task).
    pub(crate) fn priority(app: &App, cx: Context) -> u8 {
        match cx {
            Context::Init | Context::Idle => 0,
            Context::Task(i) => app.tasks[i].priority,
        }
    }
}

/// Runs the analysis. It never fails: `check` reports what it finds inconsistent.
pub(crate) fn app(app: &App) -> Analysis {
    // Shared resources: users, ceilings.
    let mut shared: BTreeMap<String, SharedInfo> = app
        .shared
        .fields
        .iter()
        .map(|f| {
            (
                f.ident.to_string(),
                SharedInfo {
                    users: Vec::new(),
                    ceiling: 0,
                    access: Access::Unused,
                },
            )
        })
        .collect();
    let mut contexts: Vec<(Context, &[crate::parse::SharedAccess])> = Vec::new();
    if let Some(idle) = &app.idle {
        contexts.push((Context::Idle, &idle.shared));
    }
    for (i, task) in app.tasks.iter().enumerate() {
        contexts.push((Context::Task(i), &task.shared));
    }
    for (cx, accesses) in &contexts {
        let priority = Analysis::priority(app, *cx);
        for access in *accesses {
            if let Some(info) = shared.get_mut(&access.ident.to_string()) {
                info.users.push((*cx, priority, access.read_only));
                info.ceiling = info.ceiling.max(priority);
            }
        }
    }

    // Access kind, and PCP groups by union-find over the contexts of locked resources.
    let mut parent: BTreeMap<Context, Context> = BTreeMap::new();
    fn find(parent: &mut BTreeMap<Context, Context>, x: Context) -> Context {
        let p = *parent.entry(x).or_insert(x);
        if p == x {
            return x;
        }
        let root = find(parent, p);
        parent.insert(x, root);
        root
    }
    let lock_free: Vec<String> = app
        .shared
        .fields
        .iter()
        .filter(|f| f.lock_free.is_some())
        .map(|f| f.ident.to_string())
        .collect();
    let mut locked: Vec<String> = Vec::new();
    for (name, info) in shared.iter_mut() {
        if info.users.is_empty() {
            info.access = Access::Unused;
            continue;
        }
        let one_priority = info.users.iter().all(|u| u.1 == info.users[0].1);
        // Everyone `&res` gives `&T` to everyone, whatever the priorities (as in RTIC v2).
        info.access = if info.users.iter().all(|u| u.2) {
            Access::ReadOnly
        } else if lock_free.contains(name) || one_priority {
            Access::Exclusive
        } else {
            locked.push(name.clone());
            let first = info.users[0].0;
            for user in &info.users[1..] {
                let a = find(&mut parent, first);
                let b = find(&mut parent, user.0);
                if a != b {
                    parent.insert(a, b);
                }
            }
            Access::Pcp { group: 0 }
        };
    }
    let mut group_of_root: BTreeMap<Context, usize> = BTreeMap::new();
    for name in &locked {
        let first = shared[name].users[0].0;
        let root = find(&mut parent, first);
        let next = group_of_root.len();
        let group = *group_of_root.entry(root).or_insert(next);
        if let Some(info) = shared.get_mut(name) {
            info.access = Access::Pcp { group };
        }
    }

    // Local resources of the #[local] struct: who names them.
    let mut local_owners: BTreeMap<String, Vec<(Context, Ident)>> = BTreeMap::new();
    let mut note_locals = |cx: Context, locals: &[LocalAccess]| {
        for local in locals {
            if let LocalAccess::Struct(ident) = local {
                local_owners
                    .entry(ident.to_string())
                    .or_default()
                    .push((cx, ident.clone()));
            }
        }
    };
    note_locals(Context::Init, &app.init.local);
    if let Some(idle) = &app.idle {
        note_locals(Context::Idle, &idle.local);
    }
    for (i, task) in app.tasks.iter().enumerate() {
        note_locals(Context::Task(i), &task.local);
    }

    // Priority levels.
    let mut by_priority: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for (i, task) in app.tasks.iter().enumerate() {
        by_priority.entry(task.priority).or_default().push(i);
    }
    let levels = by_priority
        .into_iter()
        .map(|(priority, tasks)| Level {
            priority,
            capacity: tasks
                .iter()
                .map(|&i| queue_slots(app, i))
                .sum::<usize>()
                .max(1),
            tasks,
        })
        .collect();

    Analysis {
        shared,
        local_owners,
        levels,
        groups: group_of_root.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn analyse(tokens: proc_macro2::TokenStream) -> (App, Analysis) {
        let app = crate::parse::app(quote!(), tokens).unwrap();
        let analysis = super::app(&app);
        (app, analysis)
    }

    #[test]
    fn ceiling_is_the_highest_user_priority() {
        let (_, a) = analyse(quote! {
            mod app {
                #[shared] struct Shared { counter: u32 }
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) { loop {} }
                #[task(priority = 10, shared = [counter])] fn foo(_: foo::Context) {}
                #[task(priority = 15, shared = [counter])] fn bar(_: bar::Context, c: u32) {}
            }
        });
        let counter = &a.shared["counter"];
        assert_eq!(counter.ceiling, 15);
        assert_eq!(counter.access, Access::Pcp { group: 0 });
        assert_eq!(a.groups, 1);
        assert_eq!(a.levels.len(), 2);
        assert_eq!(a.levels[0].priority, 10);
    }

    #[test]
    fn one_priority_needs_no_lock_and_reads_need_none() {
        let (_, a) = analyse(quote! {
            mod app {
                #[shared] struct Shared { same: u32, read: u32, mixed: u32, only_read_here: u8 }
                #[init] fn init(_: init::Context) -> (Shared, Local) { loop {} }
                #[task(priority = 2, shared = [same, &read, &mixed, &only_read_here])] fn a(_: a::Context) {}
                #[task(priority = 2, shared = [same, &read])] fn b(_: b::Context) {}
                #[task(priority = 3, shared = [&read, mixed])] fn c(_: c::Context) {}
            }
        });
        assert_eq!(a.shared["same"].access, Access::Exclusive);
        assert_eq!(a.shared["read"].access, Access::ReadOnly);
        assert_eq!(a.shared["only_read_here"].access, Access::ReadOnly);
        assert_eq!(a.shared["mixed"].access, Access::Pcp { group: 0 });
        assert_eq!(a.shared["mixed"].ceiling, 3);
        assert_eq!(a.levels[0].capacity, 2);
    }

    #[test]
    fn independent_task_sets_get_separate_groups() {
        let (_, a) = analyse(quote! {
            mod app {
                #[shared] struct Shared { x: u32, y: u32, z: u32 }
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) { loop {} }
                #[task(priority = 1, shared = [x])] fn a(_: a::Context) {}
                #[task(priority = 2, shared = [x, y])] fn b(_: b::Context) {}
                #[task(priority = 3, shared = [y])] fn c(_: c::Context) {}
                #[task(priority = 4, shared = [z])] fn d(_: d::Context) {}
                #[task(priority = 5, shared = [z])] fn e(_: e::Context) {}
            }
        });
        // a-b-c share transitively through x and y; d-e through z.
        assert_eq!(a.groups, 2);
        let gx = a.shared["x"].access;
        let gy = a.shared["y"].access;
        let gz = a.shared["z"].access;
        assert_eq!(gx, gy);
        assert_ne!(gx, gz);
        assert_eq!(a.shared["x"].ceiling, 2);
        assert_eq!(a.shared["y"].ceiling, 3);
        assert_eq!(a.shared["z"].ceiling, 5);
    }

    #[test]
    fn idle_counts_as_priority_zero() {
        let (_, a) = analyse(quote! {
            mod app {
                #[shared] struct Shared { x: u32 }
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) { loop {} }
                #[idle(shared = [x])] fn idle(_: idle::Context) -> ! { loop {} }
                #[task(priority = 1, shared = [x])] fn a(_: a::Context) {}
            }
        });
        assert_eq!(a.shared["x"].access, Access::Pcp { group: 0 });
        assert_eq!(a.shared["x"].ceiling, 1);
        assert_eq!(a.shared["x"].users[0], (Context::Idle, 0, false));
    }

    #[test]
    fn lock_free_and_unused_resources() {
        let (_, a) = analyse(quote! {
            mod app {
                #[shared] struct Shared { #[lock_free] fast: u32, never: u8 }
                #[local] struct Local { l: u8 }
                #[init] fn init(_: init::Context) -> (Shared, Local, init::Monotonics) { loop {} }
                #[task(priority = 4, shared = [fast], local = [l])] fn a(_: a::Context) {}
                #[task(priority = 4, shared = [fast], local = [l])] fn b(_: b::Context) {}
            }
        });
        assert_eq!(a.shared["fast"].access, Access::Exclusive);
        assert_eq!(a.shared["never"].access, Access::Unused);
        assert_eq!(a.local_owners["l"].len(), 2);
        assert_eq!(a.groups, 0);
    }
}
