//! Advancing one instance, under its row lock: end the fired runs whose every shard is over
//! (output into the context, a retry if the node has attempts left), ask the planner
//! (`workflow::plan`) what runs, is skipped or passes next, insert those runs, and end the
//! instance when every node is over. One transaction, so a crash leaves either all of it or
//! none, and the sweep finds the instance again.

use serde_json::Value;

use super::EngineError;
use super::workflows::{MAX_CONTEXT, MAX_NODE_OUTPUT, Workflows};
use crate::store::{InstanceId, InstanceStatus, NewRun, RunEnd, RunLog, RunRow, RunStatus};
use crate::workflow::{Decision, Graph, node_states, plan};

impl Workflows {
    /// Advances `id` at `now_ms`; the runs it made due now, for the caller to fire.
    pub(super) async fn advance(&self, id: InstanceId, now_ms: i64) -> Result<Vec<RunRow>, EngineError> {
        let Some(mut tx) = self.store.begin_instance(id).await? else { return Ok(Vec::new()) };
        if tx.instance().status != InstanceStatus::Running {
            return Ok(Vec::new());
        }
        let graph = Graph::from_json(&tx.instance().graph).unwrap_or_default();
        let mut context = crate::workflow::context_map(&tx.instance().context);
        let mut runs = tx.runs().await?;
        let fired: Vec<_> =
            runs.iter().filter(|r| r.status == RunStatus::Fired && r.shards > 0).map(|r| r.id).collect();
        let logs = tx.run_logs(&fired).await?;
        let mut new_runs = Vec::new();
        let mut context_changed = false;
        for run in runs.iter_mut().filter(|r| fired.contains(&r.id)) {
            let own: Vec<&RunLog> = logs.iter().filter(|l| l.run_id == run.id).collect();
            if own.len() < usize::try_from(run.shards).unwrap_or(usize::MAX)
                || !own.iter().all(|l| l.is_over())
            {
                continue;
            }
            let mut end = settle(&own, now_ms);
            if end.status == RunStatus::Succeeded
                && let Some(output) = end.output.as_deref()
            {
                let value = serde_json::from_str(output).unwrap_or(Value::Null);
                context.insert(run.node.clone(), value);
                if serde_json::to_vec(&context).map_or(usize::MAX, |bytes| bytes.len()) > MAX_CONTEXT {
                    context.remove(&run.node);
                    end.status = RunStatus::Failed;
                    end.message = Some(format!("the instance context would exceed {MAX_CONTEXT} bytes"));
                } else {
                    context_changed = true;
                }
            }
            if !tx.end_run(run.id, RunStatus::Fired, &end).await? {
                continue;
            }
            run.status = end.status;
            let node = graph.node(&run.node);
            let retries = node.map_or(0, |n| n.retries);
            if end.status == RunStatus::Failed && u32::try_from(run.attempt).unwrap_or(u32::MAX) <= retries {
                let delay = i64::from(node.map_or(0, |n| n.retry_delay_secs)) * 1000;
                new_runs.push(NewRun {
                    node: run.node.clone(),
                    attempt: run.attempt + 1,
                    status: RunStatus::Due,
                    due_ms: now_ms + delay,
                    output: None,
                    message: None,
                });
            }
        }
        let retrying: Vec<String> = new_runs.iter().map(|r| r.node.clone()).collect();
        let states = node_states(&runs, &retrying);
        let planned = plan(&graph, &states);
        for (node, decision) in &planned.decisions {
            let (status, message) = match decision {
                Decision::Run => (RunStatus::Due, None),
                Decision::Skip => {
                    (RunStatus::Skipped, Some("an incoming edge's condition did not hold".to_owned()))
                }
                Decision::Pass => (RunStatus::Passed, Some("disabled".to_owned())),
            };
            new_runs.push(NewRun {
                node: node.clone(),
                attempt: 1,
                status,
                due_ms: now_ms,
                output: None,
                message,
            });
        }
        let ids = tx.insert_runs(&new_runs).await?;
        let instance = tx.instance().clone();
        let context_text = Value::Object(context).to_string();
        let ended = planned.outcome.filter(|_| retrying.is_empty());
        match ended {
            Some(ok) => {
                let status = if ok { InstanceStatus::Succeeded } else { InstanceStatus::Failed };
                tx.set_instance(status, &context_text, instance.start_ms, now_ms).await?;
            }
            None if context_changed => {
                tx.set_instance(InstanceStatus::Running, &context_text, instance.start_ms, 0).await?
            }
            None => {}
        }
        tx.commit().await?;
        if let Some(ok) = ended {
            self.triggers.metrics.workflow_instance_ended(if ok { "succeeded" } else { "failed" });
        }
        Ok(new_runs
            .into_iter()
            .zip(ids)
            .filter(|(r, _)| r.status == RunStatus::Due && r.due_ms <= now_ms)
            .map(|(r, id)| RunRow::due(id, instance.id, r))
            .collect())
    }
}

/// How a fired run ended, from its shards' log rows: succeeded when every shard did. Its
/// output is the one the executor reported with the result, else the executor's message —
/// JSON when it parses as JSON, else a string; a broadcast gives an array of its shards' — and
/// is refused over [`MAX_NODE_OUTPUT`].
fn settle(logs: &[&RunLog], now_ms: i64) -> RunEnd {
    let ok = logs.iter().all(|l| l.succeeded());
    let outputs: Vec<Value> =
        logs.iter().map(|l| output_value(l.output.as_deref().or(l.handle_msg.as_deref()))).collect();
    let output = match outputs.as_slice() {
        [one] => one.clone(),
        many => Value::Array(many.to_vec()),
    };
    let text = output.to_string();
    if text.len() > MAX_NODE_OUTPUT {
        let message =
            format!("the node's output is {} bytes, over the limit of {MAX_NODE_OUTPUT}", text.len());
        return RunEnd { status: RunStatus::Failed, output: None, message: Some(message), end_ms: now_ms };
    }
    // A failure says why: the first failed shard's message, or its trigger's code when the
    // trigger itself failed (the run page and the workflow's alarm show it).
    let message = logs.iter().find(|l| !l.succeeded()).map(|l| match l.handle_msg.as_deref() {
        Some(msg) if !msg.trim().is_empty() => msg.to_owned(),
        _ if l.handle_code == 0 => format!("the trigger failed (code {})", l.trigger_code),
        _ => format!("the run failed (code {})", l.handle_code),
    });
    RunEnd {
        status: if ok { RunStatus::Succeeded } else { RunStatus::Failed },
        output: Some(text),
        message,
        end_ms: now_ms,
    }
}

fn output_value(message: Option<&str>) -> Value {
    match message.map(str::trim) {
        None | Some("") => Value::Null,
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
    }
}
