//! Triggers fire with the job row their pre-read read, unless a job was edited since (the job
//! epoch, `0028_job_epoch`): an edit through any jobwheel admin between a pre-read and the
//! second applies to that second's run, a job deleted meanwhile does not run, and a row changed
//! behind the admins' backs (as an upstream admin sharing the database would) is not re-read —
//! which is what shows the pre-read's row is what fires. SQLite, PostgreSQL and MariaDB.

use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::ring_second;
use jobwheel_admin::store::JobId;

use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, load, logs};

#[tokio::test]
async fn sqlite_a_trigger_fires_the_edited_job_and_only_then_reads_it_again() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), edits).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_trigger_fires_the_edited_job_and_only_then_reads_it_again() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, edits).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_trigger_fires_the_edited_job_and_only_then_reads_it_again() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, edits).await
}

async fn edits(db: &Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    // Another admin's connection: its edits reach this admin only through the database.
    let other = db.connect().await?;
    let (fake, clock) = (Arc::new(FakeExecutor::default()), Arc::new(ManualClock::new(T0)));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut every_ten = job(g, T0 + 3000);
    every_ten.schedule_conf = Some("0/10 * * * * ?".to_owned());
    every_ten.executor_param = Some("as read".to_owned());
    let edited = store.add_job(&every_ten).await?;
    let behind_the_back = store.add_job(&every_ten).await?;
    let deleted = store.add_job(&every_ten).await?;

    // The pre-read claims all three for T0 + 3000 and keeps their rows.
    assert_eq!(engine.scheduler().schedule_cycle(T0).await?.fires.len(), 3);
    let mut changed = load(&*other, edited).await?;
    changed.executor_param = Some("edited".to_owned());
    assert!(other.update_job(edited, &changed).await?);
    set_param_in_sql(&db.url, behind_the_back, "changed in SQL").await?;
    assert!(other.delete_job(deleted).await?);

    clock.set(T0 + 3000);
    engine.scheduler().drain_ring(ring_second(T0 + 3000));
    engine.triggers().wait_idle().await;
    let params = |job: JobId| -> Vec<String> {
        fake.runs().into_iter().filter(|(_, r)| r.job_id == job.0).map(|(_, r)| r.executor_params).collect()
    };
    assert_eq!(params(edited), ["edited"], "an edit through another admin applies to the next run");
    // The epoch moved (the edit and the delete), so this second read every job again.
    assert_eq!(params(behind_the_back), ["changed in SQL"]);
    assert!(params(deleted).is_empty(), "a deleted job does not run");
    assert!(logs(&*store, deleted).await?.is_empty());

    // Nothing edited through an admin since the next pre-read: a change made in SQL alone is
    // not read, the pre-read's row fires (an upstream admin's edits apply one pre-read later).
    assert_eq!(engine.scheduler().schedule_cycle(T0 + 9000).await?.fires.len(), 2);
    set_param_in_sql(&db.url, behind_the_back, "changed in SQL again").await?;
    clock.set(T0 + 10_000);
    engine.scheduler().drain_ring(ring_second(T0 + 10_000));
    engine.triggers().wait_idle().await;
    assert_eq!(params(behind_the_back), ["changed in SQL", "changed in SQL"], "the pre-read's row fired");
    assert_eq!(params(edited), ["edited", "edited"]);
    Ok(())
}

/// Changes a job's parameter without going through a jobwheel store, as an upstream admin on
/// the same database would.
async fn set_param_in_sql(url: &str, job: JobId, param: &str) -> anyhow::Result<()> {
    let sql = format!("UPDATE xxl_job_info SET executor_param = '{param}' WHERE id = {}", job.0);
    let changed = jobwheel_tests::databases::execute_sql(url, sql).await?;
    anyhow::ensure!(changed == 1, "job {job} not changed");
    Ok(())
}
