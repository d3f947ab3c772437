//! Map nodes (docs/workflows.md, "Map over data"): a `MAP` node runs its job once per item of an
//! array in the context and waits (its run `WAITING`) until every item is over.
//!
//! - **Start**: the items are read from the context (`workflow::map::items_at`) and stored, one
//!   row each, in the transaction that inserts the waiting run — a crash leaves both or neither.
//! - **Steps**, each under the instance's row lock (a result arriving, the sweep): fired items
//!   whose attempt is over end (or, with retries left, are due again after the node's delay), then
//!   due items are taken into the free slots up to the node's `parallelism`, each `DUE → FIRED`
//!   with its log row — so an item's attempt is fired once however many admins step the run.
//!   Only the fired items (at most the parallelism) are read; a step costs the same at 100 or
//!   100 000 items.
//! - **End**: when no item is due or running, the run ends — failed if an item failed (naming
//!   the first), else succeeded with the items' outputs in item order (or their counts when the
//!   node does not collect), which join the context for the nodes after it (the reduce step).

use std::sync::Arc;

use serde_json::Value;

use super::EngineError;
use super::fire::{NodeFire, TriggerRequest, to_datetime};
use super::instance_context::InstanceContext;
use crate::domain::TriggerType;
use crate::store::{
    InstanceId, InstanceTx, JobId, NewLog, NewRun, RunEnd, RunId, RunRow, RunStatus, TakenItem,
};
use crate::workflow::map::{collected_output, collects, counted_output, item_param, items_at, parallelism};
use crate::workflow::schema::mismatch;
use crate::workflow::{Graph, MAX_CONTEXT, Node, NodeKind, settle};

/// What the map runs of one advance did.
#[derive(Default)]
pub(super) struct MapsStep {
    /// Item triggers to send once the advance committed.
    pub(super) triggers: Vec<(RunId, TriggerRequest)>,
    /// A map run started by this advance ended (or could not start): plan again.
    pub(super) again: bool,
}

/// Steps every waiting map run in `runs` (ending those that are over: their status is updated
/// in `runs`, their output joined into the context).
pub(super) async fn step_maps(
    tx: &mut dyn InstanceTx,
    graph: &Graph,
    runs: &mut [RunRow],
    context: &mut InstanceContext,
    now_ms: i64,
) -> Result<Vec<(RunId, TriggerRequest)>, EngineError> {
    let instance = tx.instance().id;
    let mut triggers = Vec::new();
    for run in runs.iter_mut().filter(|r| r.status == RunStatus::Waiting) {
        let Some(node) = graph.node(&run.node).filter(|n| n.kind == NodeKind::Map) else { continue };
        let step = step_map(tx, node, run.id, now_ms).await?;
        triggers.extend(step.fires.iter().map(|fire| (run.id, item_request(node, instance, fire))));
        if let Some(end) = step.end
            && let Some(status) = finish(tx, run.id, end, run.node.as_str(), context).await?
        {
            run.status = status;
        }
    }
    Ok(triggers)
}

/// Starts the map runs this advance just inserted waiting (`new`, with their ids) and takes
/// their first items.
pub(super) async fn start_maps(
    tx: &mut dyn InstanceTx,
    graph: &Graph,
    new: &[(&NewRun, RunId)],
    context: &mut InstanceContext,
    now_ms: i64,
) -> Result<MapsStep, EngineError> {
    let instance = tx.instance().id;
    let mut out = MapsStep::default();
    for (run, id) in new.iter().filter(|(r, _)| r.status == RunStatus::Waiting) {
        let Some(node) = graph.node(&run.node).filter(|n| n.kind == NodeKind::Map) else { continue };
        let input = context.map(tx).await?;
        if let Err(why) = start_map(tx, node, *id, input, now_ms).await? {
            let end = failed(format!("the map did not start: {why}"), now_ms);
            tx.end_run(*id, RunStatus::Waiting, &end).await?;
            out.again = true;
            continue;
        }
        let step = step_map(tx, node, *id, now_ms).await?;
        out.triggers.extend(step.fires.iter().map(|fire| (*id, item_request(node, instance, fire))));
        if let Some(end) = step.end {
            finish(tx, *id, end, &run.node, context).await?;
            out.again = true;
        }
    }
    Ok(out)
}

/// Ends waiting map run `run` as `end` says, its output joined into the context first (a
/// context that would pass its limit fails the run instead); the state it ended in, if it was
/// still waiting.
async fn finish(
    tx: &mut dyn InstanceTx,
    run: RunId,
    mut end: RunEnd,
    node: &str,
    context: &mut InstanceContext,
) -> Result<Option<RunStatus>, EngineError> {
    if end.status == RunStatus::Succeeded {
        let value = serde_json::from_str(end.output.as_deref().unwrap_or("null")).unwrap_or(Value::Null);
        if !context.join(tx, node, value).await? {
            end = failed(format!("the instance context would exceed {MAX_CONTEXT} bytes"), end.end_ms);
        }
    }
    Ok(tx.end_run(run, RunStatus::Waiting, &end).await?.then_some(end.status))
}

/// An item taken to fire, for the runner to send once the step's transaction committed.
#[derive(Debug, Clone)]
pub(super) struct ItemFire {
    /// The map run.
    pub(super) run: RunId,
    /// The item, its attempt and log row.
    pub(super) item: TakenItem,
}

/// What one step of a map run did.
#[derive(Debug, Default)]
pub(super) struct MapStep {
    /// Items taken to fire.
    pub(super) fires: Vec<ItemFire>,
    /// How the run ended, if it did (the caller ends it, joining its output to the context).
    pub(super) end: Option<RunEnd>,
}

/// Stores the items of map `node`'s run `run` (just inserted waiting) from `context`: how many,
/// or why it cannot start (the caller fails the run with that message).
async fn start_map(
    tx: &mut dyn InstanceTx,
    node: &Node,
    run: RunId,
    context: &serde_json::Map<String, Value>,
    now_ms: i64,
) -> Result<Result<usize, String>, EngineError> {
    if let Some(schema) = &node.input_schema
        && let Some(why) = mismatch(schema, &Value::Object(context.clone()))
    {
        return Ok(Err(format!("the input does not match the node's inputSchema {why}")));
    }
    let items = match items_at(context, node.items.as_deref().unwrap_or_default()) {
        Ok(items) => items,
        Err(why) => return Ok(Err(why)),
    };
    tx.insert_items(run, &items, now_ms).await?;
    Ok(Ok(items.len()))
}

/// One step of map `node`'s waiting run `run`: settles, fires, and ends it when nothing is left.
async fn step_map(
    tx: &mut dyn InstanceTx,
    node: &Node,
    run: RunId,
    now_ms: i64,
) -> Result<MapStep, EngineError> {
    let mut running = 0u32;
    let (mut ends, mut retries) = (Vec::new(), Vec::new());
    for item in tx.fired_items(run).await? {
        let log = item.as_run_log(run);
        if !log.is_over() {
            running += 1;
            continue;
        }
        let mut end = settle(&[&log], now_ms);
        if end.status == RunStatus::Succeeded
            && let Some(schema) = &node.output_schema
        {
            let value = serde_json::from_str(end.output.as_deref().unwrap_or("null")).unwrap_or(Value::Null);
            if let Some(why) = mismatch(schema, &value) {
                end.status = RunStatus::Failed;
                end.message = Some(format!("the output does not match the node's outputSchema {why}"));
            }
        }
        if end.status == RunStatus::Failed && u32::try_from(item.attempt).unwrap_or(u32::MAX) <= node.retries
        {
            retries.push(item.id);
        } else {
            ends.push((item.id, end));
        }
    }
    if !retries.is_empty() {
        tx.retry_items(&retries, now_ms + i64::from(node.retry_delay_secs) * 1000).await?;
    }
    if !ends.is_empty() {
        tx.end_items(&ends).await?;
    }
    let free = parallelism(node).saturating_sub(running);
    let mut step = MapStep::default();
    if free > 0 {
        let job = JobId(node.job_id);
        let Some(group) = tx.job_group(job).await? else {
            // The job is gone: nothing more can run; what runs is left to end on its own.
            tx.stop_items(run, now_ms).await?;
            step.end = Some(failed(format!("job {} does not exist", node.job_id), now_ms));
            return Ok(step);
        };
        let log = NewLog { job_group: group, job_id: job, trigger_time: to_datetime(now_ms) };
        let taken = tx.take_items(run, free, &log, now_ms).await?;
        step.fires = taken.into_iter().map(|item| ItemFire { run, item }).collect();
    }
    if running == 0 && step.fires.is_empty() && !tx.items_left(run).await? {
        step.end = Some(end_map(tx, node, run, now_ms).await?);
    }
    Ok(step)
}

/// How a map run whose items are all over ends.
async fn end_map(
    tx: &mut dyn InstanceTx,
    node: &Node,
    run: RunId,
    now_ms: i64,
) -> Result<RunEnd, EngineError> {
    let tally = tx.item_tally(run).await?;
    if let Some((idx, message)) = tally.first_failure {
        let why = message.unwrap_or_else(|| "no message".to_owned());
        let message =
            format!("{} of {} items failed; the first, item {idx}: {why}", tally.failed, tally.total);
        return Ok(failed(message, now_ms));
    }
    let output = if collects(node) {
        let outputs = tx.item_outputs(run).await?;
        match collected_output(outputs, MAX_CONTEXT) {
            Some(text) => text,
            None => {
                return Ok(failed(
                    format!(
                        "the {} items' outputs together pass the context limit of {MAX_CONTEXT} bytes: \
                         have the items report less, or set collect to false",
                        tally.total
                    ),
                    now_ms,
                ));
            }
        }
    } else {
        let total = usize::try_from(tally.total).unwrap_or(0);
        counted_output(total, 0).to_string()
    };
    let message = format!("{} items succeeded", tally.total);
    Ok(RunEnd { status: RunStatus::Succeeded, output: Some(output), message: Some(message), end_ms: now_ms })
}

fn failed(message: String, now_ms: i64) -> RunEnd {
    RunEnd { status: RunStatus::Failed, output: None, message: Some(message), end_ms: now_ms }
}

/// The trigger of one item: the node's parameter (else the item itself, what an upstream
/// executor's job reads), the item as `workflowItem`, no context (it holds every item; what all
/// items need goes into the node's `param`), the node's timeout as the executor timeout, no
/// job-level retries (the node's are per item), and the log row taken with it.
fn item_request(node: &Node, instance: InstanceId, fire: &ItemFire) -> TriggerRequest {
    let item = &fire.item;
    let value = serde_json::from_str(&item.item).unwrap_or(Value::Null);
    TriggerRequest {
        fail_retry_count: Some(0),
        executor_param: Some(node.param.clone().unwrap_or_else(|| item_param(&item.item))),
        workflow_item: Some(Arc::new(value)),
        executor_timeout: (node.timeout_secs > 0)
            .then(|| i32::try_from(node.timeout_secs).unwrap_or(i32::MAX)),
        node: Some(NodeFire {
            instance,
            node: node.name.clone(),
            run: fire.run,
            item: Some((item.idx, item.attempt)),
        }),
        delivery: node.delivery,
        staged_log: Some(item.log_id),
        ..TriggerRequest::new(JobId(node.job_id), TriggerType::Workflow)
    }
}
