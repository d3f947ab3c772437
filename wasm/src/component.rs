//! WASI 0.2 command components (`wasi:cli/command`, what componentize-py, componentize-js,
//! `wasm32-wasip2` Rust and TinyGo emit): their store state, linker and entry call. Everything
//! else — cache, limits, fuel, epochs, output, outcome — is shared with preview1 modules.
//!
//! What a component is given: `wasi:cli` (args, env, stdio captured, exit), clocks, random,
//! `wasi:filesystem` with no preopened directory, `wasi:sockets` linked but with every use
//! denied (wasmtime's default), and `wasi:http/outgoing-handler` through [`PolicyHooks`].

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::{I32Exit, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::journal::{self, Journaled, Recorder};
use crate::limiter::RunLimiter;
use crate::net::hooks::PolicyHooks;

/// Core instances one component may create. Toolchains emit several (componentize-py 14,
/// componentize-js and Rust 4) plus wasmtime's adapter modules; the limiter's count covers
/// all of them, so 1 — right for preview1 modules — would refuse every component.
pub(crate) const COMPONENT_INSTANCES: usize = 64;
/// Tables across a component's core instances.
pub(crate) const COMPONENT_TABLES: usize = 32;

/// Per-store data of a component run. The WASI and HTTP views share one resource table
/// because HTTP bodies are `wasi:io` streams.
pub(crate) struct ComponentState {
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: PolicyHooks,
    pub(crate) limiter: RunLimiter,
}

impl ComponentState {
    pub(crate) fn new(wasi: WasiCtx, hooks: PolicyHooks, limiter: RunLimiter) -> ComponentState {
        ComponentState { table: ResourceTable::new(), wasi, http: WasiHttpCtx::new(), hooks, limiter }
    }
}

impl WasiView for ComponentState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl Journaled for ComponentState {
    fn recorder(&self) -> &Recorder {
        self.hooks.recorder()
    }
}

impl WasiHttpView for ComponentState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.hooks }
    }
}

/// The component linker: WASI 0.2 plus `wasi:http`'s client half only (not the proxy world's
/// WASI interfaces a second time), with polls and response body reads journaled.
pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<ComponentState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    journal::add_to_linker(&mut linker)?;
    Ok(linker)
}

/// Type-checks every import against the linker and finds the `wasi:cli/run` export, so a
/// component that would not link fails at load, not mid-run.
pub(crate) fn prepare(
    linker: &Linker<ComponentState>,
    component: &Component,
) -> wasmtime::Result<CommandPre<ComponentState>> {
    CommandPre::new(linker.instantiate_pre(component)?)
}

/// Instantiates and calls `wasi:cli/run`. A guest's `run` returning its error value (Rust
/// `main` returning `Err`, Python raising, a rejected JS promise) is exit code 1, like a
/// command's; traps and `exit(n)` come back as errors, as from a module.
pub(crate) async fn call(
    pre: &CommandPre<ComponentState>,
    store: &mut Store<ComponentState>,
) -> Result<(), Failure> {
    let command = pre.instantiate_async(&mut *store).await.map_err(Failure::Instantiate)?;
    match command.wasi_cli_run().call_run(&mut *store).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(())) => Err(Failure::Run(wasmtime::Error::new(I32Exit(1)))),
        Err(error) => Err(Failure::Run(error)),
    }
}

/// How [`call`] failed: before the guest ran, or while it ran.
pub(crate) enum Failure {
    Instantiate(wasmtime::Error),
    Run(wasmtime::Error),
}
