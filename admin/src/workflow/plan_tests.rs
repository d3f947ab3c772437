//! The planner's rules, case by case: joins, failure and always edges, continue-on-failure,
//! disabled nodes, conditions on data and switches.

use super::*;
use crate::workflow::{Edge, Node};

fn node(name: &str) -> Node {
    Node {
        name: name.into(),
        kind: NodeKind::Job,
        job_id: 1,
        param: None,
        retries: 0,
        retry_delay_secs: 0,
        timeout_secs: 0,
        continue_on_failure: false,
        disabled: false,
        delivery: None,
        input_schema: None,
        output_schema: None,
        on_deadline: None,
        workflow_id: None,
        items: None,
        parallelism: None,
        collect: None,
        x: None,
        y: None,
    }
}

fn edge(from: &str, to: &str, when: Condition) -> Edge {
    Edge { from: from.into(), to: to.into(), when, guard: None }
}

fn when(from: &str, to: &str, guard: &str) -> Edge {
    Edge { guard: Some(guard.into()), ..edge(from, to, Condition::Success) }
}

/// Plans with no switch recorded and an empty context.
fn plan_states(graph: &Graph, states: &BTreeMap<String, NodeState>) -> Planned {
    plan_with(graph, states, &serde_json::json!({}))
}

fn plan_with(graph: &Graph, states: &BTreeMap<String, NodeState>, context: &Value) -> Planned {
    let context = context.as_object().expect("an object");
    plan(graph, &PlanInput { states, branches: &BTreeMap::new(), context })
}

fn states(pairs: &[(&str, NodeState)]) -> BTreeMap<String, NodeState> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// extract a, b → transform (join) → load; cleanup on load's failure.
fn pipeline() -> Graph {
    Graph {
        input_schema: None,
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
    let p = plan_states(&g, &states(&[]));
    assert_eq!(p.decisions, vec![("a".into(), Decision::Run), ("b".into(), Decision::Run)]);
    let p = plan_states(&g, &states(&[("a", NodeState::Succeeded), ("b", NodeState::Active)]));
    assert!(p.decisions.is_empty() && p.outcome.is_none());
    let p = plan_states(&g, &states(&[("a", NodeState::Succeeded), ("b", NodeState::Succeeded)]));
    assert_eq!(p.decisions, vec![("transform".into(), Decision::Run)]);
}

#[test]
fn a_failure_edge_runs_only_on_failure_and_the_skip_ends_the_instance() {
    let g = pipeline();
    let done =
        [("a", NodeState::Succeeded), ("b", NodeState::Succeeded), ("transform", NodeState::Succeeded)];
    let mut ok = states(&done);
    ok.insert("load".into(), NodeState::Succeeded);
    let p = plan_states(&g, &ok);
    assert_eq!(p.decisions, vec![("cleanup".into(), Decision::Skip)]);
    assert_eq!(p.outcome, Some(true));
    let mut failed = states(&done);
    failed.insert("load".into(), NodeState::Failed);
    let p = plan_states(&g, &failed);
    assert_eq!(p.decisions, vec![("cleanup".into(), Decision::Run)]);
    failed.insert("cleanup".into(), NodeState::Succeeded);
    assert_eq!(plan_states(&g, &failed).outcome, Some(false), "load failed: the instance failed");
}

#[test]
fn a_failed_parent_skips_its_success_children_transitively() {
    let g = pipeline();
    let p = plan_states(&g, &states(&[("a", NodeState::Failed), ("b", NodeState::Succeeded)]));
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
    let p = plan_states(&g, &states(&[("a", NodeState::Failed), ("b", NodeState::Succeeded)]));
    assert_eq!(p.decisions, vec![("transform".into(), Decision::Pass), ("load".into(), Decision::Run)]);
    let mut s =
        states(&[("a", NodeState::Failed), ("b", NodeState::Succeeded), ("transform", NodeState::Passed)]);
    s.insert("load".into(), NodeState::Succeeded);
    s.insert("cleanup".into(), NodeState::Skipped);
    assert_eq!(
        plan_states(&g, &s).outcome,
        Some(true),
        "a failure that continues does not fail the instance"
    );
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
    let p = plan_states(&g, &s);
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

fn switch(name: &str) -> Node {
    Node { kind: NodeKind::Switch, job_id: 0, ..node(name) }
}

/// a → route (switch) → x | y | other (default); route's input is a's output.
fn routed() -> Graph {
    Graph {
        input_schema: None,
        nodes: vec![node("a"), switch("route"), node("x"), node("y"), node("other")],
        edges: vec![
            edge("a", "route", Condition::Success),
            when("route", "x", "output.kind == 'x'"),
            when("route", "y", "output.kind == 'y' && parent.name == 'a'"),
            edge("route", "other", Condition::Success),
        ],
    }
}

#[test]
fn an_if_on_data_chooses_the_children_that_run() {
    let g = Graph {
        input_schema: None,
        nodes: ["a", "big", "small"].into_iter().map(node).collect(),
        edges: vec![when("a", "big", "output.rows > 100"), when("a", "small", "context.a.rows <= 100")],
    };
    assert_eq!(g.check(), Ok(()));
    let p = plan_with(&g, &states(&[("a", NodeState::Succeeded)]), &serde_json::json!({"a": {"rows": 3}}));
    assert_eq!(p.decisions, vec![("big".into(), Decision::Skip), ("small".into(), Decision::Run)]);
    let p = plan_with(&g, &states(&[("a", NodeState::Failed)]), &serde_json::json!({}));
    assert_eq!(
        p.decisions,
        vec![("big".into(), Decision::Skip), ("small".into(), Decision::Skip)],
        "a SUCCESS edge with an if does not hold on failure, and its if is not evaluated"
    );
}

#[test]
fn an_if_with_no_answer_fails_the_child_and_names_the_edge() {
    let g = Graph {
        input_schema: None,
        nodes: ["a", "b", "c"].into_iter().map(node).collect(),
        edges: vec![when("a", "b", "output.rows > 1"), edge("b", "c", Condition::Failure)],
    };
    let p = plan_with(&g, &states(&[("a", NodeState::Succeeded)]), &serde_json::json!({"a": {"count": 1}}));
    let Decision::Fail(message) = &p.decisions[0].1 else { panic!("{p:?}") };
    assert!(message.contains("a -> b (output.rows > 1)") && message.contains("rows"), "{message}");
    assert_eq!(p.decisions[1], ("c".into(), Decision::Run), "the failure edge follows the failed child");
}

#[test]
fn a_switch_takes_the_first_branch_that_holds_else_its_default() {
    let g = routed();
    assert_eq!(g.check(), Ok(()));
    let done = states(&[("a", NodeState::Succeeded)]);
    let p = plan_with(&g, &done, &serde_json::json!({"a": {"kind": "y"}}));
    assert_eq!(
        p.decisions,
        vec![
            ("route".into(), Decision::Branch(Some("y".into()))),
            ("x".into(), Decision::Skip),
            ("y".into(), Decision::Run),
            ("other".into(), Decision::Skip)
        ]
    );
    let p = plan_with(&g, &done, &serde_json::json!({"a": {"kind": "z"}}));
    assert_eq!(p.decisions[0], ("route".into(), Decision::Branch(Some("other".into()))));
    assert_eq!(p.decisions[3], ("other".into(), Decision::Run));
    // A later call reads the branch recorded for the switch.
    let recorded = states(&[("a", NodeState::Succeeded), ("route", NodeState::Passed)]);
    let branches = BTreeMap::from([("route".to_owned(), Some("x".to_owned()))]);
    let context = serde_json::Map::new();
    let p = plan(&g, &PlanInput { states: &recorded, branches: &branches, context: &context });
    assert_eq!(
        p.decisions,
        vec![("x".into(), Decision::Run), ("y".into(), Decision::Skip), ("other".into(), Decision::Skip)]
    );
}

#[test]
fn a_switch_that_cannot_decide_fails_and_a_disabled_one_takes_its_default() {
    let mut g = routed();
    let p = plan_with(&g, &states(&[("a", NodeState::Succeeded)]), &serde_json::json!({"a": 7}));
    let Decision::Fail(message) = &p.decisions[0].1 else { panic!("{p:?}") };
    assert!(message.contains("branch route -> x"), "{message}");
    assert!(p.decisions[1..].iter().all(|(_, d)| *d == Decision::Skip), "{p:?}");
    assert_eq!(p.outcome, Some(false));
    g.nodes[1].disabled = true;
    let p = plan_with(&g, &states(&[("a", NodeState::Succeeded)]), &serde_json::json!({"a": 7}));
    assert_eq!(p.decisions[0], ("route".into(), Decision::Branch(Some("other".into()))));
}

#[test]
fn switch_and_expression_checks_name_the_fault() {
    let mut g = routed();
    g.edges[1].guard = Some("output.kind ==".into());
    let err = g.check().unwrap_err().to_string();
    assert!(err.contains("edge \"route\" -> \"x\"") && err.contains("line 1"), "{err}");
    let mut g = routed();
    g.edges[1].guard = None;
    assert!(g.check().unwrap_err().to_string().contains("at most one branch may have no if"));
    let mut g = routed();
    g.nodes[1].job_id = 5;
    assert!(g.check().unwrap_err().to_string().contains("runs no job"));
    let mut g = routed();
    g.edges[3].when = Condition::Always;
    assert!(g.check().unwrap_err().to_string().contains("takes no when"));
    let g = routed();
    assert_eq!(g.check_jobs(|id| id == 1), Ok(()), "a switch names no job");
}

/// A sub-workflow node: ready, it starts its child (and stays active); disabled, it passes and
/// its child runs. The graph's checks hold its rules.
#[test]
fn a_sub_workflow_starts_its_child_or_passes_when_disabled() {
    let sub = Node { kind: NodeKind::Workflow, job_id: 0, workflow_id: Some(7), ..node("sub") };
    let mut g = Graph {
        nodes: vec![node("a"), sub, node("b")],
        edges: vec![edge("a", "sub", Condition::Success), edge("sub", "b", Condition::Success)],
        input_schema: None,
    };
    g.check().expect("a valid sub-workflow");
    let p = plan_states(&g, &states(&[("a", NodeState::Succeeded)]));
    assert_eq!(p.decisions, vec![("sub".to_owned(), Decision::Start)]);
    assert_eq!(p.outcome, None);
    g.nodes[1].disabled = true;
    let p = plan_states(&g, &states(&[("a", NodeState::Succeeded)]));
    assert_eq!(p.decisions, vec![("sub".to_owned(), Decision::Pass), ("b".to_owned(), Decision::Run)]);

    let refused = |change: fn(&mut Node)| {
        let mut bad = g.clone();
        change(&mut bad.nodes[1]);
        bad.check().expect_err("refused").to_string()
    };
    assert!(refused(|n| n.workflow_id = None).contains("needs the workflowId"));
    assert!(refused(|n| n.job_id = 3).contains("runs no job"));
    assert!(refused(|n| n.retries = 1).contains("no retries"));
    assert!(refused(|n| n.param = Some("x".into())).contains("takes no param"));
    assert!(refused(|n| n.kind = NodeKind::Job).contains("workflowId is for sub-workflow nodes only"));
}
