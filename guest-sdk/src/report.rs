//! Turning a job's result into the ABI: result-marker lines on stderr and the exit code, plus
//! a panic hook so a panicking job still reports why.

use std::fmt::Display;
use std::io::Write;
use std::process::ExitCode;

use crate::abi::{OUTPUT_MARKER, RESULT_MARKER};
use crate::context::Context;

/// Exit code for a job that returned `Err`.
const EXIT_FAILED: u8 = 1;
/// Exit code when the run's context cannot be read (a runtime/ABI mismatch, not a job bug).
const EXIT_BAD_CONTEXT: u8 = 2;

/// What a job function may return: `()` (always succeeds) or `Result<(), E>` with
/// `E: Display` (`Err` fails the run with that message).
pub trait JobResult {
    /// `Ok(())` for success, `Err(message)` for failure.
    fn into_result(self) -> Result<(), String>;
}

impl JobResult for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Display> JobResult for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        // `{:#}` so `anyhow` errors show their chain of causes.
        self.map_err(|error| format!("{error:#}"))
    }
}

/// Runs `job` with the context from the environment and converts its result: success →
/// exit code 0; failure → the message becomes the run's result message and the exit code
/// is 1. Use it as `fn main() -> ExitCode { run(|ctx| ...) }` or through [`crate::main!`].
///
/// Also installs a panic hook that reports the panic message and location as the result
/// message before the (aborting) panic ends the run.
pub fn run<R: JobResult>(job: impl FnOnce(&Context) -> R) -> ExitCode {
    install_panic_hook();
    let ctx = match Context::from_env() {
        Ok(ctx) => ctx,
        Err(error) => {
            report(&format!("cannot read the job context: {error}"));
            return ExitCode::from(EXIT_BAD_CONTEXT);
        }
    };
    let result = job(&ctx).into_result();
    let _ = std::io::stdout().flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            report(&message);
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Adds `message` to the run's result message (shown as the trigger's handle message),
/// whether the job then succeeds or fails. Each line becomes one marker line; the runtime
/// joins them back with newlines.
pub fn report(message: &str) {
    let mut err = std::io::stderr().lock();
    for line in message.lines() {
        let _ = writeln!(err, "{RESULT_MARKER}{line}");
    }
}

/// Sets this run's workflow output to `json` (JSON text; anything that does not parse as JSON
/// is taken as a string). When the run succeeds, the output is merged into the workflow
/// instance's context under the node's name and handed to the nodes after it. At most
/// [`crate::abi::MAX_OUTPUT_BYTES`] bytes, or the run fails. Call it once: a second call
/// appends to the first. Line breaks are not carried (JSON needs none); outside a workflow the
/// output is ignored.
pub fn set_output(json: &str) {
    let mut out = std::io::stdout().lock();
    for line in json.lines() {
        for piece in pieces(line, OUTPUT_PIECE_BYTES) {
            let _ = writeln!(out, "{OUTPUT_MARKER}{piece}");
        }
    }
    let _ = out.flush();
}

/// Bytes of output per marker line: well under the runtime's line limit (8 KiB by default).
const OUTPUT_PIECE_BYTES: usize = 4000;

/// `text` cut into pieces of at most `max` bytes, on character boundaries.
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let what = info.payload_as_str().unwrap_or("Box<dyn Any>");
        match info.location() {
            Some(at) => report(&format!("panicked at {}:{}:{}: {what}", at.file(), at.line(), at.column())),
            None => report(&format!("panicked: {what}")),
        }
        // Keep the standard message in the log too.
        previous(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_respect_the_limit_and_character_boundaries() {
        let text = "aé".repeat(5); // 15 bytes, `é` is two
        let cut = pieces(&text, 4);
        assert_eq!(cut.concat(), text);
        assert!(cut.iter().all(|p| p.len() <= 4), "{cut:?}");
        assert_eq!(pieces("", 4), Vec::<&str>::new());
    }
}
