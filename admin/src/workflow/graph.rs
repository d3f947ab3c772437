//! The graph of a workflow as stored (JSON in `jobwheel_workflow.graph`, copied into each
//! instance) and as the API and the editor exchange it, and the checks every stored graph has
//! passed: names, edges, cycles, limits, expressions, switches, approvals, sub-workflows, maps. Jobs
//! and the workflows sub-workflow nodes start are checked by the caller, which knows them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::expr::{self, ExprError};
use super::node::{Condition, Edge, Node, NodeKind};
use super::schema::{self, SchemaError};

/// The most nodes a workflow holds (a 200-node fan-out/fan-in is the benchmark's shape).
pub const MAX_NODES: usize = 500;
/// The longest node name; names are keys in the instance context.
pub const MAX_NODE_NAME: usize = 64;
/// The most retries a node may ask for.
pub const MAX_RETRIES: u32 = 10;

/// A workflow's DAG.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Graph {
    /// The steps.
    pub nodes: Vec<Node>,
    /// The dependencies.
    #[serde(default)]
    pub edges: Vec<Edge>,
    /// A JSON Schema every start's input (context) must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
}

/// Why a graph is refused; every message names the node (or edge) at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// No nodes.
    #[error("a workflow needs at least one node")]
    Empty,
    /// Over [`MAX_NODES`].
    #[error("a workflow has at most {MAX_NODES} nodes, this one has {0}")]
    TooLarge(usize),
    /// A name that is empty, too long, or has other characters.
    #[error("node name {0:?} is not valid: use 1 to {MAX_NODE_NAME} letters, digits, '_' or '-'")]
    BadName(String),
    /// Two nodes share a name.
    #[error("node {0:?} appears twice")]
    Duplicate(String),
    /// Too many retries.
    #[error("node {0:?} asks for more than {MAX_RETRIES} retries")]
    Retries(String),
    /// An edge names a node that does not exist.
    #[error("edge {from:?} -> {to:?} names node {missing:?}, which is not in the workflow")]
    Dangling {
        /// The parent named.
        from: String,
        /// The child named.
        to: String,
        /// The one that is missing.
        missing: String,
    },
    /// The same edge twice, or an edge from a node to itself.
    #[error("edge {0:?} -> {1:?} is repeated or points at its own node")]
    BadEdge(String, String),
    /// A cycle, named by one node on it and the path around it.
    #[error("node {node:?} depends on itself: {path}")]
    Cycle {
        /// A node on the cycle.
        node: String,
        /// `a -> b -> a`.
        path: String,
    },
    /// An edge's `if` is refused, with where.
    #[error("edge {from:?} -> {to:?}: its if does not check at {error}")]
    Expr {
        /// The parent.
        from: String,
        /// The child.
        to: String,
        /// What and where.
        error: ExprError,
    },
    /// A declared schema is not one.
    #[error("{owner} {which}: {error}")]
    Schema {
        /// `node "a"`, or `the workflow`.
        owner: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What is wrong.
        error: SchemaError,
    },
    /// A switch node breaks a switch's rules.
    #[error("switch node {0:?}: {1}")]
    Switch(String, &'static str),
    /// An approval node breaks an approval's rules.
    #[error("approval node {0:?}: {1}")]
    Approval(String, &'static str),
    /// A sub-workflow node breaks a sub-workflow's rules.
    #[error("sub-workflow node {0:?}: {1}")]
    Subflow(String, &'static str),
    /// A map node breaks a map's rules.
    #[error("map node {0:?}: {1}")]
    Map(String, String),
    /// A node's job does not exist (checked by the caller).
    #[error("node {node:?} runs job {job_id}, which does not exist")]
    UnknownJob {
        /// The node.
        node: String,
        /// The job it names.
        job_id: i32,
    },
}

/// Whether `name` is a node name: 1 to [`MAX_NODE_NAME`] letters, digits, `_` or `-`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NODE_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Graph {
    /// Parses a stored graph.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The stored form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{\"nodes\":[]}".to_owned())
    }

    /// Checks names, limits, edges and cycles (not jobs: see [`Graph::check_jobs`]).
    pub fn check(&self) -> Result<(), GraphError> {
        if self.nodes.is_empty() {
            return Err(GraphError::Empty);
        }
        if self.nodes.len() > MAX_NODES {
            return Err(GraphError::TooLarge(self.nodes.len()));
        }
        let mut names = BTreeSet::new();
        for node in &self.nodes {
            if !valid_name(&node.name) {
                return Err(GraphError::BadName(node.name.clone()));
            }
            if !names.insert(node.name.as_str()) {
                return Err(GraphError::Duplicate(node.name.clone()));
            }
            if node.retries > MAX_RETRIES {
                return Err(GraphError::Retries(node.name.clone()));
            }
        }
        let mut seen = BTreeSet::new();
        for edge in &self.edges {
            for end in [&edge.from, &edge.to] {
                if !names.contains(end.as_str()) {
                    return Err(GraphError::Dangling {
                        from: edge.from.clone(),
                        to: edge.to.clone(),
                        missing: end.clone(),
                    });
                }
            }
            if edge.from == edge.to || !seen.insert((edge.from.as_str(), edge.to.as_str())) {
                return Err(GraphError::BadEdge(edge.from.clone(), edge.to.clone()));
            }
            if let Some(text) = &edge.guard {
                expr::check(text).map_err(|error| GraphError::Expr {
                    from: edge.from.clone(),
                    to: edge.to.clone(),
                    error,
                })?;
            }
        }
        self.check_switches()?;
        self.check_approvals()?;
        self.check_subflows()?;
        self.check_maps()?;
        self.check_schemas()?;
        self.find_cycle()
    }

    /// Every declared schema is a JSON Schema (a switch declares none: it has no data of its own).
    fn check_schemas(&self) -> Result<(), GraphError> {
        let start = ("the workflow".to_owned(), "inputSchema", &self.input_schema);
        let nodes = self.nodes.iter().flat_map(|n| {
            let owner = format!("node {:?}", n.name);
            [(owner.clone(), "inputSchema", &n.input_schema), (owner, "outputSchema", &n.output_schema)]
        });
        for (owner, which, declared) in std::iter::once(start).chain(nodes) {
            if let Some(declared) = declared {
                schema::check(declared).map_err(|error| GraphError::Schema { owner, which, error })?;
            }
        }
        match self
            .nodes
            .iter()
            .find(|n| n.kind == NodeKind::Switch && (n.input_schema.is_some() || n.output_schema.is_some()))
        {
            Some(n) => Err(GraphError::Switch(
                n.name.clone(),
                "a switch declares no schema: it has no data of its own",
            )),
            None => Ok(()),
        }
    }

    /// A switch runs no job, has branches, at most one without `if` (its default), and its
    /// branches take no `when` (the branch chosen is the one that holds).
    fn check_switches(&self) -> Result<(), GraphError> {
        for node in self.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
            let bad = |why| Err(GraphError::Switch(node.name.clone(), why));
            if node.job_id != 0 {
                return bad("a switch runs no job: leave jobId out");
            }
            let branches: Vec<&Edge> = self.edges.iter().filter(|e| e.from == node.name).collect();
            if branches.is_empty() {
                return bad("a switch needs at least one outgoing edge (its branches)");
            }
            if branches.iter().filter(|e| e.guard.is_none()).count() > 1 {
                return bad("at most one branch may have no if (the default)");
            }
            if branches.iter().any(|e| e.when != Condition::Success) {
                return bad("a branch takes no when other than SUCCESS: its if chooses it");
            }
        }
        Ok(())
    }

    /// An approval runs no job and declares no schema; `onDeadline` belongs to approvals only.
    fn check_approvals(&self) -> Result<(), GraphError> {
        for node in &self.nodes {
            let bad = |why| Err(GraphError::Approval(node.name.clone(), why));
            if node.kind != NodeKind::Approval {
                if node.on_deadline.is_some() {
                    return Err(GraphError::Approval(
                        node.name.clone(),
                        "onDeadline is for approval nodes only",
                    ));
                }
                continue;
            }
            if node.job_id != 0 {
                return bad("an approval runs no job: leave jobId out");
            }
            if node.input_schema.is_some() || node.output_schema.is_some() || node.retries > 0 {
                return bad("an approval declares no schema and has no retries");
            }
        }
        Ok(())
    }

    /// A sub-workflow node names its workflow and runs no job; it has no retries and no
    /// timeout of its own (the child's nodes have theirs, and a retry would start the child
    /// again from nothing — rerun from failure reruns the child's failed nodes instead).
    /// `workflowId` belongs to sub-workflow nodes only.
    fn check_subflows(&self) -> Result<(), GraphError> {
        for node in &self.nodes {
            let bad = |why| Err(GraphError::Subflow(node.name.clone(), why));
            if node.kind != NodeKind::Workflow {
                if node.workflow_id.is_some() {
                    return bad("workflowId is for sub-workflow nodes only");
                }
                continue;
            }
            if node.workflow_id.is_none_or(|id| id <= 0) {
                return bad("a sub-workflow node needs the workflowId of the workflow it starts");
            }
            if node.job_id != 0 {
                return bad("a sub-workflow node runs no job: leave jobId out");
            }
            if node.retries > 0 || node.timeout_secs > 0 {
                return bad(
                    "a sub-workflow node has no retries and no timeout: its child's nodes have theirs",
                );
            }
            if node.param.is_some() || node.delivery.is_some() {
                return bad(
                    "a sub-workflow node takes no param and no delivery: its child's nodes have theirs",
                );
            }
        }
        Ok(())
    }

    /// Whether planning reads the context: an edge has an `if`, or a node is a switch.
    pub fn reads_data(&self) -> bool {
        self.edges.iter().any(|e| e.guard.is_some()) || self.nodes.iter().any(|n| n.kind == NodeKind::Switch)
    }

    /// The workflows the sub-workflow nodes start, each once.
    pub fn child_workflows(&self) -> BTreeSet<i64> {
        self.nodes.iter().filter(|n| n.kind == NodeKind::Workflow).filter_map(|n| n.workflow_id).collect()
    }

    /// The nodes that run a job (a map node runs its job once per item).
    pub fn job_nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| matches!(n.kind, NodeKind::Job | NodeKind::Map))
    }

    /// Checks that every job node's job exists, with `exists` answering for one job id.
    pub fn check_jobs(&self, exists: impl Fn(i32) -> bool) -> Result<(), GraphError> {
        match self.job_nodes().find(|n| !exists(n.job_id)) {
            Some(n) => Err(GraphError::UnknownJob { node: n.name.clone(), job_id: n.job_id }),
            None => Ok(()),
        }
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Each node's incoming edges, by node name (every node has an entry).
    pub fn parents(&self) -> BTreeMap<&str, Vec<&Edge>> {
        let mut out: BTreeMap<&str, Vec<&Edge>> =
            self.nodes.iter().map(|n| (n.name.as_str(), Vec::new())).collect();
        for edge in &self.edges {
            out.entry(edge.to.as_str()).or_default().push(edge);
        }
        out
    }

    /// Every node reachable from `roots` along edges, excluding the roots themselves unless a
    /// root is reachable from another root.
    pub fn descendants<'a>(&'a self, roots: &[&str]) -> BTreeSet<&'a str> {
        let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for edge in &self.edges {
            children.entry(edge.from.as_str()).or_default().push(edge.to.as_str());
        }
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> =
            roots.iter().flat_map(|r| children.get(r).cloned().unwrap_or_default()).collect();
        while let Some(node) = stack.pop() {
            if seen.insert(node) {
                stack.extend(children.get(node).map(Vec::as_slice).unwrap_or_default());
            }
        }
        seen
    }

    /// Depth-first search with colours; the first back edge found is the cycle reported.
    fn find_cycle(&self) -> Result<(), GraphError> {
        let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for edge in &self.edges {
            children.entry(edge.from.as_str()).or_default().push(edge.to.as_str());
        }
        // 0 unvisited, 1 on the current path, 2 done.
        let mut colour: BTreeMap<&str, u8> = BTreeMap::new();
        for start in self.nodes.iter().map(|n| n.name.as_str()) {
            if colour.get(start).copied().unwrap_or(0) != 0 {
                continue;
            }
            // An explicit stack: a 500-node chain must not overflow the task's stack.
            let mut path: Vec<(&str, usize)> = vec![(start, 0)];
            colour.insert(start, 1);
            while let Some((node, next)) = path.last_mut() {
                let kids = children.get(*node).map(Vec::as_slice).unwrap_or_default();
                if let Some(&kid) = kids.get(*next) {
                    *next += 1;
                    match colour.get(kid).copied().unwrap_or(0) {
                        0 => {
                            colour.insert(kid, 1);
                            path.push((kid, 0));
                        }
                        1 => {
                            let from = path.iter().position(|(n, _)| *n == kid).unwrap_or(0);
                            let mut names: Vec<&str> = path[from..].iter().map(|(n, _)| *n).collect();
                            names.push(kid);
                            return Err(GraphError::Cycle { node: kid.to_owned(), path: names.join(" -> ") });
                        }
                        _ => {}
                    }
                } else {
                    colour.insert(*node, 2);
                    path.pop();
                }
            }
        }
        Ok(())
    }
}
