//! `demoJobHandler` and `shardingJobHandler`: small handlers for trying an executor out.

use crate::handler::{JobContext, JobResult};

/// Logs a greeting with its parameter and succeeds with the parameter as message. As a
/// workflow node it also shows the `JobContext` workflow API: it logs the context it was
/// handed and outputs `{"hello": <param>, "inputs": <the context's keys>}`.
pub(super) async fn demo(ctx: JobContext) -> JobResult {
    ctx.log("XXL-JOB, Hello World.");
    ctx.log(format!("param: {}", ctx.param()));
    if !ctx.param().is_empty() {
        ctx.handle_success(format!("hello, {}", ctx.param()));
    }
    if let Some(context) = ctx.workflow_context() {
        ctx.log(format!("workflow context: {context}"));
        let inputs: Vec<&String> = context.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        ctx.set_output(&serde_json::json!({ "hello": ctx.param(), "inputs": inputs }));
    }
    if let Some(item) = ctx.workflow_item() {
        ctx.log(format!("workflow item: {item}"));
        ctx.set_output(&serde_json::json!({ "hello": ctx.param(), "item": item }));
    }
    Ok(())
}

/// Logs its shard and which of the items `0..N` (N = the parameter, default 10) it owns.
pub(super) async fn sharding(ctx: JobContext) -> JobResult {
    let (index, total) = (ctx.shard_index(), ctx.shard_total().max(1));
    ctx.log(format!("sharding: index = {index}, total = {total}"));
    let items: u32 = match ctx.param().trim() {
        "" => 10,
        p => p.parse().map_err(|_| anyhow::anyhow!("parameter must be an item count, got {p:?}"))?,
    };
    let mine: Vec<String> = (0..items)
        .filter(|i| i64::from(*i) % i64::from(total) == i64::from(index))
        .map(|i| i.to_string())
        .collect();
    ctx.log(format!("processing items [{}]", mine.join(",")));
    ctx.handle_success(format!("shard {index}/{total} processed {} items", mine.len()));
    Ok(())
}
