//! Parsing: turns the `#[preempt::app(..)] mod app { .. }` tokens into an [`App`].
//!
//! This stage only checks what it must to build the model (the shape of attributes, that
//! each special item appears at most once, the signatures of `init`, `idle` and the tasks).
//! Cross-item rules (undeclared resources, a local resource used twice, `#[lock_free]` over
//! several priorities...) are `check`'s job, after `analyze` has computed priorities and
//! ceilings. Every error is a `syn::Error` spanned on the offending tokens.

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, Ident, Item, ItemFn, ItemMod, ItemStruct, LitInt, Pat, ReturnType,
    Token, Type, Visibility, bracketed,
};

/// The highest SCHED_FIFO priority Linux accepts (`sched_get_priority_max(SCHED_FIFO)`).
pub(crate) const MAX_PRIORITY: u8 = 99;
/// The default executor thread stack: large enough for ordinary Rust code, small enough to
/// lock and prefault cheaply (the main thread of a Rust program gets 8 MiB; RTIC tasks are
/// short run-to-completion functions).
pub(crate) const DEFAULT_STACK_SIZE: usize = 1 << 20;
/// The largest accepted `capacity`: message slots are static memory, and a task that needs
/// more backlog than this wants a different design (a ring buffer resource).
pub(crate) const MAX_CAPACITY: u16 = 4096;

/// What an executor does when one of its tasks panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnPanic {
    /// Report it and stop the application with a non-zero exit code (the default).
    Stop,
    /// Report it and keep running later spawns.
    Continue,
}

/// The arguments of `#[preempt::app(..)]`.
#[derive(Debug)]
pub(crate) struct AppArgs {
    /// `cores = [p1 = 0, p2 = [0, 1]]`: CPU affinity per priority level.
    pub(crate) cores: Vec<CoreBinding>,
    /// `on_panic = stop | continue`.
    pub(crate) on_panic: OnPanic,
    /// `main = false` suppresses the generated `fn main`.
    pub(crate) main: bool,
    /// `stack_size = BYTES` of every executor thread.
    pub(crate) stack_size: usize,
    /// `idle_policy = [p1 = sleep, p2 = spin, p3 = spin_then_sleep(50)]`.
    pub(crate) idle: Vec<IdleBinding>,
    /// `accounting = false` turns the per-job statistics off.
    pub(crate) accounting: bool,
    /// `page_faults = false` turns the per-busy-period `getrusage` off.
    pub(crate) page_faults: bool,
    /// `summary = true` prints statistics and the analysis at exit.
    pub(crate) summary: bool,
    /// `metrics = "addr"` serves the app's metrics there.
    pub(crate) metrics: Option<String>,
    /// `clock = mock` runs the app in the simulator.
    pub(crate) mock_clock: bool,
    /// `explain = true` explains deadline misses from the kernel trace.
    pub(crate) explain: bool,
    /// `rt_safety = "warn" | "abort" | "off"`; `None`: by build (warn in debug, off in
    /// release).
    pub(crate) rt_safety: Option<RtSafety>,
    /// `global_allocator = false`: no checked `#[global_allocator]` next to `fn main`.
    pub(crate) global_allocator: bool,
}

/// `rt_safety = ".."`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RtSafety {
    Off,
    Warn,
    Abort,
}

/// What a level does when idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdlePolicy {
    Sleep,
    Spin,
    /// Microseconds.
    SpinThenSleep(u64),
}

/// One `pN = policy` entry of `idle_policy = [..]`.
#[derive(Debug)]
pub(crate) struct IdleBinding {
    pub(crate) priority: u8,
    pub(crate) policy: IdlePolicy,
    pub(crate) span: Span,
}

/// `on_miss = ..` of a periodic task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnMiss {
    Burst,
    Skip,
    Delay,
    Fault,
}

/// How a task is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskKind {
    /// `fn`, released by spawns.
    Software,
    /// `async fn`, released by `spawn`, one live instance.
    Async,
    /// `period = ..`, released by the runtime.
    Periodic,
    /// `binds = field`, released by its fd.
    Hardware,
}

/// A duration attribute: the expression, and its value in ns if it is a literal form.
#[derive(Debug)]
pub(crate) struct DurationArg {
    pub(crate) expr: Expr,
    pub(crate) const_ns: Option<u64>,
    pub(crate) span: Span,
}

/// One `pN = cpus` entry of `cores = [..]`.
#[derive(Debug)]
pub(crate) struct CoreBinding {
    pub(crate) priority: u8,
    pub(crate) cpus: Vec<usize>,
    pub(crate) span: Span,
}

/// A resource struct (`#[shared]` or `#[local]`).
#[derive(Debug)]
pub(crate) struct ResourceStruct {
    /// The user's struct, attributes on fields stripped; `None` when the app has none.
    pub(crate) item: Option<ItemStruct>,
    pub(crate) fields: Vec<ResourceField>,
}

/// A field of a resource struct.
#[derive(Debug)]
pub(crate) struct ResourceField {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// `#[lock_free]` (shared resources only).
    pub(crate) lock_free: Option<Span>,
    /// The field's `#[cfg(..)]` attributes, repeated on everything generated for it.
    pub(crate) cfgs: Vec<Attribute>,
}

/// One entry of `shared = [..]`.
#[derive(Clone, Debug)]
pub(crate) struct SharedAccess {
    pub(crate) ident: Ident,
    /// `&name`: read-only access.
    pub(crate) read_only: bool,
}

/// One entry of `local = [..]`.
#[derive(Clone, Debug)]
pub(crate) enum LocalAccess {
    /// `name`: a field of the `#[local]` struct, initialised by `init`.
    Struct(Ident),
    /// `name: Type = expr`: declared (and initialised by a constant expression) right here.
    Declared {
        ident: Ident,
        ty: Box<Type>,
        expr: Box<Expr>,
    },
}

impl LocalAccess {
    pub(crate) fn ident(&self) -> &Ident {
        match self {
            LocalAccess::Struct(ident) | LocalAccess::Declared { ident, .. } => ident,
        }
    }
}

/// `#[init]`.
#[derive(Debug)]
pub(crate) struct Init {
    pub(crate) item: ItemFn,
    pub(crate) local: Vec<LocalAccess>,
    /// `-> (Shared, Local, init::Monotonics)` (RTIC v1) rather than `-> (Shared, Local)`
    /// (RTIC v2).
    pub(crate) monotonics: bool,
}

/// `#[idle]`.
#[derive(Debug)]
pub(crate) struct Idle {
    pub(crate) item: ItemFn,
    pub(crate) shared: Vec<SharedAccess>,
    pub(crate) local: Vec<LocalAccess>,
}

/// A `#[task]`: runs to completion (or, if `async`, until its future ends) on its
/// priority's executor.
#[derive(Debug)]
pub(crate) struct Task {
    pub(crate) item: ItemFn,
    pub(crate) kind: TaskKind,
    pub(crate) priority: u8,
    pub(crate) capacity: u16,
    pub(crate) shared: Vec<SharedAccess>,
    pub(crate) local: Vec<LocalAccess>,
    /// The message arguments (every input after the context).
    pub(crate) inputs: Vec<(Box<Pat>, Box<Type>)>,
    /// `period = ..` (periodic tasks).
    pub(crate) period: Option<DurationArg>,
    /// `deadline = ..`.
    pub(crate) deadline: Option<DurationArg>,
    /// `min_interarrival = ..` (sporadic tasks: the period response-time analysis assumes).
    pub(crate) min_interarrival: Option<DurationArg>,
    /// `on_miss = ..` (periodic tasks; default `Burst`).
    pub(crate) on_miss: OnMiss,
    /// `binds = field` (hardware tasks).
    pub(crate) binds: Option<Ident>,
    /// Declared in an `extern "Rust" { .. }` block: the body lives elsewhere (RTIC's
    /// `extern_spawn`), so only the call is generated.
    pub(crate) is_extern: bool,
    /// The task's `#[cfg(..)]` attributes, repeated on everything generated for it.
    pub(crate) cfgs: Vec<Attribute>,
    /// `local_task` (RTIC v2): spawned only from tasks of its priority, through
    /// `cx.local_spawner`, so its arguments need not be `Send`.
    pub(crate) local_task: bool,
    /// An async task that never returns (`-> !`): its local resources are `&'static mut`,
    /// as in RTIC v2, since no second instance can ever take them.
    pub(crate) divergent: bool,
}

impl Task {
    pub(crate) fn name(&self) -> &Ident {
        &self.item.sig.ident
    }
}

/// The whole application.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) args: AppArgs,
    pub(crate) module: ItemMod,
    pub(crate) shared: ResourceStruct,
    pub(crate) local: ResourceStruct,
    pub(crate) init: Init,
    pub(crate) idle: Option<Idle>,
    pub(crate) tasks: Vec<Task>,
    /// Everything else in the module, passed through untouched.
    pub(crate) user_items: Vec<Item>,
}

/// Parses the attribute arguments and the module.
pub(crate) fn app(args: TokenStream, input: TokenStream) -> syn::Result<App> {
    let args = app_args.parse2(args)?;
    let module: ItemMod = syn::parse2(input)?;
    let Some((_, items)) = &module.content else {
        return Err(syn::Error::new(
            module.span(),
            "#[preempt::app] needs an inline module: `mod app { .. }`",
        ));
    };

    let mut shared: Option<ResourceStruct> = None;
    let mut local: Option<ResourceStruct> = None;
    let mut init: Option<Init> = None;
    let mut idle: Option<Idle> = None;
    let mut tasks: Vec<Task> = Vec::new();
    let mut user_items = Vec::new();

    for item in items.iter().cloned() {
        match item {
            Item::Struct(mut st) => {
                if let Some(attr) = take_attr(&mut st.attrs, "shared")? {
                    if shared.is_some() {
                        return Err(syn::Error::new(
                            attr.span(),
                            "second #[shared] struct: an app has at most one",
                        ));
                    }
                    shared = Some(resource_struct(st, true)?);
                } else if let Some(attr) = take_attr(&mut st.attrs, "local")? {
                    if local.is_some() {
                        return Err(syn::Error::new(
                            attr.span(),
                            "second #[local] struct: an app has at most one",
                        ));
                    }
                    local = Some(resource_struct(st, false)?);
                } else {
                    user_items.push(Item::Struct(st));
                }
            }
            Item::Fn(mut f) => {
                if let Some(attr) = take_attr(&mut f.attrs, "init")? {
                    if let Some(previous) = &init {
                        let mut err = syn::Error::new(
                            f.sig.ident.span(),
                            "second #[init] function: an app has exactly one",
                        );
                        err.combine(syn::Error::new(
                            previous.item.sig.ident.span(),
                            "the first #[init] is here",
                        ));
                        return Err(err);
                    }
                    init = Some(init_fn(f, attr)?);
                } else if let Some(attr) = take_attr(&mut f.attrs, "idle")? {
                    if idle.is_some() {
                        return Err(syn::Error::new(
                            f.sig.ident.span(),
                            "second #[idle] function: an app has at most one",
                        ));
                    }
                    idle = Some(idle_fn(f, attr)?);
                } else if let Some(attr) = take_attr(&mut f.attrs, "task")? {
                    push_task(&mut tasks, task_fn(f, attr)?)?;
                } else {
                    reject_rtic_only(&f.attrs)?;
                    user_items.push(Item::Fn(f));
                }
            }
            Item::ForeignMod(block)
                if block
                    .items
                    .iter()
                    .any(|i| matches!(i, syn::ForeignItem::Fn(_))) =>
            {
                for task in extern_tasks(&block)? {
                    push_task(&mut tasks, task)?;
                }
            }
            Item::Type(t) if has_attr(&t.attrs, "monotonic") => {
                return Err(syn::Error::new(
                    t.span(),
                    "#[monotonic] is not needed: timed spawns use CLOCK_MONOTONIC \
                     (preempt::Instant); remove this item and `init::Monotonics(..)` arguments",
                ));
            }
            other => user_items.push(other),
        }
    }

    let Some(init) = init else {
        return Err(syn::Error::new(
            module.ident.span(),
            "missing #[init] function: add `#[init] fn init(cx: init::Context) -> \
             (Shared, Local)`",
        ));
    };

    Ok(App {
        args,
        module,
        shared: shared.unwrap_or(ResourceStruct {
            item: None,
            fields: Vec::new(),
        }),
        local: local.unwrap_or(ResourceStruct {
            item: None,
            fields: Vec::new(),
        }),
        init,
        idle,
        tasks,
        user_items,
    })
}

/// Adds `task`, unless one of that name exists.
fn push_task(tasks: &mut Vec<Task>, task: Task) -> syn::Result<()> {
    if let Some(previous) = tasks.iter().find(|t| t.name() == task.name()) {
        let mut err = syn::Error::new(
            task.name().span(),
            format!("duplicate task `{}`", task.name()),
        );
        err.combine(syn::Error::new(
            previous.name().span(),
            "the first task of that name is here",
        ));
        return Err(err);
    }
    tasks.push(task);
    Ok(())
}

fn has_attr(attrs: &[Attribute], name: &str) -> bool {
    attrs.iter().any(|a| a.path().is_ident(name))
}

/// Removes the attribute `#[name]` / `#[name(..)]` and returns it.
fn take_attr(attrs: &mut Vec<Attribute>, name: &str) -> syn::Result<Option<Attribute>> {
    let Some(pos) = attrs.iter().position(|a| a.path().is_ident(name)) else {
        return Ok(None);
    };
    let attr = attrs.remove(pos);
    if let Some(second) = attrs.iter().find(|a| a.path().is_ident(name)) {
        return Err(syn::Error::new(
            second.span(),
            format!("#[{name}] given twice on one item"),
        ));
    }
    Ok(Some(attr))
}

fn reject_rtic_only(attrs: &[Attribute]) -> syn::Result<()> {
    for attr in attrs {
        if attr.path().is_ident("shared") || attr.path().is_ident("local") {
            return Err(syn::Error::new(
                attr.span(),
                "#[shared] and #[local] go on a struct, not on a function",
            ));
        }
    }
    Ok(())
}

fn app_args(input: ParseStream<'_>) -> syn::Result<AppArgs> {
    let mut args = AppArgs {
        cores: Vec::new(),
        on_panic: OnPanic::Stop,
        main: true,
        stack_size: DEFAULT_STACK_SIZE,
        idle: Vec::new(),
        accounting: true,
        page_faults: true,
        summary: false,
        metrics: None,
        mock_clock: false,
        explain: false,
        rt_safety: None,
        global_allocator: true,
    };
    let mut seen: Vec<String> = Vec::new();
    while !input.is_empty() {
        let key: Ident = input.parse()?;
        let name = key.to_string();
        if seen.contains(&name) {
            return Err(syn::Error::new(key.span(), format!("`{name}` given twice")));
        }
        seen.push(name.clone());
        input.parse::<Token![=]>()?;
        match name.as_str() {
            "cores" => args.cores = core_bindings(input)?,
            "on_panic" => {
                // `continue` is a keyword: parse it as a raw identifier.
                let value = Ident::parse_any(input)?;
                args.on_panic = match value.to_string().as_str() {
                    "stop" => OnPanic::Stop,
                    "continue" => OnPanic::Continue,
                    _ => {
                        return Err(syn::Error::new(
                            value.span(),
                            "expected `on_panic = stop` (the default) or `on_panic = continue`",
                        ));
                    }
                };
            }
            "main" => {
                let value: syn::LitBool = input.parse()?;
                args.main = value.value;
            }
            "accounting" => args.accounting = input.parse::<syn::LitBool>()?.value,
            "page_faults" => args.page_faults = input.parse::<syn::LitBool>()?.value,
            "summary" => args.summary = input.parse::<syn::LitBool>()?.value,
            "explain" => args.explain = input.parse::<syn::LitBool>()?.value,
            "global_allocator" => {
                args.global_allocator = input.parse::<syn::LitBool>()?.value;
            }
            "rt_safety" => {
                let value: syn::LitStr = input.parse()?;
                args.rt_safety = Some(match value.value().as_str() {
                    "off" => RtSafety::Off,
                    "warn" => RtSafety::Warn,
                    "abort" => RtSafety::Abort,
                    _ => {
                        return Err(syn::Error::new(
                            value.span(),
                            "expected `rt_safety = \"warn\"` (report real-time safety findings \
                             at exit), `\"abort\"` (stop at the first) or `\"off\"`; the default \
                             is \"warn\" in debug builds and \"off\" in release builds",
                        ));
                    }
                });
            }
            "metrics" => args.metrics = Some(input.parse::<syn::LitStr>()?.value()),
            "idle_policy" => args.idle = idle_bindings(input)?,
            "clock" => {
                let value: Ident = input.parse()?;
                args.mock_clock = match value.to_string().as_str() {
                    "monotonic" => false,
                    "mock" => true,
                    _ => {
                        return Err(syn::Error::new(
                            value.span(),
                            "expected `clock = monotonic` (the default) or `clock = mock` (the \
                             deterministic simulator, for tests)",
                        ));
                    }
                };
            }
            "stack_size" => {
                let value: LitInt = input.parse()?;
                let bytes: usize = value.base10_parse()?;
                if bytes < 64 * 1024 {
                    return Err(syn::Error::new(
                        value.span(),
                        "stack_size below 64 KiB: executor threads need room for the \
                         dispatcher, the panic handler and your tasks",
                    ));
                }
                args.stack_size = bytes;
            }
            "device" | "dispatchers" | "peripherals" => {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "`{name}` is a Cortex-M argument: preempt runs software tasks on \
                         Linux threads (one per priority) and needs no interrupt vectors; \
                         remove it"
                    ),
                ));
            }
            _ => {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown app argument `{name}`; expected `cores`, `on_panic`, `main`, \
                         `stack_size`, `idle_policy`, `accounting`, `page_faults`, `summary`, \
                         `explain`, `metrics`, `clock`, `rt_safety` or `global_allocator`"
                    ),
                ));
            }
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(args)
}

/// `[p1 = 0, p2 = [0, 1]]`
fn core_bindings(input: ParseStream<'_>) -> syn::Result<Vec<CoreBinding>> {
    let content;
    bracketed!(content in input);
    let mut out: Vec<CoreBinding> = Vec::new();
    while !content.is_empty() {
        let key: Ident = content.parse()?;
        let text = key.to_string();
        let priority = level_key(&key).map_err(|_| {
            syn::Error::new(
                key.span(),
                format!(
                    "expected a priority level `p1` ..= `p{MAX_PRIORITY}` (e.g. \
                     `cores = [p1 = 0, p2 = [0, 1]]`), found `{text}`"
                ),
            )
        })?;
        if out.iter().any(|b| b.priority == priority) {
            return Err(syn::Error::new(
                key.span(),
                format!("priority level `{text}` bound twice"),
            ));
        }
        content.parse::<Token![=]>()?;
        let mut cpus = Vec::new();
        if content.peek(syn::token::Bracket) {
            let list;
            bracketed!(list in content);
            let lits: Punctuated<LitInt, Token![,]> = Punctuated::parse_terminated(&list)?;
            for lit in &lits {
                cpus.push(lit.base10_parse::<usize>()?);
            }
            if cpus.is_empty() {
                return Err(syn::Error::new(
                    key.span(),
                    "empty CPU list: give at least one CPU or leave the level out",
                ));
            }
        } else {
            let lit: LitInt = content.parse()?;
            cpus.push(lit.base10_parse::<usize>()?);
        }
        out.push(CoreBinding {
            priority,
            cpus,
            span: key.span(),
        });
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    Ok(out)
}

/// `[p1 = sleep, p2 = spin, p3 = spin_then_sleep(50)]`
fn idle_bindings(input: ParseStream<'_>) -> syn::Result<Vec<IdleBinding>> {
    let content;
    bracketed!(content in input);
    let mut out: Vec<IdleBinding> = Vec::new();
    while !content.is_empty() {
        let key: Ident = content.parse()?;
        let priority = level_key(&key)?;
        if out.iter().any(|b| b.priority == priority) {
            return Err(syn::Error::new(
                key.span(),
                format!("idle policy of p{priority} given twice"),
            ));
        }
        content.parse::<Token![=]>()?;
        let policy: Ident = content.parse()?;
        let policy = match policy.to_string().as_str() {
            "sleep" => IdlePolicy::Sleep,
            "spin" => IdlePolicy::Spin,
            "spin_then_sleep" => {
                let arg;
                syn::parenthesized!(arg in content);
                let lit: LitInt = arg.parse()?;
                let us: u64 = lit.base10_parse()?;
                if us == 0 {
                    return Err(syn::Error::new(
                        lit.span(),
                        "spin_then_sleep(0) never spins: write `sleep`",
                    ));
                }
                IdlePolicy::SpinThenSleep(us)
            }
            _ => {
                return Err(syn::Error::new(
                    policy.span(),
                    "expected an idle policy: `sleep`, `spin` or `spin_then_sleep(µs)`",
                ));
            }
        };
        out.push(IdleBinding {
            priority,
            policy,
            span: key.span(),
        });
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    Ok(out)
}

/// `pN` -> N.
fn level_key(key: &Ident) -> syn::Result<u8> {
    key.to_string()
        .strip_prefix('p')
        .and_then(|n| n.parse::<u8>().ok())
        .filter(|p| (1..=MAX_PRIORITY).contains(p))
        .ok_or_else(|| {
            syn::Error::new(
                key.span(),
                format!("expected a priority level `p1` ..= `p{MAX_PRIORITY}`"),
            )
        })
}

/// A duration attribute: any expression; `N.unit()` literals are also evaluated here so
/// that zero and deadline > period are compile errors.
fn duration_arg(input: ParseStream<'_>) -> syn::Result<DurationArg> {
    let expr: Expr = input.parse()?;
    let span = expr.span();
    let const_ns = literal_ns(&expr)?;
    Ok(DurationArg {
        expr,
        const_ns,
        span,
    })
}

/// `5.millis()` -> 5_000_000.
fn literal_ns(expr: &Expr) -> syn::Result<Option<u64>> {
    let Expr::MethodCall(call) = expr else {
        return Ok(None);
    };
    let Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(lit),
        ..
    }) = &*call.receiver
    else {
        return Ok(None);
    };
    if !call.args.is_empty() {
        return Ok(None);
    }
    let value: u64 = lit.base10_parse()?;
    let unit: u64 = match call.method.to_string().as_str() {
        "nanos" => 1,
        "micros" => 1_000,
        "millis" => 1_000_000,
        "secs" | "seconds" => 1_000_000_000,
        _ => {
            return Err(syn::Error::new(
                call.method.span(),
                "unknown duration unit: use `nanos`, `micros`, `millis`, `secs` or `seconds` \
                 (preempt::time::DurationExt), or any `Duration` expression",
            ));
        }
    };
    value.checked_mul(unit).map(Some).ok_or_else(|| {
        syn::Error::new(
            lit.span(),
            "duration too long: it overflows u64 nanoseconds",
        )
    })
}

fn resource_struct(mut st: ItemStruct, shared: bool) -> syn::Result<ResourceStruct> {
    let kind = if shared { "#[shared]" } else { "#[local]" };
    if !st.generics.params.is_empty() || st.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            st.generics.span(),
            format!("a {kind} struct cannot be generic"),
        ));
    }
    let fields = match &mut st.fields {
        syn::Fields::Named(named) => &mut named.named,
        syn::Fields::Unit => {
            return Err(syn::Error::new(
                st.ident.span(),
                format!(
                    "write the {kind} struct with braces: `struct {} {{}}`",
                    st.ident
                ),
            ));
        }
        syn::Fields::Unnamed(unnamed) => {
            return Err(syn::Error::new(
                unnamed.span(),
                format!("{kind} struct fields need names: they name the resources"),
            ));
        }
    };
    let mut out = Vec::new();
    for field in fields.iter_mut() {
        let lock_free = take_attr(&mut field.attrs, "lock_free")?.map(|a| a.span());
        if let (Some(span), false) = (lock_free, shared) {
            return Err(syn::Error::new(
                span,
                "#[lock_free] applies to #[shared] resources; #[local] ones never lock",
            ));
        }
        let Some(ident) = field.ident.clone() else {
            return Err(syn::Error::new(field.span(), "resource fields need names"));
        };
        out.push(ResourceField {
            ident,
            ty: field.ty.clone(),
            lock_free,
            cfgs: cfgs(&field.attrs),
        });
    }
    Ok(ResourceStruct {
        item: Some(st),
        fields: out,
    })
}

/// Key-value arguments of `#[init(..)]`, `#[idle(..)]` and `#[task(..)]`.
#[derive(Default)]
struct ItemArgs {
    priority: Option<(u8, Span)>,
    capacity: Option<(u16, Span)>,
    shared: Option<(Vec<SharedAccess>, Span)>,
    local: Option<(Vec<LocalAccess>, Span)>,
    period: Option<DurationArg>,
    deadline: Option<DurationArg>,
    min_interarrival: Option<DurationArg>,
    on_miss: Option<(OnMiss, Span)>,
    binds: Option<Ident>,
    local_task: Option<(bool, Span)>,
}

fn item_args(attr: &Attribute, what: &str) -> syn::Result<ItemArgs> {
    let mut out = ItemArgs::default();
    let tokens = match &attr.meta {
        syn::Meta::Path(_) => return Ok(out),
        syn::Meta::List(list) => list.tokens.clone(),
        syn::Meta::NameValue(nv) => {
            return Err(syn::Error::new(
                nv.span(),
                format!("expected `#[{what}]` or `#[{what}(key = value, ..)]`"),
            ));
        }
    };
    let parser = |input: ParseStream<'_>| -> syn::Result<()> {
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            let name = key.to_string();
            let duplicate = || syn::Error::new(key.span(), format!("`{name}` given twice"));
            if name == "local_task" && what == "task" {
                // RTIC v2: `local_task` or `local_task = true|false`.
                if out.local_task.is_some() {
                    return Err(duplicate());
                }
                let value = if input.parse::<Option<Token![=]>>()?.is_some() {
                    input.parse::<syn::LitBool>()?.value
                } else {
                    true
                };
                out.local_task = Some((value, key.span()));
                if input.is_empty() {
                    break;
                }
                input.parse::<Token![,]>()?;
                continue;
            }
            input.parse::<Token![=]>()?;
            match name.as_str() {
                "priority" if what == "task" => {
                    let lit: LitInt = input.parse()?;
                    let value: u64 = lit.base10_parse()?;
                    if value > u64::from(MAX_PRIORITY) {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "task priority {value} is outside 0..={MAX_PRIORITY}: executors are \
                                 SCHED_FIFO threads, whose priorities are 1 (lowest) ..= 99 (0: \
                                 async tasks on a SCHED_OTHER thread)"
                            ),
                        ));
                    }
                    if out.priority.is_some() {
                        return Err(duplicate());
                    }
                    out.priority = Some((u8::try_from(value).unwrap_or(MAX_PRIORITY), lit.span()));
                }
                "capacity" if what == "task" => {
                    let lit: LitInt = input.parse()?;
                    let value: u64 = lit.base10_parse()?;
                    if value == 0 || value > u64::from(MAX_CAPACITY) {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "capacity {value} is outside 1..={MAX_CAPACITY}: it is how many \
                                 messages of this task may wait at once"
                            ),
                        ));
                    }
                    if out.capacity.is_some() {
                        return Err(duplicate());
                    }
                    out.capacity = Some((u16::try_from(value).unwrap_or(MAX_CAPACITY), lit.span()));
                }
                "shared" if what != "init" => {
                    if out.shared.is_some() {
                        return Err(duplicate());
                    }
                    out.shared = Some((shared_list(input)?, key.span()));
                }
                "shared" => {
                    return Err(syn::Error::new(
                        key.span(),
                        "#[init] cannot access shared resources: it creates them (return them \
                         in `Shared { .. }`)",
                    ));
                }
                "local" => {
                    if out.local.is_some() {
                        return Err(duplicate());
                    }
                    out.local = Some((local_list(input)?, key.span()));
                }
                "binds" if what == "task" => {
                    if out.binds.is_some() {
                        return Err(duplicate());
                    }
                    let field: Ident = input.parse().map_err(|e| {
                        syn::Error::new(
                            e.span(),
                            "`binds` names a field of the #[local] struct that holds an fd \
                             source: `binds = my_timer`",
                        )
                    })?;
                    out.binds = Some(field);
                }
                "period" if what == "task" => {
                    if out.period.is_some() {
                        return Err(duplicate());
                    }
                    out.period = Some(duration_arg(input)?);
                }
                "deadline" if what == "task" => {
                    if out.deadline.is_some() {
                        return Err(duplicate());
                    }
                    out.deadline = Some(duration_arg(input)?);
                }
                "min_interarrival" if what == "task" => {
                    if out.min_interarrival.is_some() {
                        return Err(duplicate());
                    }
                    out.min_interarrival = Some(duration_arg(input)?);
                }
                "on_miss" if what == "task" => {
                    if out.on_miss.is_some() {
                        return Err(duplicate());
                    }
                    let value: Ident = input.parse()?;
                    let policy = match value.to_string().as_str() {
                        "Burst" => OnMiss::Burst,
                        "Skip" => OnMiss::Skip,
                        "Delay" => OnMiss::Delay,
                        "Fault" => OnMiss::Fault,
                        _ => {
                            return Err(syn::Error::new(
                                value.span(),
                                "expected an overrun policy: `Burst` (the default), `Skip`, \
                                 `Delay` or `Fault`",
                            ));
                        }
                    };
                    out.on_miss = Some((policy, value.span()));
                }
                _ => {
                    let expected = match what {
                        "task" => {
                            "`priority`, `capacity`, `shared`, `local`, `period`, `deadline`, \
                             `min_interarrival`, `on_miss`, `binds` or `local_task`"
                        }
                        "idle" => "`shared` or `local`",
                        _ => "`local`",
                    };
                    return Err(syn::Error::new(
                        key.span(),
                        format!("unknown #[{what}] argument `{name}`; expected {expected}"),
                    ));
                }
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(())
    };
    parser.parse2(tokens)?;
    Ok(out)
}

/// `[a, &b]`
fn shared_list(input: ParseStream<'_>) -> syn::Result<Vec<SharedAccess>> {
    let content;
    bracketed!(content in input);
    let mut out: Vec<SharedAccess> = Vec::new();
    while !content.is_empty() {
        let read_only = content.parse::<Option<Token![&]>>()?.is_some();
        let ident: Ident = content.parse()?;
        if out.iter().any(|a| a.ident == ident) {
            return Err(syn::Error::new(
                ident.span(),
                format!("shared resource `{ident}` listed twice"),
            ));
        }
        out.push(SharedAccess { ident, read_only });
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    Ok(out)
}

/// `[x, y: u32 = 0]`
fn local_list(input: ParseStream<'_>) -> syn::Result<Vec<LocalAccess>> {
    let content;
    bracketed!(content in input);
    let mut out: Vec<LocalAccess> = Vec::new();
    while !content.is_empty() {
        let ident: Ident = content.parse()?;
        let access = if content.peek(Token![:]) {
            content.parse::<Token![:]>()?;
            let ty: Type = content.parse()?;
            if !content.peek(Token![=]) {
                return Err(syn::Error::new(
                    ty.span(),
                    format!(
                        "a declared local resource needs an initial value: `{ident}: {} = ..`",
                        quote::ToTokens::to_token_stream(&ty)
                    ),
                ));
            }
            content.parse::<Token![=]>()?;
            let expr: Expr = content.parse()?;
            LocalAccess::Declared {
                ident,
                ty: Box::new(ty),
                expr: Box::new(expr),
            }
        } else {
            LocalAccess::Struct(ident)
        };
        if out.iter().any(|a| a.ident() == access.ident()) {
            return Err(syn::Error::new(
                access.ident().span(),
                format!("local resource `{}` listed twice", access.ident()),
            ));
        }
        out.push(access);
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>()?;
    }
    Ok(out)
}

/// Checks the parts of a signature that no special function may have (`async` is checked
/// by the caller: tasks may be async).
fn plain_signature(f: &ItemFn, what: &str) -> syn::Result<()> {
    let sig = &f.sig;
    if let (Some(token), false) = (&sig.asyncness, what == "task") {
        return Err(syn::Error::new(
            token.span(),
            format!("#[{what}] functions are synchronous and run to completion: remove `async`"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            format!("#[{what}] functions cannot be generic"),
        ));
    }
    if let Some(token) = &sig.unsafety {
        return Err(syn::Error::new(
            token.span(),
            format!("#[{what}] functions cannot be `unsafe`"),
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new(
            abi.span(),
            format!("#[{what}] functions use the Rust ABI"),
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "variadic arguments are not supported",
        ));
    }
    if !matches!(f.vis, Visibility::Inherited) {
        return Err(syn::Error::new(
            f.vis.span(),
            format!("#[{what}] functions are called by the runtime: remove the visibility"),
        ));
    }
    Ok(())
}

/// Checks that the first input is `cx: <name>::Context` (any pattern).
fn context_input(f: &ItemFn, what: &str) -> syn::Result<()> {
    let name = &f.sig.ident;
    let expected = format!("the first argument must be the context: `cx: {name}::Context`");
    let Some(first) = f.sig.inputs.first() else {
        return Err(syn::Error::new(f.sig.paren_token.span.join(), expected));
    };
    let FnArg::Typed(pt) = first else {
        return Err(syn::Error::new(
            first.span(),
            format!("#[{what}] functions are free functions: remove `self`"),
        ));
    };
    if !is_context_path(&pt.ty, name) {
        return Err(syn::Error::new(pt.ty.span(), expected));
    }
    Ok(())
}

fn is_context_path(ty: &Type, name: &Ident) -> bool {
    let Type::Path(tp) = ty else { return false };
    if tp.qself.is_some() {
        return false;
    }
    let segments: Vec<_> = tp.path.segments.iter().collect();
    segments.len() == 2 && segments[0].ident == *name && segments[1].ident == "Context"
}

fn init_fn(item: ItemFn, attr: Attribute) -> syn::Result<Init> {
    plain_signature(&item, "init")?;
    context_input(&item, "init")?;
    if item.sig.inputs.len() != 1 {
        return Err(syn::Error::new(
            item.sig.inputs.span(),
            "#[init] takes only its context: `fn init(cx: init::Context)`",
        ));
    }
    let Some(monotonics) = returns_init_tuple(&item) else {
        let span = match &item.sig.output {
            ReturnType::Default => item.sig.ident.span(),
            ReturnType::Type(_, ty) => ty.span(),
        };
        return Err(syn::Error::new(
            span,
            format!(
                "#[init] must return the resources: `-> (Shared, Local)` (RTIC v2) or \
                 `-> (Shared, Local, {}::Monotonics)` (RTIC v1)",
                item.sig.ident
            ),
        ));
    };
    let args = item_args(&attr, "init")?;
    Ok(Init {
        item,
        local: args.local.map(|(l, _)| l).unwrap_or_default(),
        monotonics,
    })
}

/// `Some(false)` for `(Shared, Local)`, `Some(true)` for `(Shared, Local, init::Monotonics)`.
fn returns_init_tuple(item: &ItemFn) -> Option<bool> {
    let ReturnType::Type(_, ty) = &item.sig.output else {
        return None;
    };
    let Type::Tuple(tuple) = &**ty else {
        return None;
    };
    let last_is = |ty: &Type, name: &str| -> bool {
        matches!(ty, Type::Path(tp) if tp.qself.is_none()
            && tp.path.segments.last().is_some_and(|s| s.ident == name && s.arguments.is_empty()))
    };
    let resources = tuple.elems.len() >= 2
        && last_is(&tuple.elems[0], "Shared")
        && last_is(&tuple.elems[1], "Local");
    match tuple.elems.len() {
        2 if resources => Some(false),
        3 if resources && last_is(&tuple.elems[2], "Monotonics") => Some(true),
        _ => None,
    }
}

fn idle_fn(item: ItemFn, attr: Attribute) -> syn::Result<Idle> {
    plain_signature(&item, "idle")?;
    context_input(&item, "idle")?;
    if item.sig.inputs.len() != 1 {
        return Err(syn::Error::new(
            item.sig.inputs.span(),
            "#[idle] takes only its context: `fn idle(cx: idle::Context) -> !`",
        ));
    }
    match &item.sig.output {
        ReturnType::Default => {}
        ReturnType::Type(_, ty) if matches!(**ty, Type::Never(_)) => {}
        ReturnType::Type(_, ty) => {
            return Err(syn::Error::new(
                ty.span(),
                "#[idle] returns `!` (loops forever) or nothing",
            ));
        }
    }
    let args = item_args(&attr, "idle")?;
    Ok(Idle {
        item,
        shared: args.shared.map(|(s, _)| s).unwrap_or_default(),
        local: args.local.map(|(l, _)| l).unwrap_or_default(),
    })
}

fn task_fn(item: ItemFn, attr: Attribute) -> syn::Result<Task> {
    plain_signature(&item, "task")?;
    let name = item.sig.ident.to_string();
    if name == "init" || name == "idle" {
        return Err(syn::Error::new(
            item.sig.ident.span(),
            format!("a task cannot be called `{name}`: the name belongs to the #[{name}] context"),
        ));
    }
    context_input(&item, "task")?;
    match &item.sig.output {
        ReturnType::Default => {}
        // RTIC v2: a divergent async task (`-> !`) runs for the life of the app.
        ReturnType::Type(_, ty)
            if matches!(**ty, Type::Never(_)) && item.sig.asyncness.is_some() => {}
        ReturnType::Type(_, ty) => {
            return Err(syn::Error::new(
                ty.span(),
                "tasks return nothing (async tasks may also diverge: `-> !`): send results on \
                 with a spawn or a shared resource",
            ));
        }
    }
    let mut inputs = Vec::new();
    for input in item.sig.inputs.iter().skip(1) {
        match input {
            FnArg::Typed(pt) => {
                if let Type::ImplTrait(_) = &*pt.ty {
                    return Err(syn::Error::new(
                        pt.ty.span(),
                        "task arguments are stored in a message queue: give a concrete type",
                    ));
                }
                inputs.push((pt.pat.clone(), pt.ty.clone()));
            }
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(r.span(), "tasks cannot take `self`"));
            }
        }
    }
    let args = item_args(&attr, "task")?;
    let asyncness = item.sig.asyncness;
    let kind = match (&args.binds, &args.period, asyncness) {
        (Some(field), Some(period), _) => {
            let mut err = syn::Error::new(
                period.span,
                "a task is either periodic (`period`) or bound to an fd (`binds`), not both",
            );
            err.combine(syn::Error::new(field.span(), "bound here"));
            return Err(err);
        }
        (Some(field), None, Some(token)) => {
            let mut err = syn::Error::new(
                token.span(),
                "hardware tasks (`binds`) run to completion whenever their fd is readable: \
                 remove `async` (spawn an async task from it if it must wait)",
            );
            err.combine(syn::Error::new(field.span(), "bound here"));
            return Err(err);
        }
        (None, Some(period), Some(token)) => {
            let mut err = syn::Error::new(
                token.span(),
                "periodic tasks run to completion once per period: remove `async`, or write an \
                 async task that loops on `Mono::delay_until(next).await`",
            );
            err.combine(syn::Error::new(period.span, "period given here"));
            return Err(err);
        }
        (Some(_), None, None) => TaskKind::Hardware,
        (None, Some(_), None) => TaskKind::Periodic,
        (None, None, Some(_)) => TaskKind::Async,
        (None, None, None) => TaskKind::Software,
    };
    let released_by_runtime = match kind {
        TaskKind::Periodic => Some("periodic tasks are released by the runtime"),
        TaskKind::Hardware => Some("hardware tasks are released by their fd"),
        TaskKind::Software | TaskKind::Async => None,
    };
    if let (Some(why), Some((_, first))) = (released_by_runtime, inputs.first()) {
        return Err(syn::Error::new(
            first.span(),
            format!("{why}: they take only their context, no message arguments"),
        ));
    }
    if let Some((_, span)) = args.capacity {
        let why = match kind {
            TaskKind::Software => None,
            TaskKind::Async => Some(
                "an async task has one live instance (`spawn` returns `Err` while it runs): \
                 it has no `capacity`",
            ),
            TaskKind::Periodic | TaskKind::Hardware => {
                Some("periodic and hardware tasks have no message queue: remove `capacity`")
            }
        };
        if let Some(why) = why {
            return Err(syn::Error::new(span, why));
        }
    }
    if let (Some((_, span)), false) = (args.on_miss, kind == TaskKind::Periodic) {
        return Err(syn::Error::new(
            span,
            "`on_miss` is the overrun policy of a periodic task: add `period = ..` or remove it",
        ));
    }
    let priority = args.priority.map_or(1, |(p, _)| p);
    if let (Some((0, span)), false) = (args.priority, kind == TaskKind::Async) {
        return Err(syn::Error::new(
            span,
            "priority 0 is for async tasks (they run when no other task does, on a SCHED_OTHER \
             thread); run-to-completion, periodic and hardware tasks need 1..=99",
        ));
    }
    let local_task = args.local_task.is_some_and(|(v, _)| v);
    if let (Some((true, span)), false) = (args.local_task, kind == TaskKind::Async) {
        return Err(syn::Error::new(
            span,
            "`local_task` applies to async tasks (RTIC v2): remove it or make the task `async`",
        ));
    }
    if let (Some(m), TaskKind::Periodic) = (&args.min_interarrival, kind) {
        return Err(syn::Error::new(
            m.span,
            "a periodic task's inter-arrival time is its period: remove `min_interarrival`",
        ));
    }
    for d in [&args.period, &args.deadline, &args.min_interarrival]
        .into_iter()
        .flatten()
    {
        if d.const_ns == Some(0) {
            return Err(syn::Error::new(
                d.span,
                "a duration of zero: give a positive duration",
            ));
        }
    }
    if let (Some(p), Some(d)) = (&args.period, &args.deadline) {
        if let (Some(pn), Some(dn)) = (p.const_ns, d.const_ns) {
            if dn > pn {
                return Err(syn::Error::new(
                    d.span,
                    format!(
                        "deadline ({dn} ns) longer than the period ({pn} ns): the runtime and \
                         the response-time analysis need deadline <= period"
                    ),
                ));
            }
        }
    }
    let item_output_never =
        matches!(&item.sig.output, ReturnType::Type(_, ty) if matches!(**ty, Type::Never(_)));
    let cfgs = cfgs(&item.attrs);
    if let (false, Some(attr)) = (
        matches!(kind, TaskKind::Software | TaskKind::Async),
        cfgs.first(),
    ) {
        return Err(syn::Error::new(
            attr.span(),
            "#[cfg] applies to software and async tasks; a periodic or hardware task is always \
             built (make its body conditional instead)",
        ));
    }
    Ok(Task {
        item,
        kind,
        priority,
        capacity: args.capacity.map_or(1, |(c, _)| c),
        shared: args.shared.map(|(s, _)| s).unwrap_or_default(),
        local: args.local.map(|(l, _)| l).unwrap_or_default(),
        inputs,
        period: args.period,
        deadline: args.deadline,
        min_interarrival: args.min_interarrival,
        on_miss: args.on_miss.map_or(OnMiss::Burst, |(m, _)| m),
        binds: args.binds,
        is_extern: false,
        cfgs,
        local_task,
        divergent: item_output_never,
    })
}

/// The `#[cfg(..)]` attributes among `attrs`.
fn cfgs(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .cloned()
        .collect()
}

/// The tasks of an `extern "Rust" { #[task(..)] async fn t(cx: t::Context); }` block (RTIC's
/// `extern_spawn`: the body lives in another module and is reached through a `use`).
fn extern_tasks(block: &syn::ItemForeignMod) -> syn::Result<Vec<Task>> {
    let mut tasks = Vec::new();
    for item in &block.items {
        let syn::ForeignItem::Fn(f) = item else {
            return Err(syn::Error::new(
                item.span(),
                "an `extern` block in the app declares tasks: `#[task(..)] async fn t(cx: \
                 t::Context);`",
            ));
        };
        let mut attrs = f.attrs.clone();
        for special in ["init", "idle"] {
            if let Some(attr) = take_attr(&mut attrs, special)? {
                return Err(syn::Error::new(
                    attr.span(),
                    format!(
                        "an extern #[{special}] is not supported: write `{special}` in the app \
                         module (it may call a function defined elsewhere)"
                    ),
                ));
            }
        }
        let Some(attr) = take_attr(&mut attrs, "task")? else {
            return Err(syn::Error::new(
                f.sig.ident.span(),
                "a function declared in the app's `extern` block must be a `#[task(..)]`",
            ));
        };
        let item = ItemFn {
            attrs,
            vis: Visibility::Inherited,
            sig: f.sig.clone(),
            block: Box::new(syn::parse_quote!({})),
        };
        let mut task = task_fn(item, attr)?;
        task.is_extern = true;
        tasks.push(task);
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_listing_1() {
        let app = app(
            quote!(),
            quote! {
                mod app {
                    #[local]
                    struct Local { start: Instant }
                    #[init]
                    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                        task1::spawn(0).unwrap();
                        (Shared {}, Local { start: Instant::now() }, init::Monotonics())
                    }
                    #[task(priority = 1)]
                    fn task1(_cx: task1::Context, x: i32) { task2::spawn(x + 1).unwrap(); }
                    #[task(priority = 1, local = [start])]
                    fn task2(cx: task2::Context, x: i32) {}
                }
            },
        )
        .unwrap();
        assert!(app.shared.item.is_none());
        assert_eq!(app.local.fields.len(), 1);
        assert_eq!(app.tasks.len(), 2);
        assert_eq!(app.tasks[1].local.len(), 1);
        assert_eq!(app.tasks[0].inputs.len(), 1);
    }

    #[test]
    fn parses_app_arguments() {
        let args = app_args
            .parse2(quote!(
                cores = [p1 = 0, p3 = [0, 1]],
                on_panic = continue,
                main = false
            ))
            .unwrap();
        assert_eq!(args.cores.len(), 2);
        assert_eq!(args.cores[1].priority, 3);
        assert_eq!(args.cores[1].cpus, vec![0, 1]);
        assert_eq!(args.on_panic, OnPanic::Continue);
        assert!(!args.main);
    }

    #[test]
    fn parses_local_declarations_and_read_only_shared() {
        let attr: Attribute = syn::parse_quote!(#[task(priority = 3, shared = [a, &b], local = [x, y: u32 = 0], capacity = 4)]);
        let args = item_args(&attr, "task").unwrap();
        assert_eq!(args.priority.unwrap().0, 3);
        assert_eq!(args.capacity.unwrap().0, 4);
        let shared = args.shared.unwrap().0;
        assert!(!shared[0].read_only && shared[1].read_only);
        let local = args.local.unwrap().0;
        assert!(matches!(local[0], LocalAccess::Struct(_)));
        assert!(matches!(local[1], LocalAccess::Declared { .. }));
    }

    #[test]
    fn rejects_priority_100_and_capacity_zero() {
        let attr: Attribute = syn::parse_quote!(#[task(priority = 100)]);
        let err = item_args(&attr, "task").err().unwrap().to_string();
        assert!(err.contains("outside 0..=99"), "{err}");
        let attr: Attribute = syn::parse_quote!(#[task(capacity = 0)]);
        let err = item_args(&attr, "task").err().unwrap().to_string();
        assert!(err.contains("capacity 0"), "{err}");
    }
}
