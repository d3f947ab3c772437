//! Migration 0034 on each database: the alarm states of workflow instances go, and instances
//! whose alarm was already raised (2 sent, 3 not) and that ended within the ten minutes a
//! starting sweep looks back are recorded under their new event keys, so no sweep raises them
//! again; a waiting one (1) is left to the sweep, and older ends are left alone. The statement
//! is the migration file's own `INSERT`, run on rows as an older admin wrote them (the dropped
//! column put back for them).

use jobwheel_admin::store;

use super::migration::{Kind, on_fresh, raw, statement};

const OLD_ROWS: &str =
    "ALTER TABLE jobwheel_workflow_instance ADD COLUMN alarm_status INT NOT NULL DEFAULT 0;
    INSERT INTO jobwheel_workflow_instance
    (id, workflow_id, status, trigger_type, fire_time_ms, end_ms, graph, context, alarm_status) VALUES
    (5001, 7, 3, 'CRON', 1000, 10000000, '{}', '{}', 2),
    (5002, 7, 5, 'MISFIRE', 1000, 9900000, '{}', '{}', 3),
    (5003, 7, 3, 'CRON', 1000, 10000000, '{}', '{}', 1),
    (5004, 7, 3, 'CRON', 1000, 9000000, '{}', '{}', 2),
    (5005, 7, 2, 'CRON', 1000, 10000000, '{}', '{}', 0);";

async fn record(kind: Kind, migration: &str) -> anyhow::Result<()> {
    on_fresh(kind, async |url| {
        raw(kind, url, OLD_ROWS).await?;
        raw(kind, url, statement(migration, "INSERT INTO jobwheel_alarm_event")).await?;
        let store = store::connect(url).await?;
        for (key, recorded) in [
            ("WORKFLOW_FAILED:instance:5001:10000000", true),
            ("WORKFLOW_MISSED:instance:5002:9900000", true),
            ("WORKFLOW_FAILED:instance:5003:10000000", false),
            ("WORKFLOW_FAILED:instance:5004:9000000", false),
            ("WORKFLOW_FAILED:instance:5005:10000000", false),
        ] {
            anyhow::ensure!(store.event_recorded(key).await? == recorded, "{key}: recorded {}", !recorded);
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn raised_instance_alarms_keep_their_record_on_sqlite() -> anyhow::Result<()> {
    record(Kind::Sqlite, include_str!("../../../migrations/sqlite/0034_instance_alarm_by_end.sql")).await
}

#[tokio::test]
async fn raised_instance_alarms_keep_their_record_on_postgres() -> anyhow::Result<()> {
    record(Kind::Postgres, include_str!("../../../migrations/postgres/0034_instance_alarm_by_end.sql")).await
}

#[tokio::test]
async fn raised_instance_alarms_keep_their_record_on_mysql() -> anyhow::Result<()> {
    record(Kind::Mysql, include_str!("../../../migrations/mysql/0034_instance_alarm_by_end.sql")).await
}
