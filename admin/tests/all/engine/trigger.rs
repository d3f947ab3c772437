//! The trigger path with a fake executor: routing strategy → address, broadcast shards,
//! FAILOVER's probe log in `trigger_msg`, empty address lists, manual overrides, GLUE_WASM.

use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::domain::Priority;
use jobwheel_admin::engine::{EngineError, TriggerOutcome, TriggerRequest, TriggerType};
use jobwheel_admin::store::{JobId, NewWasmVersion};

use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, logs};

const A: &str = "http://a:9999/";
const B: &str = "http://b:9999/";
const C: &str = "http://c:9999/prefix/";

#[tokio::test]
async fn strategies_broadcast_failover_and_empty_lists() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let engine =
        engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let g = group(&*store, "app", &[A, B, C]).await?;
    let add = |strategy: &str| {
        let mut j = job(g, 0);
        j.executor_route_strategy = Some(strategy.into());
        j.trigger_status = 0;
        j
    };

    // FIRST and LAST pick the ends of the list.
    for (strategy, expected) in [("FIRST", A), ("LAST", C)] {
        fake.runs.lock().expect("lock").clear();
        let id = store.add_job(&add(strategy)).await?;
        engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
        assert_eq!(fake.runs()[0].0, expected, "{strategy}");
        let row = &logs(&*store, id).await?[0];
        assert_eq!(row.executor_address.as_deref(), Some(expected));
        assert_eq!(row.executor_sharding_param, None);
        let param = &fake.runs()[0].1;
        assert_eq!((param.log_id, param.log_date_time, param.broadcast_total), (row.id.0, T0, 1));
    }

    // SHARDING_BROADCAST: one log and one run per address, index/total, one trigger time.
    fake.runs.lock().expect("lock").clear();
    let id = store.add_job(&add("SHARDING_BROADCAST")).await?;
    let outcome = engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    assert!(matches!(&outcome, TriggerOutcome::Fired(logs) if logs.len() == 3), "{outcome:?}");
    let runs = fake.runs();
    let shards: Vec<(&str, i32, i32)> =
        runs.iter().map(|(a, p)| (a.as_str(), p.broadcast_index, p.broadcast_total)).collect();
    assert_eq!(shards, vec![(A, 0, 3), (B, 1, 3), (C, 2, 3)]);
    assert!(runs.iter().all(|(_, p)| p.log_date_time == T0));
    let rows = logs(&*store, id).await?;
    let params: Vec<Option<&str>> = rows.iter().map(|r| r.executor_sharding_param.as_deref()).collect();
    assert_eq!(params, vec![Some("0/3"), Some("1/3"), Some("2/3")]);
    assert!(rows[1].trigger_msg.as_deref().unwrap_or_default().contains("分片广播(1/3)"));
    // A retry of shard 1 re-runs only that shard.
    fake.runs.lock().expect("lock").clear();
    engine
        .triggers()
        .trigger(TriggerRequest {
            sharding_param: Some("1/3".to_owned()),
            ..TriggerRequest::new(id, TriggerType::Retry)
        })
        .await?;
    assert_eq!(fake.runs().iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>(), vec![B]);

    // FAILOVER: A's beat fails, B answers; the probe log is in trigger_msg.
    fake.runs.lock().expect("lock").clear();
    fake.kill_beats_of(A);
    let id = store.add_job(&add("FAILOVER")).await?;
    engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    assert_eq!(fake.runs()[0].0, B);
    let msg = logs(&*store, id).await?[0].trigger_msg.clone().unwrap_or_default();
    assert!(
        msg.contains("心跳检测：<br>address：http://a:9999/<br>code：500<br>msg：connection refused"),
        "{msg}"
    );
    assert!(msg.contains("心跳检测：<br>address：http://b:9999/<br>code：200<br>msg：null"), "{msg}");
    assert!(msg.contains("触发调度：<br>address：http://b:9999/<br>code：200"), "{msg}");

    // A failing /run is the trigger code.
    fake.fail_runs_at(A, "job handler [demoJobHandler] not found.");
    let id = store.add_job(&add("FIRST")).await?;
    engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    let row = &logs(&*store, id).await?[0];
    assert_eq!(row.trigger_code, 500);
    assert!(
        row.trigger_msg
            .as_deref()
            .unwrap_or_default()
            .contains("msg：job handler [demoJobHandler] not found.")
    );

    // Empty address list: 500 with upstream's text, no /run.
    let empty = group(&*store, "empty", &[]).await?;
    let mut j = job(empty, 0);
    j.trigger_status = 0;
    let id = store.add_job(&j).await?;
    let before = fake.runs().len();
    engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    let row = &logs(&*store, id).await?[0];
    assert_eq!(row.trigger_code, 500);
    assert!(row.trigger_msg.as_deref().unwrap_or_default().contains("调度失败：执行器地址为空"));
    assert!(row.trigger_msg.as_deref().unwrap_or_default().contains("执行器-地址列表：null"));
    assert_eq!(fake.runs().len(), before);

    // A missing job is reported, not an error.
    assert_eq!(
        engine.triggers().trigger(TriggerRequest::new(JobId(999), TriggerType::Manual)).await?,
        TriggerOutcome::JobMissing
    );
    Ok(())
}

#[tokio::test]
async fn manual_trigger_overrides_param_and_addresses_and_wasm_jobs_carry_their_module() -> anyhow::Result<()>
{
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let engine =
        engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let g = group(&*store, "app", &[A, C]).await?;
    let mut j = job(g, 0);
    j.trigger_status = 0;
    let id = store.add_job(&j).await?;

    // Only the group's own executors may be named (the trigger carries tokens and secrets).
    let stranger = engine.trigger_manual(id, None, Some(vec!["http://elsewhere:9999/".to_owned()])).await;
    assert!(
        matches!(&stranger, Err(EngineError::Refused(msg)) if msg.contains("http://elsewhere:9999/")),
        "{stranger:?}"
    );
    engine.trigger_manual(id, None, Some(vec![C.to_owned()])).await?;
    engine.triggers().wait_idle().await;
    let (address, param) = fake.runs()[0].clone();
    assert_eq!(address, C);
    assert_eq!(param.executor_params, "", "a manual trigger without param sends \"\"");
    let msg = logs(&*store, id).await?[0].trigger_msg.clone().unwrap_or_default();
    assert!(msg.contains("手动触发") && msg.contains("手动录入"), "{msg}");

    let mut wasm = job(g, 0);
    wasm.trigger_status = 0;
    wasm.glue_type = "GLUE_WASM".into();
    let wasm = store.add_job(&wasm).await?;
    // Without an uploaded module the trigger fails before /run.
    engine.triggers().trigger(TriggerRequest::new(wasm, TriggerType::Manual)).await?;
    assert_eq!(logs(&*store, wasm).await?[0].trigger_code, 500);
    let put = store.put_wasm_module(b"\0asm\x01\0\0\0", T0).await?;
    store
        .add_wasm_version(&NewWasmVersion {
            job_id: wasm,
            digest: put.digest.clone(),
            uploader: None,
            remark: None,
            created_at_ms: T0,
            candidate: false,
        })
        .await?;
    engine.triggers().trigger(TriggerRequest::new(wasm, TriggerType::Manual)).await?;
    let module = fake.runs().last().and_then(|(_, p)| p.wasm_module.clone()).expect("wasmModule sent");
    assert_eq!(module.url, format!("api/wasm/{}", put.digest));
    assert_eq!((module.digest, module.size), (put.digest, 8));
    Ok(())
}

/// A job's priority goes out with its trigger (executors with `--max-concurrent-runs` order
/// waiting runs by it); a normal job's trigger has none, as upstream's.
#[tokio::test]
async fn the_trigger_carries_the_jobs_priority() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let engine =
        engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let g = group(&*store, "app", &[A]).await?;
    let mut stopped = job(g, 0);
    stopped.trigger_status = 0;
    let (urgent, plain) = (store.add_job(&stopped).await?, store.add_job(&stopped).await?);
    store.set_job_priority(urgent, Some("HIGH")).await?;
    for id in [urgent, plain] {
        engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    }
    let priorities: Vec<Option<String>> = fake.runs().into_iter().map(|(_, p)| p.priority).collect();
    assert_eq!(priorities, [Some("HIGH".to_owned()), None]);
    store.set_job_priority(urgent, None).await?;
    assert_eq!(store.load_job(urgent).await?.expect("job").priority, Priority::Normal, "cleared");
    db.cleanup().await
}
