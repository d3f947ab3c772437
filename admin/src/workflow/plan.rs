//! The planner: from the state of each node of one instance, what happens next. Pure, so the
//! rules are tested without a database and every admin decides alike.
//!
//! - A node is **ready** when every parent is over. It then **runs** if every incoming edge's
//!   condition holds, is **skipped** if one does not, and **passes** (a success with no output)
//!   if it is disabled and its edges hold.
//! - An edge with an `if` holds only when its `when` holds and the expression is true over the
//!   context as it is when the child is ready; an expression that has no boolean answer
//!   **fails** the child, with the edge and the reason in its message.
//! - A ready **switch** runs no job: it takes the first branch (outgoing edge, in the order
//!   listed) whose `if` is true, else its default (the branch without `if`), else none, and
//!   passes with `{"branch": <child or null>}` as its output; a branch not taken does not hold.
//!   A disabled switch takes its default.
//! - A ready **approval** waits (a run in `WAITING`) for a user's decision or its deadline; a
//!   disabled one passes.
//! - A ready **sub-workflow** node starts its child instance and waits (a run in `WAITING`)
//!   until the child ends; a disabled one passes.
//! - A ready **map** node starts its items and waits (a run in `WAITING`) until every item is
//!   over; a disabled one passes.
//! - A parent that succeeded, passed, or failed with "continue on failure" satisfies `SUCCESS`
//!   and `ALWAYS` edges; one that failed satisfies `FAILURE` and `ALWAYS`; a skipped one only
//!   `ALWAYS`.
//! - The instance is over when every node is; it failed if a node failed without "continue on
//!   failure", else it succeeded.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::expr::{self, Inputs};
use super::graph::Graph;
use super::node::{Condition, Edge, NodeKind};
use crate::store::{RunRow, RunStatus};

/// What an instance knows of one node (its newest attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    /// Due or running (an attempt exists and is not over).
    Active,
    /// Over: succeeded.
    Succeeded,
    /// Over: failed after its retries.
    Failed,
    /// Over: an incoming edge's condition did not hold.
    Skipped,
    /// Over: disabled, passed as a success.
    Passed,
}

impl NodeState {
    fn is_over(self) -> bool {
        self != Self::Active
    }

    /// The name an expression sees in `parent.state`.
    fn name(self) -> &'static str {
        match self {
            Self::Active => "RUNNING",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Skipped => "SKIPPED",
            Self::Passed => "PASSED",
        }
    }
}

/// The branch a switch took, as its run's output records it (`{"branch": "child"}`; `null`
/// when none held).
pub fn branch_output(branch: Option<&str>) -> Value {
    serde_json::json!({ "branch": branch })
}

/// Each switch's branch from its newest run's output (see [`branch_output`]); a switch marked
/// done by hand takes the branch its given output names.
pub fn branches(graph: &Graph, runs: &[RunRow]) -> BTreeMap<String, Option<String>> {
    let mut newest: BTreeMap<&str, &RunRow> = BTreeMap::new();
    for run in runs.iter().filter(|r| matches!(r.status, RunStatus::Passed | RunStatus::Succeeded)) {
        if graph.node(&run.node).is_some_and(|n| n.kind == NodeKind::Switch)
            && newest.get(run.node.as_str()).is_none_or(|seen| seen.id.0 < run.id.0)
        {
            newest.insert(run.node.as_str(), run);
        }
    }
    newest
        .into_iter()
        .map(|(node, run)| {
            let branch = run
                .output
                .as_deref()
                .and_then(|o| serde_json::from_str::<Value>(o).ok())
                .and_then(|v| v.get("branch").and_then(Value::as_str).map(str::to_owned));
            (node.to_owned(), branch)
        })
        .collect()
}

/// Each node's newest run that counts (by id: a rerun starts its attempts at 1 again); revoked
/// runs (skips undone by a rerun or a "mark done") do not count.
pub fn newest_runs(runs: &[RunRow]) -> BTreeMap<&str, &RunRow> {
    let mut newest: BTreeMap<&str, &RunRow> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status != RunStatus::Revoked) {
        match newest.get(run.node.as_str()) {
            Some(seen) if seen.id.0 > run.id.0 => {}
            _ => {
                newest.insert(run.node.as_str(), run);
            }
        }
    }
    newest
}

/// Each node's state from its newest run ([`newest_runs`]); a node with a retry just planned is
/// active.
pub fn node_states(runs: &[RunRow], retrying: &[String]) -> BTreeMap<String, NodeState> {
    let mut states: BTreeMap<String, NodeState> = newest_runs(runs)
        .into_iter()
        .map(|(node, run)| {
            let state = match run.status {
                RunStatus::Succeeded => NodeState::Succeeded,
                RunStatus::Failed | RunStatus::Stopped => NodeState::Failed,
                RunStatus::Skipped => NodeState::Skipped,
                RunStatus::Passed => NodeState::Passed,
                _ => NodeState::Active,
            };
            (node.to_owned(), state)
        })
        .collect();
    for node in retrying {
        states.insert(node.clone(), NodeState::Active);
    }
    states
}

/// What the planner decided for a node that had no state yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Fire its job.
    Run,
    /// Record it skipped.
    Skip,
    /// Record it passed (disabled).
    Pass,
    /// Record it failed without running: an expression had no answer (the message says why).
    Fail(String),
    /// A switch passed, taking this branch (`None`: none held and it has no default).
    Branch(Option<String>),
    /// An approval waits for a user's decision.
    Wait,
    /// A sub-workflow node starts its child instance and waits for it.
    Start,
    /// A map node starts its items and waits for them.
    Map,
}

/// What the planner reads besides the graph.
pub struct PlanInput<'a> {
    /// Each node's state (absent: not reached yet).
    pub states: &'a BTreeMap<String, NodeState>,
    /// Each switch's branch, for switches already recorded ([`branches`]).
    pub branches: &'a BTreeMap<String, Option<String>>,
    /// The instance's context as it is now.
    pub context: &'a Map<String, Value>,
}

/// The planner's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Planned {
    /// New decisions, in the graph's node order.
    pub decisions: Vec<(String, Decision)>,
    /// `Some(true)` succeeded, `Some(false)` failed, once every node is over.
    pub outcome: Option<bool>,
}

/// Plans an instance of `graph` from `input`. A skip, a pass, a failure without a run and a
/// switch settle their node at once, so their children are planned in the same call.
pub fn plan(graph: &Graph, input: &PlanInput<'_>) -> Planned {
    let parents = graph.parents();
    let mut states: BTreeMap<&str, NodeState> = input.states.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut branches: BTreeMap<&str, Option<&str>> =
        input.branches.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
    let data = Data { context: input.context };
    let mut decisions = Vec::new();
    loop {
        let mut changed = false;
        for node in &graph.nodes {
            if states.contains_key(node.name.as_str()) {
                continue;
            }
            let incoming = parents.get(node.name.as_str()).map(Vec::as_slice).unwrap_or_default();
            if incoming.iter().any(|e| !states.get(e.from.as_str()).is_some_and(|s| s.is_over())) {
                continue;
            }
            let mut holds = Ok(true);
            for edge in incoming {
                let state = states[edge.from.as_str()];
                match graph.node(&edge.from) {
                    Some(parent) if parent.kind == NodeKind::Switch => {
                        let taken =
                            branches.get(edge.from.as_str()).copied().flatten() == Some(edge.to.as_str());
                        let over = matches!(state, NodeState::Passed | NodeState::Succeeded);
                        holds = holds.map(|h| h && taken && over);
                    }
                    parent => {
                        let continues = parent.is_some_and(|p| p.continue_on_failure);
                        if satisfied(edge.when, state, continues) && holds == Ok(true) {
                            holds = data.edge_holds(edge, &edge.from, state);
                        } else {
                            holds = holds.map(|_| false);
                        }
                    }
                }
            }
            let decision = match (holds, node.disabled, node.kind) {
                (Err(message), _, _) => Decision::Fail(message),
                (Ok(false), _, _) => Decision::Skip,
                (Ok(true), disabled, NodeKind::Switch) => {
                    data.choose(graph, node.name.as_str(), incoming, disabled, &states)
                }
                (Ok(true), true, NodeKind::Job | NodeKind::Approval | NodeKind::Workflow | NodeKind::Map) => {
                    Decision::Pass
                }
                (Ok(true), false, NodeKind::Job) => Decision::Run,
                (Ok(true), false, NodeKind::Approval) => Decision::Wait,
                (Ok(true), false, NodeKind::Workflow) => Decision::Start,
                (Ok(true), false, NodeKind::Map) => Decision::Map,
            };
            let state = match &decision {
                Decision::Run | Decision::Wait | Decision::Start | Decision::Map => NodeState::Active,
                Decision::Skip => NodeState::Skipped,
                Decision::Pass | Decision::Branch(_) => NodeState::Passed,
                Decision::Fail(_) => NodeState::Failed,
            };
            if let Decision::Branch(branch) = &decision {
                let to = branch.as_deref().and_then(|b| graph.node(b)).map(|n| n.name.as_str());
                branches.insert(node.name.as_str(), to);
            }
            states.insert(node.name.as_str(), state);
            changed |= !matches!(decision, Decision::Run | Decision::Wait | Decision::Start | Decision::Map);
            decisions.push((node.name.clone(), decision));
        }
        if !changed {
            break;
        }
    }
    let over = graph.nodes.iter().all(|n| states.get(n.name.as_str()).is_some_and(|s| s.is_over()));
    let outcome = over.then(|| {
        !graph
            .nodes
            .iter()
            .any(|n| states.get(n.name.as_str()) == Some(&NodeState::Failed) && !n.continue_on_failure)
    });
    Planned { decisions, outcome }
}

/// The context the expressions read (in place: `expr_data.rs`).
struct Data<'a> {
    context: &'a Map<String, Value>,
}

impl Data<'_> {
    /// Whether `edge`'s `if` (if any) is true, `parent` having ended in `state`.
    fn edge_holds(&self, edge: &Edge, parent: &str, state: NodeState) -> Result<bool, String> {
        let Some(text) = &edge.guard else { return Ok(true) };
        self.evaluate(text, parent, state).map_err(|why| {
            format!("the if of edge {} -> {} ({text}) has no answer: {why}", edge.from, edge.to)
        })
    }

    fn evaluate(&self, text: &str, parent: &str, state: NodeState) -> Result<bool, String> {
        let checked = expr::check(text).map_err(|e| e.to_string())?;
        let output = self.context.get(parent).unwrap_or(&Value::Null);
        checked.holds(&Inputs { context: self.context, parent, state: state.name() }, output)
    }

    /// A ready switch's branch. Its branches see the node the switch follows as `parent` and
    /// `output` when it has exactly one incoming edge; else the switch itself, with no output.
    fn choose(
        &self,
        graph: &Graph,
        switch: &str,
        incoming: &[&Edge],
        disabled: bool,
        states: &BTreeMap<&str, NodeState>,
    ) -> Decision {
        let (parent, state) = match incoming {
            [only] => (only.from.as_str(), states[only.from.as_str()]),
            _ => (switch, NodeState::Passed),
        };
        let mut default = None;
        for edge in graph.edges.iter().filter(|e| e.from == switch) {
            match &edge.guard {
                None => default = default.or(Some(edge.to.clone())),
                Some(_) if disabled => {}
                Some(text) => match self.evaluate(text, parent, state) {
                    Ok(true) => return Decision::Branch(Some(edge.to.clone())),
                    Ok(false) => {}
                    Err(why) => {
                        return Decision::Fail(format!(
                            "the if of branch {switch} -> {} ({text}) has no answer: {why}",
                            edge.to
                        ));
                    }
                },
            }
        }
        Decision::Branch(default)
    }
}

/// Whether an edge `when` holds for a parent that ended in `state`.
fn satisfied(when: Condition, state: NodeState, continue_on_failure: bool) -> bool {
    let success = match state {
        NodeState::Succeeded | NodeState::Passed => Some(true),
        NodeState::Failed => Some(continue_on_failure),
        NodeState::Skipped | NodeState::Active => None,
    };
    match when {
        Condition::Always => true,
        Condition::Success => success == Some(true),
        Condition::Failure => success == Some(false),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
