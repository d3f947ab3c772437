//! A workflow's vocabulary: its nodes (a job, a switch, an approval, a sub-workflow or a map) with their overrides and
//! declared data shapes, and its edges with the condition on the parent's outcome and the
//! optional `if` on data. What a whole graph must satisfy is `graph.rs`'s.

use serde::{Deserialize, Serialize};

use crate::domain::DeliveryMode;

/// When an edge lets its child run, judged on the parent's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Condition {
    /// The parent succeeded (or failed with "continue on failure", or is disabled).
    #[default]
    Success,
    /// The parent failed (after its retries).
    Failure,
    /// The parent is over, whatever its outcome (skipped included).
    Always,
}

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeKind {
    /// Runs its job.
    #[default]
    Job,
    /// Runs no job: chooses one of its outgoing edges (its branches) by their `if`, the first
    /// that holds in the order listed, else the one without `if`; the others' children are
    /// skipped.
    Switch,
    /// Runs no job: waits until a user approves (a success) or rejects (a failure), or its
    /// deadline (`timeoutSecs`) passes and `onDeadline` decides.
    Approval,
    /// Starts an instance of another workflow (`workflowId`) with the context as its input and
    /// waits for it: its output is the child instance's node outputs, and it fails if the
    /// child fails or is stopped.
    Workflow,
    /// Runs its job once per item of the array at `items` (a JSON Pointer into the context), at
    /// most `parallelism` at once, each item with the node's retries; its output is the items'
    /// outputs in item order (`workflow::map`).
    Map,
}

/// What an approval's deadline decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OnDeadline {
    /// Rejected: the node fails.
    #[default]
    Reject,
    /// Approved: the node succeeds.
    Approve,
}

impl NodeKind {
    fn is_job(&self) -> bool {
        *self == Self::Job
    }
}

/// One step: an existing job, run with the node's overrides — or a switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// Unique in the workflow: letters, digits, `_` and `-`.
    pub name: String,
    /// A job (the default, left out of the stored form) or a switch.
    #[serde(default, skip_serializing_if = "NodeKind::is_job")]
    pub kind: NodeKind,
    /// The job this node runs (0 for a node of another kind).
    #[serde(default)]
    pub job_id: i32,
    /// The workflow a sub-workflow node starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<i64>,
    /// A map node's items: a JSON Pointer (RFC 6901) into the context naming an array, e.g.
    /// `/load/files` (node `load`'s output's `files`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<String>,
    /// A map node's most items running at once (1–1000; 10 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<u32>,
    /// A map node's output: the items' outputs in order (true, the default), or only their
    /// counts (false: for maps too large to hand their outputs on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect: Option<bool>,
    /// Replaces the job's parameter when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// Further attempts after a failure (0–10); each is a new run of the job.
    #[serde(default)]
    pub retries: u32,
    /// Seconds between a failure and the next attempt.
    #[serde(default)]
    pub retry_delay_secs: u32,
    /// Seconds after which a running attempt is killed and counts as failed (0: the job's own).
    #[serde(default)]
    pub timeout_secs: u32,
    /// A failure counts as success for the edges and the instance.
    #[serde(default)]
    pub continue_on_failure: bool,
    /// Not run: passes as a success with no output.
    #[serde(default)]
    pub disabled: bool,
    /// The node's delivery mode when it is not its job's (`EXACTLY_ONCE` or `AT_MOST_ONCE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryMode>,
    /// A JSON Schema the context must match before the node's `/run` is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
    /// A JSON Schema the node's output must match when it arrives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// An approval's decision when its deadline passes (reject when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_deadline: Option<OnDeadline>,
    /// Where the editor draws it (layout only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    /// Where the editor draws it (layout only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
}

/// A dependency: `to` waits for `from`, and runs only if `when` holds and, when it has one,
/// its `if` is true. Out of a switch, an edge is a branch: its `if` chooses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    /// The parent.
    pub from: String,
    /// The child.
    pub to: String,
    /// On the parent's success (default), failure, or always.
    #[serde(default)]
    pub when: Condition,
    /// A CEL expression over `context`, `output` and `parent` (`workflow::expr`).
    #[serde(default, rename = "if", skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
}

// `f64` layout hints: equality is only used by tests, never on NaN.
impl Eq for Node {}
