//! The move from xxl-job with both admins on one database for a while: an upstream admin's
//! scheduler — played here with its own statements and rules (3.4.2's `JobScheduleHelper` and
//! `XxlJobInfoMapper.xml`: `schedule_lock` `FOR UPDATE`, the five-second pre-read, one
//! `scheduleUpdate` per job, commit) — and a jobwheel admin schedule the same job on one MariaDB
//! database: the upstream admin joins while jobwheel runs, then leaves. Every second of the job
//! fires exactly once between the two, none twice and none lost. (No JVM runs here: upstream's
//! scheduler is replayed statement for statement, without its trigger pools.)

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::ensure;
use jobwheel_admin::engine::is_missed_fire;
use jobwheel_tests::databases::{FreshDatabase, Server};
use sqlx::{MySqlPool, Row as _};

use super::Env;
use super::recording_executor::RecordingExecutor;
use crate::http::eventually;

/// Upstream's `PRE_READ_MS`.
const PRE_READ_MS: i64 = 5_000;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// One cycle of upstream's schedule thread for FIX_RATE jobs of one second: the fires it
/// took (pushed to its ring or triggered directly), by scheduled time.
async fn upstream_cycle(pool: &MySqlPool, taken: &mut Vec<i64>) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("select * from xxl_job_lock where lock_name = 'schedule_lock' for update")
        .execute(&mut *tx)
        .await?;
    let now = now_ms();
    let rows = sqlx::query(
        "SELECT id, trigger_last_time, trigger_next_time FROM xxl_job_info AS t \
         WHERE t.trigger_status = 1 and t.trigger_next_time <= ? ORDER BY id ASC LIMIT 100",
    )
    .bind(now + PRE_READ_MS)
    .fetch_all(&mut *tx)
    .await?;
    for row in rows {
        let id: i32 = row.try_get("id")?;
        let mut last: i64 = row.try_get("trigger_last_time")?;
        let mut next: i64 = row.try_get("trigger_next_time")?;
        // `refreshNextTriggerTime` for FIX_RATE 1: the next fire a second later.
        let mut take = |next: &mut i64, last: &mut i64| {
            taken.push(*next);
            *last = *next;
            *next += 1_000;
        };
        if now > next + PRE_READ_MS {
            anyhow::bail!("the test's job misfired under the upstream scheduler (next {next}, now {now})");
        } else if now >= next {
            take(&mut next, &mut last);
            if now + PRE_READ_MS > next {
                take(&mut next, &mut last);
            }
        } else {
            take(&mut next, &mut last);
        }
        sqlx::query(
            "UPDATE xxl_job_info SET trigger_last_time = ?, trigger_next_time = ? \
             WHERE id = ? AND trigger_status = 1",
        )
        .bind(last)
        .bind(next)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Runs upstream's schedule thread for `for_how_long`, a cycle at each whole second as
/// upstream sleeps; the fires it took.
async fn upstream_scheduler(pool: &MySqlPool, for_how_long: Duration) -> anyhow::Result<Vec<i64>> {
    let mut taken = Vec::new();
    let until = tokio::time::Instant::now() + for_how_long;
    while tokio::time::Instant::now() < until {
        upstream_cycle(pool, &mut taken).await?;
        let to_next_second = 1_000 - now_ms().rem_euclid(1_000);
        tokio::time::sleep(Duration::from_millis(u64::try_from(to_next_second).unwrap_or(1_000))).await;
    }
    Ok(taken)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_admin_and_jobwheel_share_the_fires_of_one_database() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let outcome = share(&db.url).await;
    db.drop_it().await?;
    outcome
}

async fn share(url: &str) -> anyhow::Result<()> {
    let pool = MySqlPool::connect(url).await?;
    let script =
        super::adoption::in_this_database(include_str!("../../../fixtures/upstream/xxl-job-3.4.2.sql"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(script)).execute(&pool).await?;
    let executor = RecordingExecutor::start().await;
    // jobwheel runs first, so the job's first second is not already past when it pre-reads: a
    // late first pre-read fires that second once now and goes on from the next one (upstream's
    // rule for a job at most 5 s late), leaving the seconds in between unfired — right, but not
    // what this test counts. An idle scheduler looks for new jobs every 5 s, hence 7 s ahead.
    let env = Env::start_on(url).await?;
    // Upstream's seed job every second from then on, on an executor that answers.
    let first = (now_ms() / 1_000 + 7) * 1_000;
    sqlx::query("UPDATE xxl_job_group SET address_type = 1, address_list = ? WHERE id = 1")
        .bind(&executor.address)
        .execute(&pool)
        .await?;
    sqlx::query(
        "UPDATE xxl_job_info SET schedule_type = 'FIX_RATE', schedule_conf = '1', trigger_status = 1, \
         trigger_next_time = ? WHERE id = 1",
    )
    .bind(first)
    .execute(&pool)
    .await?;

    // jobwheel's fires are its log rows (the test's upstream cycle writes none), less those
    // staged for claims still pending; a claim taken on time is deleted, so its row is the record.
    let fired = || async {
        let rows = sqlx::query_as::<_, (i64, String)>(
            "SELECT CAST(UNIX_TIMESTAMP(l.trigger_time) AS SIGNED) * 1000, COALESCE(l.trigger_msg, '') \
             FROM xxl_job_log l WHERE l.job_id = 1 AND NOT EXISTS (SELECT 1 FROM jobwheel_ring_claim c \
             WHERE c.log_id = l.id AND c.status = 0) ORDER BY l.trigger_time",
        )
        .fetch_all(&pool)
        .await
        .expect("fires");
        // A missed-fire row stands for skipped fire times, not a fire.
        rows.into_iter().filter(|(_, msg)| !is_missed_fire(msg)).map(|(at, _)| at).collect::<Vec<i64>>()
    };

    // jobwheel schedules alone, then beside the upstream admin, then alone again.
    eventually("jobwheel's first fires", || async { (fired().await.len() >= 2).then_some(()) }).await;
    let upstream = upstream_scheduler(&pool, Duration::from_secs(5)).await?;
    let left_at = upstream.last().copied().unwrap_or(0);
    eventually("jobwheel firing after the upstream admin left", || async {
        (fired().await.iter().filter(|t| **t > left_at).count() >= 4).then_some(())
    })
    .await;
    let end = now_ms();
    env.admin.stop().await?;
    let fired = fired().await;
    ensure!(!upstream.is_empty(), "the upstream admin took fires while it ran");
    ensure!(!fired.is_empty(), "jobwheel fired");
    let mut by_second: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for (at, who) in upstream.iter().map(|t| (*t, "upstream")).chain(fired.iter().map(|t| (*t, "jobwheel"))) {
        by_second.entry(at).or_default().push(who);
    }
    let twice: Vec<_> = by_second.iter().filter(|(_, who)| who.len() > 1).collect();
    ensure!(twice.is_empty(), "fired twice: {twice:?}");
    // Every second from the first to three seconds before the end fired (the last ones may
    // still have been staged when the admin stopped).
    let missing: Vec<i64> = (0..)
        .map(|n| first + n * 1_000)
        .take_while(|t| *t < end - 3_000)
        .filter(|t| !by_second.contains_key(t))
        .collect();
    ensure!(missing.is_empty(), "never fired: {missing:?} (upstream {upstream:?}, jobwheel {fired:?})");
    Ok(())
}
