//! Two admins on one PostgreSQL / MariaDB database share the scheduling of 30 every-second jobs
//! (each leases half the job partitions, docs/engine.md "Shared scheduling"); six times, the
//! admin whose scheduler most recently claimed triggers (so its ring holds the next seconds'
//! claims) is SIGKILLed, left down briefly, and restarted, so its partitions change hands while
//! its claims wait for recovery. Afterwards every job must have fired exactly once for every
//! second of the window: no gap, no double, one log row per trigger — read per durable-ring
//! claim from the database. Upstream loses the killed admin's ring.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::databases::{FreshDatabase, Server};
use jobwheel_tests::now_ms;
use jobwheel_tests::outcomes::{ClaimOutcome, claims};

use crate::support::{every_second, executor, group};

const JOBS: usize = 30;
const KILLS: usize = 6;
/// How long a killed admin stays down: long enough that its claims are recovered by the other.
const DOWN: Duration = Duration::from_millis(1500);
/// The engine's debug line for a pre-read that claimed triggers.
const CYCLE_LINE: &str = "schedule cycle";
/// The engine's line when an admin's share of the job partitions changed to half of them.
const HALF_LINE: &str = "held=16";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_admins_fire_every_trigger_exactly_once_while_the_scheduler_is_killed() -> anyhow::Result<()>
{
    failover(Server::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_admins_fire_every_trigger_exactly_once_while_the_scheduler_is_killed() -> anyhow::Result<()>
{
    failover(Server::MySql).await
}

async fn failover(server: Server) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(server).await? else { return Ok(()) };
    let outcome = run(&db.url).await;
    db.drop_it().await?;
    outcome
}

async fn run(url: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(url).await?;
    let env =
        [("RUST_LOG", "warn,jobwheel_admin::engine::schedule=debug,jobwheel_admin::engine::share=info")];
    let mut admins = [
        Daemon::start_admin(url, &dir.path().join("a"), &[], &env).await?,
        Daemon::start_admin(url, &dir.path().join("b"), &[], &env).await?,
    ];
    let bases: Vec<String> = admins.iter().map(|a| a.base.clone()).collect();
    let executor = executor(&dir.path().join("executor"), &bases).await;
    let g = group(&*store, &format!("http://{}/", executor.addr)).await?;
    let first_fire = (now_ms() / 1000 + 1) * 1000;
    let mut jobs = Vec::new();
    for n in 0..JOBS {
        jobs.push(every_second(&*store, g, n, first_fire).await?);
    }

    // The two admins share the work: each comes to hold half the partitions.
    let deadline = now_ms() + 20_000;
    while admins.iter().any(|a| a.log_count(HALF_LINE) == 0) {
        ensure!(now_ms() < deadline, "the admins did not split the partitions: {}", admins[1].log_tail(20));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut seen = [0usize; 2];
    let mut active = None;
    let mut window_start = None;
    for kill in 0..KILLS {
        // Follow both logs for a few seconds; the last one to claim triggers is the scheduler
        // whose ring holds the next seconds.
        // (At first, an idle scheduler sleeps up to 5 s before it sees the new jobs.)
        let until = now_ms() + 3_500;
        let give_up = now_ms() + 15_000;
        while now_ms() < until || (active.is_none() && now_ms() < give_up) {
            for (i, admin) in admins.iter().enumerate() {
                let count = admin.log_count(CYCLE_LINE);
                if count > seen[i] {
                    seen[i] = count;
                    active = Some(i);
                    // The window starts once scheduling is under way (an idle scheduler only
                    // looks for new jobs every 5 s, so the very first fires may be misfires).
                    window_start.get_or_insert((now_ms() / 1000 + 2) * 1000);
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let victim = active.context("no admin logged a schedule cycle")?;
        admins[victim].kill9().await?;
        tokio::time::sleep(DOWN).await;
        admins[victim]
            .restart()
            .await
            .with_context(|| format!("restarting admin {victim} after kill {kill}"))?;
        seen[victim] = admins[victim].log_count(CYCLE_LINE);
    }
    let window_start = window_start.context("no schedule cycle seen")?;
    let window_end = (now_ms() / 1000) * 1000;
    for job in &jobs {
        store.stop_job(*job, chrono::Utc::now()).await?;
    }

    // Every claim of the window fired (recovery picks up the killed admins' claims) and its
    // run called back, or is in doubt (its admin died between the log row and the executor).
    let deadline = now_ms() + 60_000;
    let mut unchanged = 0;
    let mut last_open = usize::MAX;
    let outcomes = loop {
        let outcomes = claims(url, window_start, window_end).await?;
        let pending = outcomes.iter().filter(|c| c.status == 0).count();
        let open = outcomes.iter().filter(|c| c.status == 1 && c.handle_code.unwrap_or(0) == 0).count();
        unchanged = if open == last_open { unchanged + 1 } else { 0 };
        last_open = open;
        // Settled: nothing pending, and every run called back or (in doubt) nothing moved for 3 s.
        if pending == 0 && (open == 0 || unchanged >= 6) || now_ms() > deadline {
            break outcomes;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let report =
        check(&outcomes, &jobs.iter().map(|j| i64::from(j.0)).collect::<Vec<_>>(), window_start, window_end);
    for admin in &mut admins {
        admin.stop().await?;
    }
    executor.stop().await?;
    report
}

/// Exactly one fired claim and one log row per job per second of `[from, to)`.
fn check(outcomes: &[ClaimOutcome], jobs: &[i64], from: i64, to: i64) -> anyhow::Result<()> {
    let mut per_second: BTreeMap<(i64, i64), Vec<&ClaimOutcome>> = BTreeMap::new();
    for c in outcomes {
        per_second.entry((c.job_id, c.fire_ms)).or_default().push(c);
    }
    let seconds: Vec<i64> = (from / 1000..to / 1000).map(|s| s * 1000).collect();
    let mut missing = Vec::new();
    let mut doubled = Vec::new();
    for job in jobs {
        for second in &seconds {
            let fired =
                per_second.get(&(*job, *second)).map_or(0, |cs| cs.iter().filter(|c| c.status == 1).count());
            match fired {
                0 => missing.push((*job, *second)),
                1 => {}
                _ => doubled.push((*job, *second)),
            }
        }
    }
    let logs: BTreeSet<i64> = outcomes.iter().filter_map(|c| c.log_id).collect();
    let fired = outcomes.iter().filter(|c| c.status == 1).count();
    let in_doubt = outcomes
        .iter()
        .filter(|c| c.status == 1 && c.trigger_code == Some(0) && c.handle_code == Some(0))
        .count();
    let failed: Vec<_> =
        outcomes.iter().filter(|c| c.handle_code.is_some_and(|h| h != 0 && h != 200)).collect();
    let discarded = missing
        .iter()
        .filter(|k| per_second.get(k).is_some_and(|cs| cs.iter().any(|c| c.status == 2)))
        .count();
    let missing_seconds: BTreeSet<i64> = missing.iter().map(|(_, s)| (s - from) / 1000).collect();
    ensure!(
        missing.is_empty() && doubled.is_empty(),
        "{} of {} triggers missing ({discarded} claimed and discarded, the rest never claimed; window seconds {missing_seconds:?}), {} doubled (first: {:?} / {:?})",
        missing.len(),
        jobs.len() * seconds.len(),
        doubled.len(),
        missing.first(),
        doubled.first()
    );
    ensure!(logs.len() == fired, "one log row per fired claim: {} logs for {fired} claims", logs.len());
    ensure!(failed.is_empty(), "runs failed: {failed:?}");
    // A trigger whose admin died between its log row and the executor's answer is recorded
    // once but may not have run (docs/delivery.md, "Delivery, end to end"); each kill can leave a few.
    ensure!(in_doubt <= KILLS * JOBS / 2, "{in_doubt} triggers in doubt");
    Ok(())
}
