//! Turning a trigger's glue type into a handler: BEAN lookup, script GLUE, and the reload rule.
//!
//! A job thread keeps the [`HandlerKey`] it was built for; a trigger whose key differs replaces
//! the thread (upstream: handler identity for BEAN, `glueUpdatetime` for GLUE — changing the
//! source without changing the update time does not reload, exactly like upstream).

pub(crate) mod process;
mod replay;
pub(crate) mod script;
pub(crate) mod tree;
pub(crate) mod wasm;

use std::path::PathBuf;
use std::sync::Arc;

use jobwheel_protocol::{GlueType, TriggerParam, WasmModuleRef};

use crate::handler::{Handlers, JobHandler};
use wasm::{WasmGlue, WasmHandler};

/// Identifies the code a job thread runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HandlerKey {
    Bean(String),
    Script {
        glue_type: GlueType,
        updatetime: i64,
    },
    /// A module version: a new upload is a new digest, so the digest alone decides reloads.
    Wasm {
        digest: String,
    },
}

/// Builds handlers for triggers.
pub(crate) struct GlueFactory {
    handlers: Handlers,
    /// Where script sources are written; `None` when script GLUE is disabled.
    script_dir: Option<PathBuf>,
    wasm: Arc<WasmGlue>,
    /// `--glue-enabled`: false runs BEAN handlers only.
    glue_enabled: bool,
}

impl GlueFactory {
    pub(crate) fn new(handlers: Handlers, script_dir: Option<PathBuf>, wasm: Arc<WasmGlue>) -> Self {
        Self { handlers, script_dir, wasm, glue_enabled: true }
    }

    /// A BEAN-only factory (`--glue-enabled=false`): every GLUE type, Wasm included, is refused.
    pub(crate) fn bean_only(mut self) -> Self {
        self.glue_enabled = false;
        self
    }

    /// Whether GLUE types are run at all.
    pub(crate) fn glue_enabled(&self) -> bool {
        self.glue_enabled
    }

    /// The key a trigger needs, or upstream's 500 message explaining why it cannot run here.
    pub(crate) fn key_for(&self, glue_type: GlueType, param: &TriggerParam) -> Result<HandlerKey, String> {
        if !self.glue_enabled && glue_type != GlueType::Bean {
            // xxl-job 3.5's words for its `glueenabled=false` executor.
            return Err(format!("fail, current glue type [{}] not supported.", glue_type.title()));
        }
        match glue_type {
            GlueType::Bean => Ok(HandlerKey::Bean(param.executor_handler.clone())),
            GlueType::GlueGroovy => {
                Err("GLUE(Java) needs a JVM executor; this is a jobwheel executor. Route the job to an \
                 executor group of xxl-job's Java executors, or rewrite it as a GLUE_WASM module (sandboxed) \
                 or a BEAN handler."
                    .to_owned())
            }
            GlueType::GlueWasm => match &param.wasm_module {
                Some(module) if is_sha256_hex(&module.digest) => {
                    Ok(HandlerKey::Wasm { digest: module.digest.to_ascii_lowercase() })
                }
                Some(module) => Err(format!(
                    "GLUE_WASM trigger has an invalid module digest {:?}: expected 64 hex characters of SHA-256",
                    module.digest
                )),
                None => Err("GLUE_WASM trigger carries no wasmModule (digest and url): it must come from a \
                             jobwheel admin with the job's module uploaded"
                    .to_owned()),
            },
            script if script.is_script() => {
                if self.script_dir.is_none() {
                    return Err(format!(
                        "glueType[{script}] is disabled on this executor: script GLUE runs code with the \
                         executor's privileges. Start the executor with --enable-script-glue to allow it, \
                         or use GLUE_WASM."
                    ));
                }
                Ok(HandlerKey::Script { glue_type: script, updatetime: param.glue_updatetime })
            }
            other => Err(format!("glueType[{other}] is not valid.")),
        }
    }

    /// Starts compiling a module a jobwheel admin announced; refuses a malformed digest.
    pub(crate) fn prepare_wasm(&self, module: WasmModuleRef) -> Result<(), String> {
        if !is_sha256_hex(&module.digest) {
            return Err(format!(
                "invalid module digest {:?}: expected 64 hex characters of SHA-256",
                module.digest
            ));
        }
        self.wasm.prepare(module);
        Ok(())
    }

    /// Replays a recorded Wasm run (`replay.rs`).
    pub(crate) async fn replay(
        &self,
        request: jobwheel_protocol::ReplayRequest,
    ) -> Result<jobwheel_protocol::ReplayReply, String> {
        if !self.glue_enabled {
            return Err("fail, current glue type [GLUE(WASM)] not supported.".to_owned());
        }
        self.wasm.replay(request).await
    }

    /// Creates the handler for `key`; fails with upstream's message for an unknown BEAN name.
    pub(crate) fn build(
        &self,
        key: &HandlerKey,
        param: &TriggerParam,
    ) -> Result<Arc<dyn JobHandler>, String> {
        match key {
            HandlerKey::Bean(name) => {
                self.handlers.get(name).ok_or_else(|| format!("job handler [{name}] not found."))
            }
            HandlerKey::Script { glue_type, updatetime } => {
                let dir =
                    self.script_dir.clone().ok_or_else(|| format!("glueType[{glue_type}] is disabled"))?;
                let handler = script::ScriptHandler::new(
                    dir,
                    param.job_id,
                    *glue_type,
                    *updatetime,
                    param.glue_source.clone(),
                )
                .map_err(|e| format!("cannot prepare {glue_type} script: {e}"))?;
                Ok(Arc::new(handler))
            }
            HandlerKey::Wasm { .. } => {
                let module = param.wasm_module.clone().ok_or("GLUE_WASM trigger carries no wasmModule")?;
                Ok(Arc::new(WasmHandler::new(Arc::clone(&self.wasm), module)))
            }
        }
    }
}

fn is_sha256_hex(digest: &str) -> bool {
    digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())
}
