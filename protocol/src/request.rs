//! Routing and decoding of request bodies, as pure functions: what the executor does with a
//! `/run` `/kill` `/log` `/idleBeat` body and what the admin does with a `/api/registry`
//! `/api/registryRemove` `/api/callback` body before anything touches state.
//!
//! Both servers call these, and the fuzz targets (`fuzz/fuzz_targets/`) feed them arbitrary
//! bytes: whatever a peer sends, the result is a value or an error message, never a panic.

use serde::de::DeserializeOwned;

use crate::admin_api::{CallbackBody, HandleCallbackParam, RegistryParam};
use crate::executor_api::{
    IdleBeatParam, KillParam, LogParam, OutstandingQuery, TriggerParam, WasmModuleRef, paths,
};

/// Column widths of `xxl_job_registry` (`registry_group varchar(50)`, the others 255); longer
/// values are refused like blank ones rather than failing (MySQL) or being stored (SQLite).
pub const MAX_REGISTRY_GROUP_CHARS: usize = 50;
/// See [`MAX_REGISTRY_GROUP_CHARS`].
pub const MAX_REGISTRY_KEY_VALUE_CHARS: usize = 255;

/// Bytes of an unparsable executor request body echoed in its error message.
const SHOWN_BODY_BYTES: usize = 200;

/// A decoded request to the executor API.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutorRequest {
    /// `/beat` (the body is ignored, as upstream does).
    Beat,
    /// `/idleBeat`.
    IdleBeat(IdleBeatParam),
    /// `/run`.
    Run(Box<TriggerParam>),
    /// `/kill`.
    Kill(KillParam),
    /// `/log`.
    Log(LogParam),
    /// `/wasmPrepare` (jobwheel only).
    WasmPrepare(WasmModuleRef),
    /// `/status` (jobwheel only; the body is ignored).
    Status,
    /// `/outstanding` (jobwheel only).
    Outstanding(OutstandingQuery),
    /// `/runBatch` (jobwheel only): several `/run`s in one request.
    RunBatch(Vec<TriggerParam>),
    /// `/replay` (jobwheel only): a recorded Wasm run again.
    Replay(Box<crate::flight::ReplayRequest>),
}

/// Why an executor request was not decoded. The messages are upstream's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecutorRequestError {
    /// No executor endpoint has this path.
    UnknownPath,
    /// The body is not the JSON the endpoint takes; the message is the whole reply text.
    InvalidBody(String),
}

impl ExecutorRequest {
    /// Decodes a request to `path` (without the executor's path prefix, e.g. `/run`).
    pub fn parse(path: &str, body: &[u8]) -> Result<Self, ExecutorRequestError> {
        match path {
            paths::BEAT => Ok(Self::Beat),
            paths::IDLE_BEAT => executor_json(path, body).map(Self::IdleBeat),
            paths::RUN | paths::TRIGGER => executor_json(path, body).map(|p| Self::Run(Box::new(p))),
            paths::KILL => executor_json(path, body).map(Self::Kill),
            paths::LOG => executor_json(path, body).map(Self::Log),
            paths::WASM_PREPARE => executor_json(path, body).map(Self::WasmPrepare),
            paths::STATUS => Ok(Self::Status),
            paths::OUTSTANDING => executor_json(path, body).map(Self::Outstanding),
            paths::RUN_BATCH => executor_json(path, body).map(Self::RunBatch),
            paths::REPLAY => executor_json(path, body).map(|r| Self::Replay(Box::new(r))),
            _ => Err(ExecutorRequestError::UnknownPath),
        }
    }
}

/// Parses a JSON body like Gson would; an unparsable body is upstream's "request error", with
/// the start of the body to help whoever debugs the peer.
fn executor_json<T: DeserializeOwned>(path: &str, body: &[u8]) -> Result<T, ExecutorRequestError> {
    serde_json::from_slice(body).map_err(|e| {
        let shown = String::from_utf8_lossy(&body[..body.len().min(SHOWN_BODY_BYTES)]).into_owned();
        ExecutorRequestError::InvalidBody(format!(
            "request error: invalid JSON body for {path}: {e} (body: {shown:?})"
        ))
    })
}

/// A decoded, validated request to the admin's executor-facing API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminRequest {
    /// `api/registry`: every field non-blank and within the registry table's widths.
    Registry(RegistryParam),
    /// `api/registryRemove`: validated like [`AdminRequest::Registry`].
    RegistryRemove(RegistryParam),
    /// `api/callback`: the results, from either wire shape.
    Callback(Vec<HandleCallbackParam>),
}

/// Why an admin request was not decoded. [`AdminRequestError::message`] is upstream's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminRequestError {
    /// No endpoint is called `uri`.
    UnknownUri(String),
    /// The body is not JSON of the endpoint's shape; serde's reason (never the body itself).
    InvalidJson {
        /// The endpoint, e.g. `registry`.
        uri: String,
        /// serde's explanation.
        reason: String,
    },
    /// A registry field is blank or too long (upstream's "Illegal Argument.").
    IllegalArgument,
}

impl AdminRequestError {
    /// The `msg` of the failure reply.
    pub fn message(&self) -> String {
        match self {
            Self::UnknownUri(uri) => format!("invalid request, uri-mapping({uri}) not found."),
            Self::InvalidJson { uri, reason } => {
                format!("request error: invalid JSON body for api/{uri}: {reason}")
            }
            Self::IllegalArgument => "Illegal Argument.".to_owned(),
        }
    }
}

impl AdminRequest {
    /// Decodes a request to `api/{uri}` (`uri` is e.g. `registry`).
    pub fn parse(uri: &str, body: &[u8]) -> Result<Self, AdminRequestError> {
        match uri {
            "registry" => registry_param(uri, body).map(Self::Registry),
            "registryRemove" => registry_param(uri, body).map(Self::RegistryRemove),
            "callback" => admin_json::<CallbackBody>(uri, body).map(|b| Self::Callback(b.into_items())),
            _ => Err(AdminRequestError::UnknownUri(uri.to_owned())),
        }
    }
}

fn registry_param(uri: &str, body: &[u8]) -> Result<RegistryParam, AdminRequestError> {
    let param: RegistryParam = admin_json(uri, body)?;
    let fits = param.registry_group.chars().count() <= MAX_REGISTRY_GROUP_CHARS
        && param.registry_key.chars().count() <= MAX_REGISTRY_KEY_VALUE_CHARS
        && param.registry_value.chars().count() <= MAX_REGISTRY_KEY_VALUE_CHARS;
    if param.is_valid() && fits { Ok(param) } else { Err(AdminRequestError::IllegalArgument) }
}

fn admin_json<T: DeserializeOwned>(uri: &str, body: &[u8]) -> Result<T, AdminRequestError> {
    serde_json::from_slice(body)
        .map_err(|e| AdminRequestError::InvalidJson { uri: uri.to_owned(), reason: e.to_string() })
}
