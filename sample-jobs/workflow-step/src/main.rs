//! A workflow node (docs/workflows.md): reads the instance's context, and outputs the rows of
//! the day it was started for — `{"day": ..., "rows": [1, ..., n], "fire": <its fire key>}` with
//! `n` the parameter (default 3) — for the nodes after it. As one item of a map node (a number
//! n) it outputs `{"item": n, "double": 2n, "fire": <its fire key>}`. Outside a workflow it says
//! so and fails.

use jobwheel_guest_sdk::{log, report, set_output};
use serde_json::{Value, json};

jobwheel_guest_sdk::main!(|ctx| {
    // One item of a map node: a number n, whose output is {"item": n, "double": 2n, "fire": …}.
    if let Some(item) = ctx.workflow_item() {
        let value: Value = serde_json::from_str(item).map_err(|e| format!("the item is not JSON: {e}"))?;
        let n = value.as_i64().ok_or_else(|| format!("the item must be a number, got {value}"))?;
        set_output(&json!({ "item": n, "double": n * 2, "fire": ctx.fire_key() }).to_string());
        report(&format!("item {n}"));
        return Ok(());
    }
    let Some(text) = ctx.workflow_context() else {
        return Err("not a workflow node: no workflow context".to_owned());
    };
    let context: Value = serde_json::from_str(text).map_err(|e| format!("the context is not JSON: {e}"))?;
    let day = context["day"].as_str().unwrap_or("today");
    let n: u64 = match ctx.param().trim() {
        "" => 3,
        p => p.parse().map_err(|_| format!("the parameter must be a row count, got {p:?}"))?,
    };
    log!("context has {:?}", context.as_object().map(|o| o.keys().collect::<Vec<_>>()));
    let rows: Vec<u64> = (1..=n).collect();
    set_output(&json!({ "day": day, "rows": rows, "fire": ctx.fire_key() }).to_string());
    report(&format!("{n} rows for {day}"));
    Ok(())
});
