//! Request bodies of the admin API that executors call (`/api/registry`, `/api/registryRemove`,
//! `/api/callback`).

use serde::{Deserialize, Serialize};

use crate::lenient;

/// Paths of the admin API, relative to the admin's base address (which may end in
/// `/xxl-job-admin` for Gen A deployments).
pub mod paths {
    pub const REGISTRY: &str = "api/registry";
    pub const REGISTRY_REMOVE: &str = "api/registryRemove";
    pub const CALLBACK: &str = "api/callback";
}

/// One job result reported by an executor (`HandleCallbackParam`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleCallbackParam {
    #[serde(default, deserialize_with = "lenient::int")]
    pub log_id: i64,
    /// Gen A/B spelling; Gen C's `logDateTime` is accepted too.
    #[serde(rename = "logDateTim", alias = "logDateTime", default, deserialize_with = "lenient::int")]
    pub log_date_tim: i64,
    #[serde(default, deserialize_with = "lenient::int")]
    pub handle_code: i32,
    #[serde(default, deserialize_with = "lenient::string")]
    pub handle_msg: String,
    /// jobwheel extension: the output a workflow node's run produced (JSON text, at most
    /// [`MAX_WORKFLOW_OUTPUT`] bytes), sent only for runs whose trigger carried a workflow
    /// context. Absent from upstream executors' callbacks, whose handle message is the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// jobwheel extension: the run's flight record (JSON of `jobwheel_wasm::FlightRecord`,
    /// docs/replay.md), sent only for runs whose trigger asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight: Option<String>,
}

/// The largest output one workflow node's run may produce, in bytes of JSON.
pub const MAX_WORKFLOW_OUTPUT: usize = 64 * 1024;

/// Body of `/api/callback`: a bare array (Gen A/B) or `{"callbackList": [...]}` (Gen C).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CallbackBody {
    List(Vec<HandleCallbackParam>),
    Wrapped {
        #[serde(rename = "callbackList", default)]
        callback_list: Vec<HandleCallbackParam>,
    },
}

impl CallbackBody {
    pub fn into_items(self) -> Vec<HandleCallbackParam> {
        match self {
            Self::List(items) | Self::Wrapped { callback_list: items } => items,
        }
    }
}

/// Body of `/api/registry` and `/api/registryRemove` (`RegistryParam`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryParam {
    /// Always `"EXECUTOR"` in practice.
    #[serde(default, deserialize_with = "lenient::string")]
    pub registry_group: String,
    /// The executor's app name.
    #[serde(default, deserialize_with = "lenient::string")]
    pub registry_key: String,
    /// The executor's address, e.g. `http://10.0.0.5:9999/`.
    #[serde(default, deserialize_with = "lenient::string")]
    pub registry_value: String,
    /// jobwheel extension: a random id the executor process draws at start. A beat with an id
    /// the admin has not seen for this address means the process at the address is new (a
    /// restart on the same address), so runs sent to its predecessor are checked with
    /// `/outstanding` and closed as lost. Absent from upstream executors, never sent to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incarnation: Option<String>,
}

impl RegistryParam {
    /// Upstream's validation: every field must be non-blank ("Illegal Argument.").
    pub fn is_valid(&self) -> bool {
        [&self.registry_group, &self.registry_key, &self.registry_value].iter().all(|f| !f.trim().is_empty())
    }
}
