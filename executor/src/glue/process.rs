//! A contained child process for a run — a script GLUE run or `commandJobHandler`'s command:
//! its output goes to the job log line by line while it runs, and it is stopped for real.
//!
//! The child gets no stdin and none of the executor's own `JOBWHEEL_*` variables (they hold
//! the access token). It leads its own process group and its whole tree is kept (`tree.rs`: a
//! cgroup per run, or a child subreaper); stopping the run (timeout, kill) sends SIGTERM to the
//! group, then after a grace period SIGKILLs every process of the run — grandchildren (`sleep`
//! under `bash`) and descendants that called `setsid` or daemonized too. Upstream only
//! interrupted the wait (2.x) or signalled the direct child (3.3+). Processes still running when
//! the child exits are killed as well: a run's processes never outlive the run.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use nix::sys::signal::Signal;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt as _, BufReader};
use tokio::process::Command;

use super::tree::RunTree;
use crate::handler::JobContext;

/// Time between SIGTERM and SIGKILL when a run is stopped.
const TERM_GRACE: Duration = Duration::from_millis(1000);

/// Environment variables the executor's own configuration lives in; never handed to a run
/// because they include the access token.
const PRIVATE_ENV_PREFIX: &str = "JOBWHEEL_";

/// Runs `command` for the run of `ctx` until it exits (its status) or the run is stopped (an
/// error saying `{what} stopped`). `spawn_error` is the message when it cannot start.
pub(crate) async fn run_contained(
    ctx: &JobContext,
    mut command: Command,
    what: &str,
    spawn_error: String,
) -> anyhow::Result<ExitStatus> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with(PRIVATE_ENV_PREFIX)) {
            command.env_remove(name);
        }
    }
    // Declared before the child: dropped after it, so an aborted run's tree is killed.
    let mut tree = RunTree::prepare(&mut command)?;
    let mut child = tree.spawn(&mut command).context(spawn_error)?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let output = async {
        tokio::join!(copy_lines(stdout, ctx), copy_lines(stderr, ctx));
    };
    tokio::pin!(output);

    // The output is read while the child runs: a pipe holds only 64 KiB, so a child that
    // writes more would block forever if nobody read until it exited.
    let mut output_done = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status?,
            () = &mut output, if !output_done => output_done = true,
            () = ctx.stopped() => {
                tree.signal_group(Signal::SIGTERM);
                let status = match tokio::time::timeout(TERM_GRACE, child.wait()).await {
                    Ok(status) => status?,
                    Err(_) => {
                        tree.signal_group(Signal::SIGKILL);
                        child.wait().await?
                    }
                };
                kill_tree(tree).await;
                // Readers end once every writer in the group is gone.
                if !output_done {
                    let _ = tokio::time::timeout(TERM_GRACE, &mut output).await;
                }
                anyhow::bail!("{what} stopped ({status})");
            }
        }
    };
    // The child is done: anything it left running goes too, which also lets the output
    // readers see end-of-file.
    kill_tree(tree).await;
    if !output_done {
        output.await;
    }
    Ok(status)
}

/// Most bytes of a child's output held in memory at once. A line longer than this (a script
/// printing megabytes without a newline) goes to the job log in pieces rather than being
/// buffered whole; the pieces are written back to back, so the log's text is unchanged.
const MAX_PIECE_BYTES: u64 = 64 * 1024;

/// Copies a child's output into the job log line by line (long lines in pieces); invalid
/// UTF-8 is replaced.
async fn copy_lines(pipe: Option<impl AsyncRead + Unpin>, ctx: &JobContext) {
    let Some(pipe) = pipe else { return };
    let mut reader = BufReader::new(pipe);
    // Holds at most one piece, plus up to 3 bytes of a character cut by the previous piece.
    let mut piece = Vec::new();
    loop {
        let room = MAX_PIECE_BYTES.saturating_sub(piece.len() as u64).max(4);
        match (&mut reader).take(room).read_until(b'\n', &mut piece).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let carried = if piece.ends_with(b"\n") { 0 } else { cut_character(&piece) };
                let whole = piece.len() - carried;
                ctx.log_raw(&String::from_utf8_lossy(&piece[..whole]));
                piece.drain(..whole);
            }
        }
    }
    if !piece.is_empty() {
        ctx.log_raw(&String::from_utf8_lossy(&piece));
    }
}

/// How many bytes at the end of `bytes` are the start of a UTF-8 character whose remaining
/// bytes have not been read yet (0 if the end is a character boundary).
fn cut_character(bytes: &[u8]) -> usize {
    let tail = bytes.len().saturating_sub(3);
    for start in (tail..bytes.len()).rev() {
        let byte = bytes[start];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: the character began earlier
        }
        let length = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        let present = bytes.len() - start;
        return if present < length { present } else { 0 };
    }
    0
}

/// Kills what is left of a run's tree, off the async threads (it reads `/proc` or a cgroup and
/// waits for the kernel).
async fn kill_tree(mut tree: RunTree) {
    let _ = tokio::task::spawn_blocking(move || tree.kill_all()).await;
}

#[cfg(test)]
mod tests {
    use super::cut_character;

    #[test]
    fn a_character_cut_by_the_piece_limit_is_carried() {
        let text = "aé€😀".as_bytes();
        // Every prefix: what is carried is exactly the incomplete character at its end.
        let expected = [0, 0, 1, 0, 1, 2, 0, 1, 2, 3, 0];
        for (len, carried) in expected.iter().enumerate() {
            assert_eq!(cut_character(&text[..len]), *carried, "prefix of {len} bytes");
        }
        assert_eq!(cut_character(b""), 0);
        assert_eq!(cut_character(&[0xFF, 0xFF]), 0, "invalid bytes are not carried");
    }
}
