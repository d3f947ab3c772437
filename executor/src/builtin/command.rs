//! `commandJobHandler` (upstream's command-line BEAN handler, multi-argument since 3.0): the
//! job parameter is a command line, run as a contained child process like a script GLUE run
//! (`glue/process.rs`: no shell, no `JOBWHEEL_*` variables, its whole process tree stopped on
//! timeout or kill). Registered only with `--enable-script-glue`: it is code execution with the
//! executor's privileges, as script GLUE is.
//!
//! The parameter format is upstream's: the command and its arguments separated by single
//! spaces (`ls -la /tmp`), no quoting and no shell features; the line is trimmed first, and two
//! spaces make an empty argument, as upstream's `split(" ")` does. Output (both streams) goes to
//! the job log. Exit value 0 succeeds; otherwise the run fails "command exit value(N) is failed",
//! and an empty parameter fails "command empty.", in upstream's words.

use tokio::process::Command;

use crate::glue::process::run_contained;
use crate::handler::{JobContext, JobResult};

/// Runs the job parameter as a command line.
pub(super) async fn command(ctx: JobContext) -> JobResult {
    let line = ctx.param().trim().to_owned();
    let argv = split_command(&line);
    let Some((program, args)) = argv.split_first() else {
        ctx.handle_fail("command empty.");
        return Ok(());
    };
    let mut command = Command::new(program);
    command.args(args);
    let spawn_error = format!("cannot start command `{program}`; is it installed and on PATH?");
    let status = run_contained(&ctx, command, "command", spawn_error).await?;
    match status.code() {
        Some(0) => {}
        Some(code) => ctx.handle_fail(format!("command exit value({code}) is failed")),
        None => ctx.handle_fail(format!("command terminated by a signal ({status})")),
    }
    Ok(())
}

/// Upstream's `command.split(" ")`: single spaces separate, trailing empty parts are dropped.
fn split_command(line: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = line.split(' ').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::split_command;

    #[test]
    fn the_command_line_splits_as_upstreams_split_on_one_space() {
        assert_eq!(split_command("ls -la /tmp"), ["ls", "-la", "/tmp"]);
        assert_eq!(split_command("echo a  b"), ["echo", "a", "", "b"]);
        assert!(split_command("").is_empty());
    }
}
