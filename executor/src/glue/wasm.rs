//! `GLUE_WASM`: runs a job's WebAssembly module in the sandboxed runtime of `jobwheel-wasm`.
//!
//! The trigger names the module by SHA-256 digest and says where the admin serves it. The
//! runtime fetches it only on a cache miss (memory, then the on-disk cache of compiled
//! artifacts), checks the digest, and compiles it once; a new upload is a new digest, so the
//! next trigger runs the new version with no restart while runs in flight keep theirs.
//!
//! The access token is only ever sent to a configured admin: a module URL must be relative
//! (resolved against each admin address in order) or point at one of the admin origins.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use jobwheel_protocol::{ACCESS_TOKEN_HEADER, WasmModuleRef};
use jobwheel_wasm::{LoadSource, LogSink, Outcome, RunInput, Runtime};

use crate::handler::{HandlerFuture, JobContext, JobHandler};

/// Everything GLUE_WASM handlers share: the runtime (engine + caches) and how to fetch modules.
pub(crate) struct WasmGlue {
    runtime: Runtime,
    http: reqwest::Client,
    /// Admin base addresses, each ending in `/`.
    admins: Vec<reqwest::Url>,
    token: Option<String>,
    max_module_bytes: u64,
}

impl WasmGlue {
    pub(crate) fn new(
        runtime: Runtime,
        admin_addresses: &[String],
        token: Option<String>,
        max_module_bytes: u64,
    ) -> anyhow::Result<Self> {
        let admins = admin_addresses
            .iter()
            .map(|a| {
                let base = if a.ends_with('/') { a.clone() } else { format!("{a}/") };
                reqwest::Url::parse(&base).with_context(|| format!("invalid admin address {a:?}"))
            })
            .collect::<anyhow::Result<_>>()?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(120))
            .build()?;
        Ok(Self { runtime, http, admins, token, max_module_bytes })
    }

    /// Candidate URLs for `reference`, in the order to try them.
    fn urls(&self, reference: &WasmModuleRef) -> anyhow::Result<Vec<reqwest::Url>> {
        match reqwest::Url::parse(&reference.url) {
            Ok(absolute) => {
                let trusted = self.admins.iter().any(|admin| admin.origin() == absolute.origin());
                if !trusted {
                    bail!(
                        "module URL {absolute} is not on a configured admin address; refusing to send \
                         the access token there (admin addresses: {})",
                        self.admins.iter().map(reqwest::Url::as_str).collect::<Vec<_>>().join(", ")
                    );
                }
                Ok(vec![absolute])
            }
            Err(_) => {
                if self.admins.is_empty() {
                    bail!("module URL {:?} is relative but no admin address is configured", reference.url);
                }
                let path = reference.url.trim_start_matches('/');
                self.admins.iter().map(|admin| Ok(admin.join(path)?)).collect()
            }
        }
    }

    async fn fetch(&self, reference: &WasmModuleRef) -> anyhow::Result<Vec<u8>> {
        if reference.size > self.max_module_bytes {
            bail!(
                "module is {} bytes, over this executor's limit of {}",
                reference.size,
                self.max_module_bytes
            );
        }
        let mut failures = Vec::new();
        for url in self.urls(reference)? {
            match self.fetch_one(url.clone()).await {
                Ok(bytes) => return Ok(bytes),
                Err(e) => failures.push(format!("{url}: {e:#}")),
            }
        }
        bail!("{}", failures.join("; "))
    }

    async fn fetch_one(&self, url: reqwest::Url) -> anyhow::Result<Vec<u8>> {
        let mut request = self.http.get(url);
        if let Some(token) = &self.token {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        let mut response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            bail!("HTTP status {status}");
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > self.max_module_bytes {
                bail!("module is larger than this executor's limit of {} bytes", self.max_module_bytes);
            }
        }
        Ok(bytes)
    }
}

/// The handler of one job thread running one module version.
pub(crate) struct WasmHandler {
    glue: Arc<WasmGlue>,
    module: WasmModuleRef,
}

impl WasmHandler {
    pub(crate) fn new(glue: Arc<WasmGlue>, module: WasmModuleRef) -> Self {
        Self { glue, module }
    }
}

impl JobHandler for WasmHandler {
    fn execute(&self, ctx: JobContext) -> HandlerFuture {
        let glue = Arc::clone(&self.glue);
        let module = self.module.clone();
        Box::pin(async move { run_module(glue, module, ctx).await })
    }
}

async fn run_module(glue: Arc<WasmGlue>, reference: WasmModuleRef, ctx: JobContext) -> anyhow::Result<()> {
    // The load runs as its own task: a stop during a slow first compile returns at once, and
    // the compile still finishes and lands in the cache for the next trigger.
    let loading = tokio::spawn({
        let (glue, reference) = (Arc::clone(&glue), reference.clone());
        async move { glue.runtime.module(&reference.digest, || glue.fetch(&reference)).await }
    });
    let load = tokio::select! {
        load = loading => load
            .context("module load task failed")?
            .with_context(|| format!("cannot load wasm module {}", reference.digest))?,
        () = ctx.stopped() => bail!("stopped while loading wasm module {}", reference.digest),
    };
    let how = match load.source {
        LoadSource::Memory => "compiled module cached in memory",
        LoadSource::Disk => "compiled module loaded from the disk cache",
        LoadSource::Compiled => "module fetched from the admin and compiled",
    };
    ctx.log(format!("----------- wasm module sha256:{} ({how}) -----------", reference.digest));

    let input = RunInput {
        job_id: ctx.job_id(),
        log_id: ctx.log_id(),
        param: ctx.param().to_owned(),
        shard_index: ctx.shard_index(),
        shard_total: ctx.shard_total(),
        // The job thread enforces `executorTimeout` and cancels the run through the stop token.
        timeout: None,
    };
    let sink_ctx = ctx.clone();
    let sink: Arc<dyn LogSink> = Arc::new(move |line: &str| sink_ctx.log_raw(line));
    // The runtime ends every run's log with a `[jobwheel] fuel used …, peak memory …` line.
    let report = glue.runtime.run(&load.module, input, sink, ctx.stop_token()).await;
    match report.outcome {
        Outcome::Succeeded { message } => {
            if let Some(message) = message {
                ctx.handle_success(message);
            }
            Ok(())
        }
        Outcome::Failed { message, .. } => {
            ctx.handle_fail(message);
            Ok(())
        }
        Outcome::TimedOut { limit } => {
            ctx.handle_timeout(format!("wasm run exceeded {limit:?}"));
            Ok(())
        }
        Outcome::Cancelled => bail!("wasm run stopped"),
    }
}
