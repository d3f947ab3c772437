//! WAT fixtures: small hand-written WASI commands, so runtime tests do not need the
//! wasm32-wasip1 target.

use crate::support::Fixture;

const FD_WRITE: &str =
    r#"(import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))"#;
const PROC_EXIT: &str = r#"(import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))"#;
/// `$write(fd, ptr, len)`: one `fd_write` through an iovec at address 0.
const WRITE_FN: &str = r#"
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8))))"#;

/// Every byte as a `\hh` escape, so any text is a valid WAT string.
fn escape(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:02x}")).collect()
}

/// How a [`printing`] module ends after writing its output.
pub(crate) enum End {
    Return,
    Exit(i32),
    Trap,
}

/// Writes `stdout` to fd 1 and `stderr` to fd 2, then ends as told.
pub(crate) fn printing(stdout: &str, stderr: &str, end: End) -> Fixture {
    let end = match end {
        End::Return => String::new(),
        End::Exit(code) => format!("(call $proc_exit (i32.const {code}))"),
        End::Trap => "unreachable".to_owned(),
    };
    Fixture::wat(&format!(
        r#"(module {FD_WRITE} {PROC_EXIT}
  (memory (export "memory") 2)
  (data (i32.const 1024) "{out}")
  (data (i32.const 65536) "{err}")
  {WRITE_FN}
  (func (export "_start")
    (call $write (i32.const 1) (i32.const 1024) (i32.const {out_len}))
    (call $write (i32.const 2) (i32.const 65536) (i32.const {err_len}))
    {end}))"#,
        out = escape(stdout.as_bytes()),
        err = escape(stderr.as_bytes()),
        out_len = stdout.len(),
        err_len = stderr.len(),
    ))
}

/// Prints its argv and then its environment, one entry per stdout line.
pub(crate) fn dump_args_and_env() -> Fixture {
    Fixture::wat(&format!(
        r#"(module {FD_WRITE}
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  {WRITE_FN}
  ;; Turns the NUL-separated strings at $buf into lines and writes them.
  (func $dump (param $buf i32) (param $len i32)
    (local $i i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (if (i32.eqz (i32.load8_u (i32.add (local.get $buf) (local.get $i))))
        (then (i32.store8 (i32.add (local.get $buf) (local.get $i)) (i32.const 10))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (call $write (i32.const 1) (local.get $buf) (local.get $len)))
  (func (export "_start")
    (drop (call $args_sizes_get (i32.const 16) (i32.const 20)))
    (drop (call $args_get (i32.const 1024) (i32.const 4096)))
    (call $dump (i32.const 4096) (i32.load (i32.const 20)))
    (drop (call $environ_sizes_get (i32.const 16) (i32.const 20)))
    (drop (call $environ_get (i32.const 2048) (i32.const 65536)))
    (call $dump (i32.const 65536) (i32.load (i32.const 20)))))"#
    ))
}

/// Prints `first_line`, then spins forever; with `tick`, prints `tick.1` every `tick.0`
/// iterations (so a test can see it is still running), otherwise a bare `loop br`.
pub(crate) fn spinning(first_line: &str, tick: Option<(u32, &str)>) -> Fixture {
    let first = format!("{first_line}\n");
    let body = match tick {
        Some((every, line)) => {
            let line = format!("{line}\n");
            format!(
                r#"(data (i32.const 2048) "{text}")
  (func $spin (local $i i32)
    (block $b (loop $l
      (br_if $b (i32.ge_u (local.get $i) (i32.const {every})))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l))))
  (func $forever (loop $l (call $spin) (call $write (i32.const 1) (i32.const 2048) (i32.const {len})) (br $l)))"#,
                text = escape(line.as_bytes()),
                len = line.len(),
            )
        }
        None => "(func $forever (loop $l (br $l)))".to_owned(),
    };
    Fixture::wat(&format!(
        r#"(module {FD_WRITE}
  (memory (export "memory") 1)
  (data (i32.const 1024) "{text}")
  {WRITE_FN}
  {body}
  (func (export "_start")
    (call $write (i32.const 1) (i32.const 1024) (i32.const {len}))
    (call $forever)))"#,
        text = escape(first.as_bytes()),
        len = first.len(),
    ))
}

/// Grows memory a page at a time until refused, then traps like a Rust guest aborting on OOM.
pub(crate) fn memory_hog() -> Fixture {
    Fixture::wat(
        r#"(module (memory (export "memory") 1)
  (func (export "_start")
    (loop $grow (br_if $grow (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
    unreachable))"#,
    )
}

/// Writes `lines` lines of 1 KiB to stdout, then a result marker on stderr, and succeeds.
pub(crate) fn flood(lines: u32) -> Fixture {
    let mut line = "x".repeat(1023);
    line.push('\n');
    let marker = "::jobwheel-result::flooded and still reported\n";
    Fixture::wat(&format!(
        r#"(module {FD_WRITE}
  (memory (export "memory") 1)
  (data (i32.const 1024) "{line}")
  (data (i32.const 4096) "{marker}")
  {WRITE_FN}
  (func (export "_start") (local $i i32)
    (loop $l
      (call $write (i32.const 1) (i32.const 1024) (i32.const 1024))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const {lines}))))
    (call $write (i32.const 2) (i32.const 4096) (i32.const {marker_len}))))"#,
        line = escape(line.as_bytes()),
        marker = escape(marker.as_bytes()),
        marker_len = marker.len(),
    ))
}

/// Unbounded recursion.
pub(crate) fn recursion() -> Fixture {
    Fixture::wat(r#"(module (func $f (call $f)) (func (export "_start") (call $f)))"#)
}

/// Exits 0 only if fd 3 is not a preopened directory (there are none) and opening
/// `/etc/passwd` relative to it fails.
pub(crate) fn preopen_probe() -> Fixture {
    Fixture::wat(&format!(
        r#"(module {PROC_EXIT}
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "etc/passwd")
  (func (export "_start")
    ;; errno 8 = EBADF: no descriptor 3, so no preopened directory.
    (if (i32.ne (call $fd_prestat_get (i32.const 3) (i32.const 16)) (i32.const 8))
      (then (call $proc_exit (i32.const 1))))
    (if (i32.eqz (call $path_open (i32.const 3) (i32.const 0) (i32.const 1024) (i32.const 10)
                   (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 32)))
      (then (call $proc_exit (i32.const 2))))))"#
    ))
}

/// Each of `rounds` times: reads the wall and monotonic clocks and 16 random bytes, and prints
/// the 32 bytes as one hex line — a run whose output only a journal can reproduce.
pub(crate) fn clock_and_random(rounds: u32) -> Fixture {
    Fixture::wat(&format!(
        r#"(module {FD_WRITE}
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 2000) "0123456789abcdef")
  {WRITE_FN}
  (func $round
    (local $i i32) (local $b i32)
    (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 104)))
    (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 112)))
    (drop (call $random (i32.const 120) (i32.const 16)))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (i32.const 32)))
      (local.set $b (i32.load8_u (i32.add (i32.const 104) (local.get $i))))
      (i32.store8 (i32.add (i32.const 3000) (i32.shl (local.get $i) (i32.const 1)))
        (i32.load8_u (i32.add (i32.const 2000) (i32.shr_u (local.get $b) (i32.const 4)))))
      (i32.store8 (i32.add (i32.const 3001) (i32.shl (local.get $i) (i32.const 1)))
        (i32.load8_u (i32.add (i32.const 2000) (i32.and (local.get $b) (i32.const 15)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (i32.store8 (i32.const 3064) (i32.const 10))
    (call $write (i32.const 1) (i32.const 3000) (i32.const 65)))
  (func (export "_start")
    (local $n i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $n) (i32.const {rounds})))
      (call $round)
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $next)))))"#
    ))
}

/// A module whose memory is shared (the threads proposal), which the runtime must refuse.
pub(crate) fn shared_memory() -> Fixture {
    Fixture::wat(r#"(module (memory (export "memory") 1 1 shared) (func (export "_start")))"#)
}
