//! Script GLUE: runs a job's source with its interpreter as a child process (upstream
//! `ScriptJobHandler`), but stops it for real on timeout or kill.
//!
//! argv is `[interpreter, file, param, shardIndex, shardTotal]` with no shell in between, so
//! the parameter is one argument. A workflow node's run also gets the instance's context in a
//! file (`JOBWHEEL_WORKFLOW_CONTEXT_FILE`) and may write its output to another
//! (`JOBWHEEL_WORKFLOW_OUTPUT_FILE`); a map item's run gets its item in a file instead
//! (`JOBWHEEL_WORKFLOW_ITEM_FILE`). They live in a directory of the run's own, removed after it.
//! The run is contained as `process.rs` describes: its whole
//! process tree is stopped on timeout or kill and never outlives the run.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use jobwheel_protocol::{GlueType, MAX_WORKFLOW_OUTPUT};
use jobwheel_wasm::abi::{ENV_FIRE_KEY, ENV_SCHEDULED_TIME};
use tokio::process::Command;

use super::process::run_contained;
use crate::handler::{HandlerFuture, JobContext, JobHandler};

/// Names the file holding the workflow instance's context (JSON), for a node's run.
pub(crate) const ENV_CONTEXT_FILE: &str = "JOBWHEEL_WORKFLOW_CONTEXT_FILE";
/// Names the file holding the map item (JSON), for a map item's run.
pub(crate) const ENV_ITEM_FILE: &str = "JOBWHEEL_WORKFLOW_ITEM_FILE";
/// Names the file a node's script may write its workflow output to.
pub(crate) const ENV_OUTPUT_FILE: &str = "JOBWHEEL_WORKFLOW_OUTPUT_FILE";

pub(crate) struct ScriptHandler {
    glue_type: GlueType,
    interpreter: &'static str,
    file: PathBuf,
    source: String,
}

impl ScriptHandler {
    /// Prepares a handler for `{dir}/{jobId}_{updatetime}{suffix}`, removing the job's older
    /// script files first (upstream does the same in its constructor).
    pub(crate) fn new(
        dir: PathBuf,
        job_id: i32,
        glue_type: GlueType,
        updatetime: i64,
        source: String,
    ) -> std::io::Result<Self> {
        let (interpreter, suffix) = glue_type
            .script()
            .ok_or_else(|| std::io::Error::other(format!("{glue_type} is not a script type")))?;
        std::fs::create_dir_all(&dir)?;
        let prefix = format!("{job_id}_");
        for entry in std::fs::read_dir(&dir)?.flatten() {
            if entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let file = dir.join(format!("{job_id}_{updatetime}{suffix}"));
        Ok(Self { glue_type, interpreter, file, source })
    }
}

impl JobHandler for ScriptHandler {
    fn execute(&self, ctx: JobContext) -> HandlerFuture {
        let file = self.file.clone();
        let source = self.source.clone();
        let interpreter = self.interpreter;
        let glue_type = self.glue_type;
        Box::pin(async move { run_script(ctx, glue_type, interpreter, file, source).await })
    }
}

async fn run_script(
    ctx: JobContext,
    glue_type: GlueType,
    interpreter: &'static str,
    file: PathBuf,
    source: String,
) -> anyhow::Result<()> {
    write_once(&file, &source)
        .await
        .with_context(|| format!("cannot write script file {}", file.display()))?;
    ctx.log(format!("----------- script file:{} -----------", file.display()));

    let mut command = Command::new(interpreter);
    command.arg(&file).arg(ctx.param()).arg(ctx.shard_index().to_string()).arg(ctx.shard_total().to_string());
    // The fire's identity, named as a Wasm guest sees it: a script keys its side effects on it.
    command.env(ENV_FIRE_KEY, ctx.fire_key()).env(ENV_SCHEDULED_TIME, ctx.scheduled_time().to_string());
    let exchange = if ctx.workflow_context().is_some() || ctx.workflow_item().is_some() {
        let dir = file.parent().unwrap_or(Path::new(".")).join(format!("workflow-{}", ctx.log_id()));
        Some(WorkflowFiles::create(dir, &ctx, &mut command).await?)
    } else {
        None
    };
    let spawn_error =
        format!("cannot start {glue_type} interpreter `{interpreter}`; is it installed and on PATH?");
    let status = run_contained(&ctx, command, "script", spawn_error).await;
    if let Some(exchange) = exchange {
        // Read even after a failure: the output is only used when the run succeeds, but the
        // directory goes either way.
        exchange.finish(&ctx).await;
    }
    let status = status?;
    match status.code() {
        Some(0) => {}
        Some(code) => ctx.handle_fail(format!("script exit value({code}) is failed")),
        None => ctx.handle_fail(format!("script terminated by a signal ({status})")),
    }
    Ok(())
}

/// The files through which a script that is a workflow node reads the instance's context and
/// writes its output.
struct WorkflowFiles {
    dir: PathBuf,
    output: PathBuf,
}

impl WorkflowFiles {
    /// Writes the context (or the map item) into a fresh `dir` and points the script's
    /// environment at it.
    async fn create(dir: PathBuf, ctx: &JobContext, command: &mut Command) -> anyhow::Result<Self> {
        let _ = tokio::fs::remove_dir_all(&dir).await;
        tokio::fs::create_dir_all(&dir)
            .await
            .with_context(|| format!("cannot create the workflow directory {}", dir.display()))?;
        for (name, value, env) in [
            ("context.json", ctx.workflow_context(), ENV_CONTEXT_FILE),
            ("item.json", ctx.workflow_item(), ENV_ITEM_FILE),
        ] {
            let Some(value) = value else { continue };
            let path = dir.join(name);
            tokio::fs::write(&path, value.to_string())
                .await
                .with_context(|| format!("cannot write {}", path.display()))?;
            command.env(env, &path);
        }
        let output = dir.join("output.json");
        command.env(ENV_OUTPUT_FILE, &output);
        Ok(Self { dir, output })
    }

    /// Takes the output the script wrote, if any (JSON when it parses, else its text), and
    /// removes the directory.
    async fn finish(self, ctx: &JobContext) {
        match tokio::fs::read(&self.output).await {
            Ok(bytes) if bytes.len() > MAX_WORKFLOW_OUTPUT => ctx.handle_fail(format!(
                "the workflow output file is {} bytes, over the limit of {MAX_WORKFLOW_OUTPUT}",
                bytes.len()
            )),
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let text = text.trim();
                if !text.is_empty() {
                    let value = serde_json::from_str(text)
                        .unwrap_or_else(|_| serde_json::Value::String(text.to_owned()));
                    ctx.set_output(&value);
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => ctx.log(format!("cannot read the workflow output file: {error}")),
        }
        if let Err(error) = tokio::fs::remove_dir_all(&self.dir).await {
            tracing::warn!(dir = %self.dir.display(), %error, "cannot remove the workflow directory");
        }
    }
}

/// Writes the script file unless it exists (same update time ⇒ same source), atomically so a
/// concurrent reader never sees half a file.
async fn write_once(file: &Path, source: &str) -> std::io::Result<()> {
    if tokio::fs::try_exists(file).await? {
        return Ok(());
    }
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    tokio::fs::write(&tmp, source).await?;
    tokio::fs::rename(&tmp, file).await
}
