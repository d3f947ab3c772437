//! `wasm_check::inspect` against WAT fixtures and the real sample jobs, and against the
//! executor's own runtime: every verdict here must match `jobwheel_wasm::Runtime::validate`,
//! so an upload the admin accepts is one the executor will load.

use jobwheel_admin::wasm_check::{
    self, MAX_MODULE_BYTES, ModuleInfo, WasmCheckError, inspect, wasi_p1, wasi_p2,
};
use jobwheel_wasm::{Runtime, RuntimeConfig};
use sha2::{Digest, Sha256};

fn wat(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap_or_else(|e| panic!("bad fixture: {e}\n{text}"))
}

const COMMAND: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#;

/// Every fixture the admin refuses, with the error it must give.
fn refused() -> Vec<(&'static str, Vec<u8>, WasmCheckError)> {
    let mut truncated = wat(COMMAND);
    truncated.truncate(20);
    let invalid_offset = |bytes: &[u8]| match inspect(bytes) {
        Err(WasmCheckError::Invalid { offset, .. }) => offset,
        other => panic!("expected Invalid, got {other:?}"),
    };
    let truncated_offset = invalid_offset(&truncated);
    let mismatch = wat(r#"(module (func (export "_start") (result i32) (i64.const 1)))"#);
    let mismatch_offset = invalid_offset(&mismatch);
    let page_size = wat(r#"(module (memory 1 (pagesize 1)) (func (export "_start")))"#);
    let page_size_offset = invalid_offset(&page_size);
    let unsupported = |import: &str| WasmCheckError::UnsupportedImport { import: import.to_owned() };
    vec![
        ("empty", Vec::new(), WasmCheckError::Empty),
        ("text", b"fn main() {}".to_vec(), WasmCheckError::NotWasm),
        ("wat source", b"(module)".to_vec(), WasmCheckError::NotWasm),
        ("component without wasi:cli/run", wat("(component)"), WasmCheckError::NoRunExport),
        (
            "component importing an unknown interface",
            component(&["wasi:teleport/beam@0.2.0"]),
            WasmCheckError::UnsupportedComponentImport { import: "wasi:teleport/beam@0.2.0".to_owned() },
        ),
        (
            "component importing WASI 0.3",
            component(&["wasi:cli/environment@0.3.0"]),
            WasmCheckError::UnsupportedComponentImport { import: "wasi:cli/environment@0.3.0".to_owned() },
        ),
        (
            "truncated",
            truncated,
            WasmCheckError::Invalid {
                message: "unexpected end-of-file".to_owned(),
                offset: truncated_offset,
            },
        ),
        (
            "type mismatch",
            mismatch,
            WasmCheckError::Invalid {
                message: "type mismatch: expected i32, found i64".to_owned(),
                offset: mismatch_offset,
            },
        ),
        (
            "reactor",
            wat(r#"(module (memory (export "memory") 1) (func (export "_initialize")))"#),
            WasmCheckError::NoEntry,
        ),
        (
            "_start with a parameter",
            wat(r#"(module (func (export "_start") (param i32)))"#),
            WasmCheckError::BadEntry { found: "a function of type (func (param i32))".to_owned() },
        ),
        (
            "_start is a memory",
            wat(r#"(module (memory (export "_start") 1))"#),
            WasmCheckError::BadEntry { found: "a memory".to_owned() },
        ),
        (
            "env import",
            wat(r#"(module (import "env" "foo" (func)) (func (export "_start")))"#),
            unsupported("env.foo"),
        ),
        (
            "unknown WASI function",
            wat(
                r#"(module (import "wasi_snapshot_preview1" "fd_teleport" (func)) (func (export "_start")))"#,
            ),
            unsupported("wasi_snapshot_preview1.fd_teleport"),
        ),
        (
            "WASI preview 0",
            wat(
                r#"(module (import "wasi_unstable" "proc_exit" (func (param i32))) (func (export "_start")))"#,
            ),
            unsupported("wasi_unstable.proc_exit"),
        ),
        (
            "WASI memory import",
            wat(r#"(module (import "wasi_snapshot_preview1" "memory" (memory 1)) (func (export "_start")))"#),
            unsupported("wasi_snapshot_preview1.memory"),
        ),
        (
            "WASI function as a global",
            wat(
                r#"(module (import "wasi_snapshot_preview1" "fd_close" (global i32)) (func (export "_start")))"#,
            ),
            unsupported("wasi_snapshot_preview1.fd_close"),
        ),
        (
            "wrong WASI signature",
            wat(r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32) (result i32)))
                   (func (export "_start")))"#),
            WasmCheckError::WrongWasiSignature {
                import: "wasi_snapshot_preview1.fd_write".to_owned(),
                found: "(func (param i32) (result i32))".to_owned(),
                expected: "(func (param i32 i32 i32 i32) (result i32))".to_owned(),
            },
        ),
        (
            // Custom page sizes parse, but wasmtime 48 leaves the proposal off by default.
            "proposal wasmtime does not enable",
            page_size,
            WasmCheckError::Invalid {
                message: "the custom page sizes proposal must be enabled to customize a memory's page size"
                    .to_owned(),
                offset: page_size_offset,
            },
        ),
    ]
}

/// Modules the admin accepts beyond the plain command: Wasm 3.0 features wasmtime enables.
/// A minimal WASI 0.2 command component: imports `interfaces` and exports `wasi:cli/run`
/// returning `ok`. Each import asks for a function `get-arguments`, so a linker that lacks the
/// interface refuses it (an empty instance type would link against anything).
fn component(interfaces: &[&str]) -> Vec<u8> {
    let imports: String = interfaces
        .iter()
        .map(|name| {
            format!(r#"(import "{name}" (instance (export "get-arguments" (func (result (list string))))))"#)
        })
        .collect();
    wat(&format!(
        r#"(component
  {imports}
  (core module $m (func (export "run") (result i32) (i32.const 0)))
  (core instance $i (instantiate $m))
  (func $run (result (result)) (canon lift (core func $i "run")))
  (instance $cli-run (export "run" (func $run)))
  (export "wasi:cli/run@0.2.12" (instance $cli-run)))"#
    ))
}

fn accepted() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("bare component", component(&[])),
        ("component using wasi:cli/environment", component(&["wasi:cli/environment@0.2.0"])),
        ("command", wat(COMMAND)),
        ("bare _start", wat(r#"(module (func (export "_start")))"#)),
        (
            "tail calls",
            wat(r#"(module (func $f (return_call $g)) (func $g) (func (export "_start") (call $f)))"#),
        ),
        ("memory64", wat(r#"(module (memory i64 1) (func (export "_start")))"#)),
        ("gc struct", wat(r#"(module (type (struct (field i32))) (func (export "_start")))"#)),
    ]
}

#[test]
fn a_command_module_is_described() {
    let bytes = wat(COMMAND);
    let info = inspect(&bytes).expect("accepted");
    assert_eq!(
        info,
        ModuleInfo {
            digest: hex::encode(Sha256::digest(&bytes)),
            size: bytes.len() as u64,
            kind: "module",
            exports: vec!["memory".to_owned(), "_start".to_owned()],
            imports: vec![
                "wasi_snapshot_preview1.fd_write".to_owned(),
                "wasi_snapshot_preview1.proc_exit".to_owned()
            ],
        }
    );
    let json = serde_json::to_value(&info).expect("serializes");
    assert_eq!(json["digest"], info.digest.as_str());
    assert_eq!(json["size"], bytes.len());
    assert_eq!(json["exports"][1], "_start");
    assert_eq!(json["imports"][0], "wasi_snapshot_preview1.fd_write");
}

#[test]
fn refused_modules_get_their_message() {
    for (name, bytes, expected) in refused() {
        let error = inspect(&bytes).expect_err(name);
        assert_eq!(error, expected, "{name}");
    }
}

#[test]
fn messages_say_what_to_do() {
    let message = |bytes: &[u8]| inspect(bytes).expect_err("refused").to_string();
    assert!(message(b"PK\x03\x04").contains("does not start with the `\\0asm` magic number"));
    assert!(message(&wat("(component)")).contains("does not export wasi:cli/run"));
    assert!(
        message(&component(&["wasi:teleport/beam@0.2.0"]))
            .starts_with("the component imports wasi:teleport/beam@0.2.0")
    );
    assert!(message(&wat(r#"(module (func (export "main")))"#)).contains("no `_start` export"));
    assert_eq!(
        message(&wat(r#"(module (import "env" "foo" (func)) (func (export "_start")))"#)),
        "the module imports env.foo, which jobwheel does not provide: jobs may import only WASI \
         preview-1 functions (`wasi_snapshot_preview1`)"
    );
    let invalid = message(b"\0asm\x01\0\0\0\x01");
    assert!(
        invalid.starts_with("invalid WebAssembly module: ") && invalid.contains("at byte offset"),
        "{invalid}"
    );
}

#[test]
fn the_size_cap_is_checked_before_parsing() {
    let mut bytes = wat(COMMAND);
    bytes.resize(MAX_MODULE_BYTES + 1, 0);
    assert_eq!(
        inspect(&bytes),
        Err(WasmCheckError::TooLarge { size: MAX_MODULE_BYTES as u64 + 1, limit: MAX_MODULE_BYTES })
    );
    assert!(inspect(&bytes).expect_err("too large").to_string().contains("32 MiB"));
}

#[test]
fn every_sample_job_is_accepted() {
    for name in [
        "hello",
        "failing",
        "cpu-burner",
        "memory-hog",
        "sandbox-probe",
        "sha256",
        "sharding",
        "stdout-flood",
    ] {
        let bytes = jobwheel_tests::sample_jobs::sample_job(name);
        let info = inspect(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(info.exports.iter().any(|e| e == wasm_check::ENTRY_EXPORT), "{name}: {:?}", info.exports);
        assert!(
            info.imports.iter().all(|i| i.starts_with("wasi_snapshot_preview1.")),
            "{name}: {:?}",
            info.imports
        );
        assert!(!info.imports.is_empty(), "{name} uses WASI");
    }
}

#[test]
fn the_http_check_component_is_accepted_with_its_imports() {
    let bytes = jobwheel_tests::sample_jobs::sample_component("http-check");
    let info = inspect(&bytes).expect("accepted");
    assert_eq!(info.kind, "component");
    assert!(info.exports.iter().any(|e| e.starts_with("wasi:cli/run@0.2.")), "{:?}", info.exports);
    assert!(
        info.imports.iter().any(|i| i.starts_with("wasi:http/outgoing-handler@0.2.")),
        "{:?}",
        info.imports
    );
    assert!(info.imports.iter().all(|i| wasi_p2::provides(i)), "{:?}", info.imports);
}

/// Each interface of the admin's WASI 0.2 list is one of the vendored WASI 0.2 WIT files that
/// the executor's linker implements (`wit/deps/`, copied from wasmtime-wasi-http 48), and a real
/// component using several of them links (above).
#[test]
fn the_wasi_p2_list_names_vendored_wasi_interfaces() {
    let deps = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/deps");
    for interface in wasi_p2::INTERFACES {
        let (package, name) = interface.split_once('/').expect("package/interface");
        let file = deps.join(format!("{}.wit", package.trim_start_matches("wasi:")));
        let wit = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            wit.contains(&format!("package {package}@0.2.")),
            "{interface}: {} is another package",
            file.display()
        );
        assert!(wit.contains(&format!("interface {name} {{")), "{interface} is not in {}", file.display());
    }
}

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig::new(None)).expect("runtime")
}

#[tokio::test]
async fn the_executor_runtime_gives_the_same_verdicts() {
    let runtime = runtime();
    for (name, bytes, _) in refused() {
        let verdict = runtime.validate(bytes).await;
        assert!(verdict.is_err(), "the admin refuses {name} but the executor would load it");
    }
    for (name, bytes) in accepted() {
        inspect(&bytes).unwrap_or_else(|e| panic!("admin refuses {name}: {e}"));
        let digest = runtime.validate(bytes.clone()).await;
        assert_eq!(
            digest.unwrap_or_else(|e| panic!("executor refuses {name}: {e}")),
            inspect(&bytes).expect("accepted").digest
        );
    }
}

/// Checks the admin's WASI table against the executor's linker: each function links with the
/// listed signature and fails with one more parameter.
#[tokio::test]
async fn the_wasi_table_matches_the_executor_linker() {
    let runtime = runtime();
    assert_eq!(wasi_p1::FUNCTIONS.len(), 46, "WASI preview 1 has 46 functions");
    for (name, params, results) in wasi_p1::FUNCTIONS {
        let signature = wasi_p1::render(params, results);
        let module = |signature: &str| {
            wat(&format!(
                r#"(module (import "wasi_snapshot_preview1" "{name}" {signature}) (func (export "_start")))"#
            ))
        };
        let good = module(&signature);
        inspect(&good).unwrap_or_else(|e| panic!("admin refuses {name}: {e}"));
        runtime.validate(good).await.unwrap_or_else(|e| panic!("{name} {signature}: {e}"));

        let mut more = params.to_vec();
        more.push(wasmparser::ValType::I32);
        let bad = module(&wasi_p1::render(&more, results));
        assert!(
            matches!(inspect(&bad), Err(WasmCheckError::WrongWasiSignature { .. })),
            "admin accepts {name} with an extra parameter"
        );
        assert!(runtime.validate(bad).await.is_err(), "the executor links {name} with an extra parameter");
    }
}
