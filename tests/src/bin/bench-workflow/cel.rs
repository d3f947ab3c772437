//! `bench-workflow --cel`: what a condition on data costs at the context size limit
//! (docs/benchmarks.md, "Conditions on data"). A context of just under 1 MiB (rows of records
//! under one node's output, as an extract step would hand on) is parsed once, as an advance does,
//! and each expression is checked as when saved and evaluated as an edge's `if` many times (the
//! data read in place, as the planner does); the report is per evaluation (p50, p99, max).

use std::time::Instant;

use anyhow::{Context as _, ensure};
use jobwheel_admin::workflow::{MAX_CONTEXT, expr};
use serde_json::json;

/// Expressions as edges carry them: a field, a size, a macro over every row, string work.
const EXPRESSIONS: [&str; 4] = [
    "output.rows > 0",
    "size(context.extract.records) > 1000 && parent.state == 'SUCCEEDED'",
    "context.extract.records.exists(r, r.amount > 999999)",
    "context.extract.records.filter(r, r.region == 'eu' && r.name.startsWith('n-1')).size() > 10",
];
/// Evaluations per expression.
const ROUNDS: usize = 200;

#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) fn run() -> anyhow::Result<()> {
    let mut records = Vec::new();
    let mut context = serde_json::Map::new();
    loop {
        let n = records.len();
        records.push(json!({"id": n, "name": format!("n-{n}"), "region": if n % 3 == 0 { "eu" } else { "us" }, "amount": n * 7}));
        if records.len() % 500 == 0 {
            context.insert("extract".into(), json!({"records": records, "rows": records.len()}));
            if serde_json::to_vec(&context)?.len() > MAX_CONTEXT - 4096 {
                break;
            }
        }
    }
    // Just past the limit: cut the rows back to just under it.
    let mut bytes = serde_json::to_vec(&context)?.len();
    while bytes > MAX_CONTEXT {
        let keep = records.len() - (bytes - MAX_CONTEXT) / 60 - 1;
        records.truncate(keep);
        context.insert("extract".into(), json!({"records": records, "rows": records.len()}));
        bytes = serde_json::to_vec(&context)?.len();
    }
    ensure!(bytes > MAX_CONTEXT - 16 * 1024, "the context is only {bytes} bytes");
    let output = &context["extract"];
    println!("context: {bytes} bytes, {} records", records.len());
    let inputs = expr::Inputs { context: &context, parent: "extract", state: "SUCCEEDED" };
    for text in EXPRESSIONS {
        let checked = expr::check(text).map_err(|e| anyhow::anyhow!("{text}: {e}"))?;
        let mut times = Vec::with_capacity(ROUNDS);
        let mut answer = None;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            answer = Some(checked.holds(&inputs, output).map_err(|e| anyhow::anyhow!("{text}: {e}"))?);
            times.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        let at = |p: f64| times[((p / 100.0) * times.len() as f64).ceil() as usize - 1];
        println!(
            "  {text:?} = {} ({}): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            answer.context("evaluated")?,
            if checked.is_direct() { "direct" } else { "cel" },
            at(50.0),
            at(99.0),
            at(100.0)
        );
    }
    Ok(())
}
