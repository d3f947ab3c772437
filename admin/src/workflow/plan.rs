//! The planner: from the state of each node of one instance, what happens next. Pure, so the
//! rules are tested without a database and every admin decides alike.
//!
//! - A node is **ready** when every parent is over. It then **runs** if every incoming edge's
//!   condition holds, is **skipped** if one does not, and **passes** (a success with no output)
//!   if it is disabled and its edges hold.
//! - A parent that succeeded, passed, or failed with "continue on failure" satisfies `SUCCESS`
//!   and `ALWAYS` edges; one that failed satisfies `FAILURE` and `ALWAYS`; a skipped one only
//!   `ALWAYS`.
//! - The instance is over when every node is; it failed if a node failed without "continue on
//!   failure", else it succeeded.

use std::collections::BTreeMap;

use super::graph::{Condition, Graph};
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
}

/// Each node's state from its newest run (by id: a rerun starts its attempts at 1 again);
/// revoked runs (skips undone by a rerun or a "mark done") do not count; a node with a retry
/// just planned is active.
pub fn node_states(runs: &[RunRow], retrying: &[String]) -> BTreeMap<String, NodeState> {
    let mut newest: BTreeMap<&str, &RunRow> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status != RunStatus::Revoked) {
        match newest.get(run.node.as_str()) {
            Some(seen) if seen.id.0 > run.id.0 => {}
            _ => {
                newest.insert(run.node.as_str(), run);
            }
        }
    }
    let mut states: BTreeMap<String, NodeState> = newest
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Fire its job.
    Run,
    /// Record it skipped.
    Skip,
    /// Record it passed (disabled).
    Pass,
}

/// The planner's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Planned {
    /// New decisions, in the graph's node order.
    pub decisions: Vec<(String, Decision)>,
    /// `Some(true)` succeeded, `Some(false)` failed, once every node is over.
    pub outcome: Option<bool>,
}

/// Plans an instance of `graph` whose nodes are in `states` (absent: not reached yet). A skip or
/// a pass settles its node at once, so their children are planned in the same call.
pub fn plan(graph: &Graph, states: &BTreeMap<String, NodeState>) -> Planned {
    let parents = graph.parents();
    let mut states: BTreeMap<&str, NodeState> = states.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut decisions = Vec::new();
    loop {
        let mut changed = false;
        for node in &graph.nodes {
            if states.contains_key(node.name.as_str()) {
                continue;
            }
            let incoming = parents.get(node.name.as_str()).map(Vec::as_slice).unwrap_or_default();
            let mut holds = true;
            let mut waiting = false;
            for edge in incoming {
                match states.get(edge.from.as_str()) {
                    Some(state) if state.is_over() => {
                        let continues = graph.node(&edge.from).is_some_and(|p| p.continue_on_failure);
                        holds &= satisfied(edge.when, *state, continues);
                    }
                    _ => waiting = true,
                }
            }
            if waiting {
                continue;
            }
            let decision = match (holds, node.disabled) {
                (false, _) => Decision::Skip,
                (true, true) => Decision::Pass,
                (true, false) => Decision::Run,
            };
            let state = match decision {
                Decision::Run => NodeState::Active,
                Decision::Skip => NodeState::Skipped,
                Decision::Pass => NodeState::Passed,
            };
            states.insert(node.name.as_str(), state);
            decisions.push((node.name.clone(), decision));
            changed |= decision != Decision::Run;
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
mod tests {
    use super::*;
    use crate::workflow::{Edge, Node};

    fn node(name: &str) -> Node {
        Node {
            name: name.into(),
            job_id: 1,
            param: None,
            retries: 0,
            retry_delay_secs: 0,
            timeout_secs: 0,
            continue_on_failure: false,
            disabled: false,
            delivery: None,
            x: None,
            y: None,
        }
    }

    fn edge(from: &str, to: &str, when: Condition) -> Edge {
        Edge { from: from.into(), to: to.into(), when }
    }

    fn states(pairs: &[(&str, NodeState)]) -> BTreeMap<String, NodeState> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    /// extract a, b → transform (join) → load; cleanup on load's failure.
    fn pipeline() -> Graph {
        Graph {
            nodes: ["a", "b", "transform", "load", "cleanup"].into_iter().map(node).collect(),
            edges: vec![
                edge("a", "transform", Condition::Success),
                edge("b", "transform", Condition::Success),
                edge("transform", "load", Condition::Success),
                edge("load", "cleanup", Condition::Failure),
            ],
        }
    }

    #[test]
    fn roots_run_first_and_a_join_waits_for_every_parent() {
        let g = pipeline();
        let p = plan(&g, &states(&[]));
        assert_eq!(p.decisions, vec![("a".into(), Decision::Run), ("b".into(), Decision::Run)]);
        let p = plan(&g, &states(&[("a", NodeState::Succeeded), ("b", NodeState::Active)]));
        assert!(p.decisions.is_empty() && p.outcome.is_none());
        let p = plan(&g, &states(&[("a", NodeState::Succeeded), ("b", NodeState::Succeeded)]));
        assert_eq!(p.decisions, vec![("transform".into(), Decision::Run)]);
    }

    #[test]
    fn a_failure_edge_runs_only_on_failure_and_the_skip_ends_the_instance() {
        let g = pipeline();
        let done =
            [("a", NodeState::Succeeded), ("b", NodeState::Succeeded), ("transform", NodeState::Succeeded)];
        let mut ok = states(&done);
        ok.insert("load".into(), NodeState::Succeeded);
        let p = plan(&g, &ok);
        assert_eq!(p.decisions, vec![("cleanup".into(), Decision::Skip)]);
        assert_eq!(p.outcome, Some(true));
        let mut failed = states(&done);
        failed.insert("load".into(), NodeState::Failed);
        let p = plan(&g, &failed);
        assert_eq!(p.decisions, vec![("cleanup".into(), Decision::Run)]);
        failed.insert("cleanup".into(), NodeState::Succeeded);
        assert_eq!(plan(&g, &failed).outcome, Some(false), "load failed: the instance failed");
    }

    #[test]
    fn a_failed_parent_skips_its_success_children_transitively() {
        let g = pipeline();
        let p = plan(&g, &states(&[("a", NodeState::Failed), ("b", NodeState::Succeeded)]));
        assert_eq!(
            p.decisions,
            vec![
                ("transform".into(), Decision::Skip),
                ("load".into(), Decision::Skip),
                ("cleanup".into(), Decision::Skip)
            ]
        );
        assert_eq!(p.outcome, Some(false));
    }

    #[test]
    fn continue_on_failure_and_disabled_nodes_pass_their_children_on() {
        let mut g = pipeline();
        g.nodes[0].continue_on_failure = true;
        g.nodes[2].disabled = true;
        let p = plan(&g, &states(&[("a", NodeState::Failed), ("b", NodeState::Succeeded)]));
        assert_eq!(p.decisions, vec![("transform".into(), Decision::Pass), ("load".into(), Decision::Run)]);
        let mut s = states(&[
            ("a", NodeState::Failed),
            ("b", NodeState::Succeeded),
            ("transform", NodeState::Passed),
        ]);
        s.insert("load".into(), NodeState::Succeeded);
        s.insert("cleanup".into(), NodeState::Skipped);
        assert_eq!(plan(&g, &s).outcome, Some(true), "a failure that continues does not fail the instance");
    }

    #[test]
    fn always_edges_follow_skipped_parents() {
        let mut g = pipeline();
        g.nodes.push(node("notify"));
        g.edges.push(edge("cleanup", "notify", Condition::Always));
        let s = states(&[
            ("a", NodeState::Succeeded),
            ("b", NodeState::Succeeded),
            ("transform", NodeState::Succeeded),
            ("load", NodeState::Succeeded),
        ]);
        let p = plan(&g, &s);
        assert_eq!(p.decisions, vec![("cleanup".into(), Decision::Skip), ("notify".into(), Decision::Run)]);
    }

    #[test]
    fn checks_name_the_node_at_fault() {
        let mut g = pipeline();
        assert_eq!(g.check(), Ok(()));
        g.edges.push(edge("load", "a", Condition::Always));
        let err = g.check().unwrap_err().to_string();
        assert!(err.contains("depends on itself") && err.contains("a -> transform -> load -> a"), "{err}");
        let mut g = pipeline();
        g.edges.push(edge("load", "ghost", Condition::Success));
        assert!(g.check().unwrap_err().to_string().contains("\"ghost\""));
        let mut g = pipeline();
        g.nodes.push(node("a"));
        assert_eq!(g.check(), Err(crate::workflow::GraphError::Duplicate("a".into())));
        let g = pipeline();
        let err = g.check_jobs(|id| id != 1).unwrap_err().to_string();
        assert!(err.contains("node \"a\" runs job 1"), "{err}");
        let mut g = pipeline();
        g.nodes[1].name = "b c".into();
        assert!(matches!(g.check(), Err(crate::workflow::GraphError::BadName(_))));
    }
}
