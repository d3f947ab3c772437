//! Migration 0033 on each database: an instance stored before it, as `RERUN of 12` in its
//! trigger type, reads back as a `RERUN` of instance 12 once the migration's conversion has run,
//! and the API's text (`started_by`) is what it was. The conversion is the migration file's own
//! `UPDATE`, run on a row written as an older admin wrote it.

use jobwheel_admin::domain::TriggerType;
use jobwheel_admin::store::{self, InstanceId};

use super::migration::{Kind, on_fresh, raw, statement};

const OLD_ROWS: &str = "INSERT INTO jobwheel_workflow_instance \
    (id, workflow_id, status, trigger_type, fire_time_ms, graph, context) VALUES \
    (4242, 7, 3, 'RERUN of 12', 1000, '{}', '{}'), (4243, 7, 2, 'MANUAL', 1000, '{}', '{}')";

/// Checks both rows through the store, after `convert` ran the conversion on the old rows.
async fn check(url: &str) -> anyhow::Result<()> {
    let store = store::connect(url).await?;
    let rerun = store.load_instance(InstanceId(4242)).await?.expect("the old rerun");
    anyhow::ensure!(rerun.trigger_type.is(TriggerType::Rerun), "{:?}", rerun.trigger_type);
    anyhow::ensure!(rerun.rerun_of == Some(InstanceId(12)), "{:?}", rerun.rerun_of);
    anyhow::ensure!(rerun.started_by() == "RERUN of 12", "{}", rerun.started_by());
    let manual = store.load_instance(InstanceId(4243)).await?.expect("the manual start");
    anyhow::ensure!(manual.trigger_type.is(TriggerType::Manual) && manual.rerun_of.is_none(), "{manual:?}");
    anyhow::ensure!(manual.started_by() == "MANUAL");
    Ok(())
}

/// The old rows, then the migration file's `UPDATE` (its `ALTER` has run already), then the check.
async fn convert(kind: Kind, migration: &str) -> anyhow::Result<()> {
    on_fresh(kind, async |url| {
        raw(kind, url, OLD_ROWS).await?;
        raw(kind, url, statement(migration, "UPDATE")).await?;
        check(url).await
    })
    .await
}

#[tokio::test]
async fn an_old_rerun_reads_as_a_rerun_of_its_instance_on_sqlite() -> anyhow::Result<()> {
    convert(Kind::Sqlite, include_str!("../../../migrations/sqlite/0033_instance_rerun_of.sql")).await
}

#[tokio::test]
async fn an_old_rerun_reads_as_a_rerun_of_its_instance_on_postgres() -> anyhow::Result<()> {
    convert(Kind::Postgres, include_str!("../../../migrations/postgres/0033_instance_rerun_of.sql")).await
}

#[tokio::test]
async fn an_old_rerun_reads_as_a_rerun_of_its_instance_on_mysql() -> anyhow::Result<()> {
    convert(Kind::Mysql, include_str!("../../../migrations/mysql/0033_instance_rerun_of.sql")).await
}
