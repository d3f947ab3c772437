//! Upload-time check of a Wasm job — a WASI preview-1 command module or a WASI 0.2 command
//! component: refuses up front what the executor's runtime would refuse at run time (see
//! `wasm/src/loader.rs`), with messages a job author can act on.
//!
//! The admin does not link wasmtime; this uses wasmparser with the feature set wasmtime 48
//! enables by default (`WasmFeatures::WASM3`, plus the component model for components), the
//! WASI preview-1 import table in [`wasi_p1`], the WASI 0.2 interface list in [`wasi_p2`], and
//! the entry rules of the runtime's loader (`_start`, `wasi:cli/run`). The tests in
//! `admin/tests/all/wasm_check.rs` hold both sides to the same verdicts.

use serde::Serialize;
use sha2::{Digest, Sha256};
use wasmparser::types::EntityType;
use wasmparser::{Encoding, Parser, Payload, Validator, WasmFeatures};

pub mod capabilities;
pub mod wasi_p1;
pub mod wasi_p2;

/// Largest module the admin accepts (32 MiB); real jobs are well under a few MiB.
pub const MAX_MODULE_BYTES: usize = 32 * 1024 * 1024;

/// The entry point every job module must export (the WASI command convention).
pub const ENTRY_EXPORT: &str = "_start";

const MAGIC: &[u8; 4] = b"\0asm";

/// What an accepted module or component is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleInfo {
    /// Lower-case hex SHA-256 of the bytes: the module's identity everywhere in jobwheel.
    pub digest: String,
    /// Size in bytes.
    pub size: u64,
    /// `module` (WASI preview 1) or `component` (WASI 0.2).
    pub kind: &'static str,
    /// Export names in declaration order.
    pub exports: Vec<String>,
    /// Imports in declaration order: `module.name` for a module, the interface name
    /// (`wasi:http/outgoing-handler@0.2.12`) for a component.
    pub imports: Vec<String>,
}

/// Why a module was refused. The messages are shown to the uploader as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WasmCheckError {
    /// Zero bytes.
    #[error("the file is empty: upload a compiled WebAssembly module (.wasm)")]
    Empty,
    /// Over [`MAX_MODULE_BYTES`].
    #[error("the module is {size} bytes, over the {limit}-byte (32 MiB) limit")]
    TooLarge {
        /// Size of the upload.
        size: u64,
        /// [`MAX_MODULE_BYTES`].
        limit: usize,
    },
    /// Does not start with `\0asm`.
    #[error(
        "not a WebAssembly module: the file does not start with the `\\0asm` magic number \
         (upload the compiled .wasm file, not source code, text format or an archive)"
    )]
    NotWasm,
    /// A component without the `wasi:cli/run` export.
    #[error(
        "the component does not export wasi:cli/run: it is not a WASI command; build it as a \
         command (e.g. a Rust binary for `--target wasm32-wasip2`, componentize-py or \
         componentize-js with the `jobwheel:job/job` world in wit/)"
    )]
    NoRunExport,
    /// A component import the executor does not link.
    #[error(
        "the component imports {import}, which jobwheel does not provide: components may import \
         WASI 0.2 (wasi:cli, wasi:clocks, wasi:filesystem, wasi:io, wasi:random, wasi:sockets) and \
         wasi:http/types + wasi:http/outgoing-handler, version 0.2.x"
    )]
    UnsupportedComponentImport {
        /// The import's name.
        import: String,
    },
    /// wasmparser's validator rejected it.
    #[error("invalid WebAssembly module: {message} (at byte offset {offset})")]
    Invalid {
        /// wasmparser's explanation.
        message: String,
        /// Byte offset of the problem.
        offset: usize,
    },
    /// No `_start` export.
    #[error(
        "the module has no `_start` export: it is a reactor or library, not a command; \
         build a binary crate (with `fn main`) for `--target wasm32-wasip1`"
    )]
    NoEntry,
    /// `_start` exists but is not a `() -> ()` function.
    #[error("the `_start` export is {found}; it must be a function with no parameters and no results")]
    BadEntry {
        /// What `_start` is instead.
        found: String,
    },
    /// An import from a module other than `wasi_snapshot_preview1`, or a name or kind that
    /// WASI preview 1 does not have.
    #[error(
        "the module imports {import}, which jobwheel does not provide: jobs may import only \
         WASI preview-1 functions (`wasi_snapshot_preview1`)"
    )]
    UnsupportedImport {
        /// The import as `module.name`.
        import: String,
    },
    /// A WASI preview-1 function imported with the wrong signature.
    #[error("the module imports {import} as {found}, but WASI preview 1 defines it as {expected}")]
    WrongWasiSignature {
        /// The import as `module.name`.
        import: String,
        /// The module's signature.
        found: String,
        /// The signature the runtime provides.
        expected: String,
    },
}

/// Checks that `bytes` are a module the executor's Wasm runtime will load and link, and
/// describes it.
pub fn inspect(bytes: &[u8]) -> Result<ModuleInfo, WasmCheckError> {
    if bytes.is_empty() {
        return Err(WasmCheckError::Empty);
    }
    if bytes.len() > MAX_MODULE_BYTES {
        return Err(WasmCheckError::TooLarge { size: bytes.len() as u64, limit: MAX_MODULE_BYTES });
    }
    if !bytes.starts_with(MAGIC) {
        return Err(WasmCheckError::NotWasm);
    }
    // The header tells a component from a module.
    match Parser::new(0).parse(bytes, true) {
        Ok(wasmparser::Chunk::Parsed {
            payload: Payload::Version { encoding: Encoding::Component, .. },
            ..
        }) => {
            return inspect_component(bytes);
        }
        Ok(_) => {}
        Err(error) => return Err(invalid(&error)),
    }

    let types = Validator::new_with_features(WasmFeatures::WASM3)
        .validate_all(bytes)
        .map_err(|error| invalid(&error))?;
    let types = types.as_ref();
    // Both iterators are `Some` for a module; an empty list is the safe reading otherwise.
    let exports: Vec<(&str, EntityType)> = types.core_exports().into_iter().flatten().collect();
    let imports: Vec<(&str, &str, EntityType)> = types.core_imports().into_iter().flatten().collect();

    match exports.iter().find(|(name, _)| *name == ENTRY_EXPORT) {
        None => return Err(WasmCheckError::NoEntry),
        Some((_, EntityType::Func(id) | EntityType::FuncExact(id))) => {
            let func = types[*id].unwrap_func();
            if !func.params().is_empty() || !func.results().is_empty() {
                return Err(WasmCheckError::BadEntry { found: format!("a function of type {func}") });
            }
        }
        Some((_, other)) => {
            return Err(WasmCheckError::BadEntry { found: format!("a {}", kind_name(other)) });
        }
    }

    for (module, name, ty) in &imports {
        let import = format!("{module}.{name}");
        let expected = (*module == wasi_p1::MODULE).then(|| wasi_p1::signature(name)).flatten();
        let (Some((params, results)), EntityType::Func(id) | EntityType::FuncExact(id)) = (expected, ty)
        else {
            return Err(WasmCheckError::UnsupportedImport { import });
        };
        let func = types[*id].unwrap_func();
        if func.params() != params || func.results() != results {
            return Err(WasmCheckError::WrongWasiSignature {
                import,
                found: func.to_string(),
                expected: wasi_p1::render(params, results),
            });
        }
    }

    Ok(ModuleInfo {
        digest: hex::encode(Sha256::digest(bytes)),
        size: bytes.len() as u64,
        kind: "module",
        exports: exports.iter().map(|(name, _)| (*name).to_owned()).collect(),
        imports: imports.iter().map(|(module, name, _)| format!("{module}.{name}")).collect(),
    })
}

/// A component: valid, only interfaces the runtime links, and the `wasi:cli/run` export. Only
/// the outermost component's imports and exports count; nested modules and components are its
/// implementation.
fn inspect_component(bytes: &[u8]) -> Result<ModuleInfo, WasmCheckError> {
    Validator::new_with_features(WasmFeatures::WASM3 | WasmFeatures::COMPONENT_MODEL)
        .validate_all(bytes)
        .map_err(|error| invalid(&error))?;
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(|error| invalid(&error))? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(section) if depth == 0 => {
                for import in section {
                    imports.push(import.map_err(|error| invalid(&error))?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(section) if depth == 0 => {
                for export in section {
                    exports.push(export.map_err(|error| invalid(&error))?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    if let Some(import) = imports.iter().find(|name| !wasi_p2::provides(name)) {
        return Err(WasmCheckError::UnsupportedComponentImport { import: import.clone() });
    }
    let runs = exports.iter().any(|name| {
        let (interface, version_ok) = wasi_p2::interface_of(name);
        version_ok && interface == wasi_p2::RUN_EXPORT
    });
    if !runs {
        return Err(WasmCheckError::NoRunExport);
    }
    Ok(ModuleInfo {
        digest: hex::encode(Sha256::digest(bytes)),
        size: bytes.len() as u64,
        kind: "component",
        exports,
        imports,
    })
}

fn invalid(error: &wasmparser::BinaryReaderError) -> WasmCheckError {
    WasmCheckError::Invalid { message: error.message().to_owned(), offset: error.offset() }
}

fn kind_name(ty: &EntityType) -> &'static str {
    match ty {
        EntityType::Func(_) | EntityType::FuncExact(_) => "function",
        EntityType::Table(_) => "table",
        EntityType::Memory(_) => "memory",
        EntityType::Global(_) => "global",
        EntityType::Tag(_) => "tag",
    }
}
