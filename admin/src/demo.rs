//! `--demo-job`: a ready-to-trigger sample for a newcomer's first run (`scripts/run.sh`).
//!
//! On a database with no executor groups and no jobs it creates the group the bundled executor
//! registers into and a `GLUE_WASM` job running the given module, so the first thing a new user
//! sees in the UI is a job they can trigger. On any other database it does nothing: it never
//! touches an operator's data.

use std::path::Path;

use crate::domain::{BlockStrategy, ExecutorRouteStrategy, GlueType, MisfireStrategy, ScheduleType};
use anyhow::Context as _;
use chrono::Utc;

use crate::store::{Group, Job, JobFilter, NewWasmVersion, Page, Store};
use crate::wasm_check;

/// The executor group (and app name) `scripts/run.sh`'s executor registers with.
pub const DEMO_APP_NAME: &str = "jobwheel-executor";

/// Creates the sample group and job if the database is empty; `Ok(false)` if it was not.
pub async fn seed(store: &dyn Store, module: &Path) -> anyhow::Result<bool> {
    let jobs = store.page_jobs(&JobFilter::default(), Page { offset: 0, limit: 1 }).await?;
    if jobs.total > 0 || !store.list_groups().await?.is_empty() {
        return Ok(false);
    }
    let bytes =
        std::fs::read(module).with_context(|| format!("cannot read --demo-job {}", module.display()))?;
    let info = wasm_check::inspect(&bytes).with_context(|| format!("--demo-job {}", module.display()))?;
    let now = Utc::now();
    let group = store
        .add_group(&Group {
            app_name: DEMO_APP_NAME.to_owned(),
            title: "Sample executor".to_owned(),
            address_type: 0,
            address_list: None,
            update_time: Some(now),
        })
        .await?;
    let job = store
        .add_job(&Job {
            job_group: group,
            job_desc: "Hello (Wasm sample)".to_owned(),
            add_time: Some(now),
            update_time: Some(now),
            author: Some("jobwheel".to_owned()),
            alarm_email: None,
            schedule_type: ScheduleType::None.into(),
            schedule_conf: None,
            misfire_strategy: MisfireStrategy::DoNothing.into(),
            executor_route_strategy: Some(ExecutorRouteStrategy::First.into()),
            executor_handler: None,
            executor_param: Some("world".to_owned()),
            executor_block_strategy: Some(BlockStrategy::SerialExecution.into()),
            executor_timeout: 10,
            executor_fail_retry_count: 0,
            glue_type: GlueType::GlueWasm.into(),
            glue_source: None,
            glue_remark: Some("sample".to_owned()),
            glue_updatetime: Some(now),
            child_jobid: None,
            trigger_status: 0,
            trigger_last_time: 0,
            trigger_next_time: 0,
        })
        .await?;
    store.put_wasm_module(&bytes, now.timestamp_millis()).await?;
    store
        .add_wasm_version(&NewWasmVersion {
            job_id: job,
            digest: info.digest,
            uploader: Some("jobwheel".to_owned()),
            remark: Some("sample job (sample-jobs/hello)".to_owned()),
            created_at_ms: now.timestamp_millis(),
            candidate: false,
        })
        .await?;
    Ok(true)
}
