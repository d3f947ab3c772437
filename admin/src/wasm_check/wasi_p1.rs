//! The WASI preview-1 functions the executor's runtime links (`wasi_snapshot_preview1`), with
//! their core-wasm signatures, so uploads can be checked without linking wasmtime.
//!
//! Taken from the preview-1 witx that wasmtime-wasi implements (46 functions); the admin's
//! `wasm_check` tests verify every entry against the executor's real linker.

use wasmparser::ValType;

/// Import module name of WASI preview 1.
pub const MODULE: &str = "wasi_snapshot_preview1";

const I: ValType = ValType::I32;
const L: ValType = ValType::I64;

/// Every result is a 16-bit `errno` returned as an `i32`, except `proc_exit`, which returns
/// nothing.
const ERRNO: &[ValType] = &[I];

/// `(name, params, results)` of every function, sorted by name.
pub const FUNCTIONS: &[(&str, &[ValType], &[ValType])] = &[
    ("args_get", &[I, I], ERRNO),
    ("args_sizes_get", &[I, I], ERRNO),
    ("clock_res_get", &[I, I], ERRNO),
    ("clock_time_get", &[I, L, I], ERRNO),
    ("environ_get", &[I, I], ERRNO),
    ("environ_sizes_get", &[I, I], ERRNO),
    ("fd_advise", &[I, L, L, I], ERRNO),
    ("fd_allocate", &[I, L, L], ERRNO),
    ("fd_close", &[I], ERRNO),
    ("fd_datasync", &[I], ERRNO),
    ("fd_fdstat_get", &[I, I], ERRNO),
    ("fd_fdstat_set_flags", &[I, I], ERRNO),
    ("fd_fdstat_set_rights", &[I, L, L], ERRNO),
    ("fd_filestat_get", &[I, I], ERRNO),
    ("fd_filestat_set_size", &[I, L], ERRNO),
    ("fd_filestat_set_times", &[I, L, L, I], ERRNO),
    ("fd_pread", &[I, I, I, L, I], ERRNO),
    ("fd_prestat_dir_name", &[I, I, I], ERRNO),
    ("fd_prestat_get", &[I, I], ERRNO),
    ("fd_pwrite", &[I, I, I, L, I], ERRNO),
    ("fd_read", &[I, I, I, I], ERRNO),
    ("fd_readdir", &[I, I, I, L, I], ERRNO),
    ("fd_renumber", &[I, I], ERRNO),
    ("fd_seek", &[I, L, I, I], ERRNO),
    ("fd_sync", &[I], ERRNO),
    ("fd_tell", &[I, I], ERRNO),
    ("fd_write", &[I, I, I, I], ERRNO),
    ("path_create_directory", &[I, I, I], ERRNO),
    ("path_filestat_get", &[I, I, I, I, I], ERRNO),
    ("path_filestat_set_times", &[I, I, I, I, L, L, I], ERRNO),
    ("path_link", &[I, I, I, I, I, I, I], ERRNO),
    ("path_open", &[I, I, I, I, I, L, L, I, I], ERRNO),
    ("path_readlink", &[I, I, I, I, I, I], ERRNO),
    ("path_remove_directory", &[I, I, I], ERRNO),
    ("path_rename", &[I, I, I, I, I, I], ERRNO),
    ("path_symlink", &[I, I, I, I, I], ERRNO),
    ("path_unlink_file", &[I, I, I], ERRNO),
    ("poll_oneoff", &[I, I, I, I], ERRNO),
    ("proc_exit", &[I], &[]),
    ("proc_raise", &[I], ERRNO),
    ("random_get", &[I, I], ERRNO),
    ("sched_yield", &[], ERRNO),
    ("sock_accept", &[I, I, I], ERRNO),
    ("sock_recv", &[I, I, I, I, I, I], ERRNO),
    ("sock_send", &[I, I, I, I, I], ERRNO),
    ("sock_shutdown", &[I, I], ERRNO),
];

/// The signature of WASI function `name`, if preview 1 has one by that name.
pub fn signature(name: &str) -> Option<(&'static [ValType], &'static [ValType])> {
    FUNCTIONS
        .binary_search_by(|(candidate, _, _)| (*candidate).cmp(name))
        .ok()
        .map(|index| (FUNCTIONS[index].1, FUNCTIONS[index].2))
}

/// Renders a signature the way WAT writes it, e.g. `(func (param i32 i64) (result i32))`.
pub fn render(params: &[ValType], results: &[ValType]) -> String {
    let list = |types: &[ValType]| types.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    let mut out = "(func".to_owned();
    if !params.is_empty() {
        out.push_str(&format!(" (param {})", list(params)));
    }
    if !results.is_empty() {
        out.push_str(&format!(" (result {})", list(results)));
    }
    out.push(')');
    out
}
