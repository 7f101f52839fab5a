//! The `#[preempt::app]` procedural macro.
//!
//! Use it through the `preempt` crate, which re-exports it and documents the syntax
//! (`preempt::app`). The macro runs four stages, as `rtic-macros` does:
//!
//! 1. `parse`: tokens to a model of the app (`#[shared]`/`#[local]` structs, `#[init]`,
//!    `#[idle]`, `#[task]`s and the app arguments);
//! 2. `analyze`: priority levels, resource ceilings, lock-free access, PCP groups;
//! 3. `check`: cross-item rules, each a spanned compile error;
//! 4. `codegen`: statics, context types, spawn functions, executors and `run`.

use proc_macro::TokenStream;

mod analyze;
mod check;
mod codegen;
mod parse;

/// Turns `mod app { .. }` into a real-time application. See the `preempt` crate's docs.
#[proc_macro_attribute]
pub fn app(args: TokenStream, input: TokenStream) -> TokenStream {
    match expand(args.into(), input.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn expand(
    args: proc_macro2::TokenStream,
    input: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let app = parse::app(args, input)?;
    let analysis = analyze::app(&app);
    check::app(&app, &analysis)?;
    Ok(codegen::app(&app, &analysis))
}
