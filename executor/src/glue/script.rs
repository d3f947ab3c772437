//! Script GLUE: runs a job's source with its interpreter as a child process (upstream
//! `ScriptJobHandler`), but stops it for real on timeout or kill.
//!
//! argv is `[interpreter, file, param, shardIndex, shardTotal]` with no shell in between, so
//! the parameter is one argument. The run is contained as `process.rs` describes: its whole
//! process tree is stopped on timeout or kill and never outlives the run.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use jobwheel_protocol::GlueType;
use tokio::process::Command;

use super::process::run_contained;
use crate::handler::{HandlerFuture, JobContext, JobHandler};

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
    let spawn_error =
        format!("cannot start {glue_type} interpreter `{interpreter}`; is it installed and on PATH?");
    let status = run_contained(&ctx, command, "script", spawn_error).await?;
    match status.code() {
        Some(0) => {}
        Some(code) => ctx.handle_fail(format!("script exit value({code}) is failed")),
        None => ctx.handle_fail(format!("script terminated by a signal ({status})")),
    }
    Ok(())
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
