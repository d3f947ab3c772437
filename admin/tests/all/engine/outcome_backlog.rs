//! The outcome backlog (`engine/pool.rs`): when the database stops taking trigger outcomes,
//! the admin stops sending after `outcome_backlog` unwritten ones instead of sending on and
//! holding every outcome in memory; once the database takes them again, every trigger is sent
//! once and recorded.
//!
//! The database falls behind for real: PostgreSQL row locks. The executor locks each log row
//! it is sent (`SELECT … FOR UPDATE` in a transaction the test holds open) before it answers,
//! so the admin's outcome `UPDATE` of that row waits in PostgreSQL until the test commits,
//! while inserting the rows of new triggers is not blocked at all.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::executor_client::{ExecutorApi, ExecutorReply, LogReply};
use jobwheel_admin::protocol::{LogParam, TriggerParam};
use jobwheel_admin::routing::{Probe, ProbeResult};
use sqlx::{PgPool, Postgres, Transaction};

use crate::engine::support::{Db, FakeExecutor, T0, engine_configured, group, job, logs, wait_for};

const A: &str = "http://a:9999/";
const BACKLOG: usize = 5;
const TRIGGERS: usize = 30;

/// The fake executor, locking the log row of every `/run` while a transaction is open.
struct RowLocking {
    inner: FakeExecutor,
    tx: tokio::sync::Mutex<Option<Transaction<'static, Postgres>>>,
}

#[async_trait]
impl Probe for RowLocking {
    async fn beat(&self, address: &str) -> ProbeResult {
        self.inner.beat(address).await
    }

    async fn idle_beat(&self, address: &str, job_id: i32) -> ProbeResult {
        self.inner.idle_beat(address, job_id).await
    }
}

#[async_trait]
impl ExecutorApi for RowLocking {
    async fn run(&self, address: &str, param: &TriggerParam) -> ExecutorReply {
        if let Some(tx) = self.tx.lock().await.as_mut() {
            sqlx::query("SELECT id FROM xxl_job_log WHERE id = $1 FOR UPDATE")
                .bind(param.log_id)
                .execute(&mut **tx)
                .await
                .expect("lock the log row");
        }
        self.inner.run(address, param).await
    }

    async fn kill(&self, address: &str, job_id: i32) -> ExecutorReply {
        self.inner.kill(address, job_id).await
    }

    async fn log(&self, address: &str, param: &LogParam) -> LogReply {
        self.inner.log(address, param).await
    }
}

#[tokio::test]
async fn the_admin_stops_sending_while_its_database_does_not_take_outcomes() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, async |db| {
        let store = db.connect().await?;
        let side = PgPool::connect(&db.url).await?;
        let executor =
            Arc::new(RowLocking { inner: FakeExecutor::default(), tx: tokio::sync::Mutex::new(None) });
        let engine = engine_configured(
            store.clone(),
            executor.clone(),
            Arc::new(ManualClock::new(T0)),
            UpstreamAlarms::default(),
            |config| config.outcome_backlog = BACKLOG,
        );
        let g = group(&*store, "app", &[A]).await?;
        let mut stopped = job(g, 0);
        stopped.trigger_status = 0;
        let id = store.add_job(&stopped).await?;

        // A step that fails returns here first: the row locks must go before `Db::run` drops
        // the schema, or the drop waits for them forever and the failure never shows.
        let checked = async {
            let mut tx = side.begin().await?;
            let (locker,): (i32,) = sqlx::query_as("SELECT pg_backend_pid()").fetch_one(&mut *tx).await?;
            *executor.tx.lock().await = Some(tx);
            for _ in 0..TRIGGERS {
                engine.trigger_manual(id, None, None).await?;
            }

            // The admin is blocked writing outcomes, in PostgreSQL itself ...
            wait_for(
                Duration::from_secs(20),
                "an outcome write waiting for the executor's row locks",
                || {
                    let side = side.clone();
                    async move {
                        let (waiting,): (i64,) = sqlx::query_as(
                            "SELECT count(*) FROM pg_stat_activity \
                         WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE '%xxl_job_log%'",
                        )
                        .bind(locker)
                        .fetch_one(&side)
                        .await?;
                        Ok((waiting > 0).then_some(()))
                    }
                },
            )
            .await?;
            // ... with exactly the backlog sent, and the rest waiting for the pool, unsent. A
            // trigger holds its outcome place from before its send (the fake executor locks the
            // row first, one send at a time), so the sends are waited for too: with 25 waiting,
            // no more than the backlog can ever reach the executor.
            wait_for(Duration::from_secs(20), "the pools to stop at the backlog", || {
                let (runs, unwritten, waiting) = (
                    executor.inner.runs().len(),
                    engine.triggers().unrecorded(),
                    engine.triggers().pool_waiting(),
                );
                let stopped = unwritten == BACKLOG && waiting == (TRIGGERS - BACKLOG, 0) && runs >= BACKLOG;
                async move { Ok(stopped.then_some(runs)) }
            })
            .await
            .and_then(|runs| {
                anyhow::ensure!(runs == BACKLOG, "{runs} triggers sent with {BACKLOG} outcomes unwritten");
                Ok(())
            })?;
            assert_eq!(logs(&*store, id).await?.len(), BACKLOG, "the waiting triggers wrote nothing yet");

            // The database takes outcomes again: everything is sent once and recorded.
            if let Some(tx) = executor.tx.lock().await.take() {
                tx.commit().await?;
            }
            let rows = wait_for(Duration::from_secs(30), "every trigger recorded", || {
                let store = store.clone();
                async move {
                    let rows = logs(&*store, id).await?;
                    let done = rows.len() == TRIGGERS && rows.iter().all(|r| r.trigger_code == 200);
                    Ok(done.then_some(rows))
                }
            })
            .await?;
            let sent: HashSet<i64> = executor.inner.runs().iter().map(|(_, p)| p.log_id).collect();
            assert_eq!(executor.inner.runs().len(), TRIGGERS, "each trigger sent once");
            assert_eq!(sent, rows.iter().map(|r| r.id.0).collect::<HashSet<_>>());
            anyhow::Ok(())
        }
        .await;
        if let Some(tx) = executor.tx.lock().await.take() {
            tx.rollback().await?;
        }
        checked?;
        engine.triggers().wait_idle().await;
        assert_eq!((engine.triggers().unrecorded(), engine.triggers().pool_waiting()), (0, (0, 0)));
        side.close().await;
        Ok(())
    })
    .await
}
