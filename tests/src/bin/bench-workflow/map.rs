//! `bench-workflow --map-items 1000,10000,100000`: map nodes (docs/benchmarks.md, "Map nodes").
//!
//! For each size, a fresh `jobwheel-admin` process on a fresh database (SQLite file, or a new
//! PostgreSQL database under `--database-url`'s server) runs one instance of a workflow whose
//! only node maps the no-op BEAN handler over the start's `ids` (`--map-parallelism` at once,
//! `collect` off), on two in-process executors (ROUND). It reports the wall time and items a
//! second, the admin's item dispatch histogram (`jobwheel_workflow_item_dispatch_seconds`: a
//! result that freed a slot stored → the next item's `/run` answered; bucket bounds) and the
//! admin's peak RSS (`VmHWM`), and fails unless every item ran exactly once: one arrival per
//! log id at the executors, as many arrivals as items, and the map's counts all succeeded.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use jobwheel_admin::store::Job;
use serde_json::json;

use crate::setup::{self, HANDLER};
use crate::{Api, Histogram};

/// One size's figures.
struct Figures {
    items: usize,
    wall: Duration,
    dispatch: Histogram,
    peak_rss_kib: u64,
    /// The admin's RSS sampled every 100 ms while the items ran: the median, KiB.
    running_rss_kib: u64,
    /// The RSS at a tenth, half and nine tenths of the run, KiB: flat, or growing with the items.
    course_kib: [u64; 3],
}

#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) async fn run(database_url: Option<&str>, sizes: &[usize], parallelism: u32) -> anyhow::Result<()> {
    let mut all = Vec::new();
    for (n, &items) in sizes.iter().enumerate() {
        let figures =
            one(database_url, n, items, parallelism).await.with_context(|| format!("{items} items"))?;
        let ((p50, count), (p99, _)) = (figures.dispatch.bound(50.0), figures.dispatch.bound(99.0));
        println!(
            "map of {items} items, parallelism {parallelism}: {:.1} s ({:.0} items/s); dispatch p50 ≤ {p50} ms, \
             p99 ≤ {p99} ms ({count} dispatches); admin RSS while the items ran {:.1} MiB (median), peak {:.1} MiB; \
             over the run {:.1} → {:.1} → {:.1} MiB; every item ran exactly once",
            figures.wall.as_secs_f64(),
            items as f64 / figures.wall.as_secs_f64(),
            figures.running_rss_kib as f64 / 1024.0,
            figures.peak_rss_kib as f64 / 1024.0,
            figures.course_kib[0] as f64 / 1024.0,
            figures.course_kib[1] as f64 / 1024.0,
            figures.course_kib[2] as f64 / 1024.0,
        );
        all.push(figures);
    }
    if let (Some(small), Some(large)) = (all.first(), all.last()) {
        let running = large.running_rss_kib as f64 / small.running_rss_kib.max(1) as f64;
        let peak = large.peak_rss_kib as f64 / small.peak_rss_kib.max(1) as f64;
        println!(
            "RSS while the items ran at {} items is {running:.2} × that at {} items (peak: {peak:.2} ×)",
            large.items, small.items
        );
    }
    Ok(())
}

async fn one(
    database_url: Option<&str>,
    n: usize,
    items: usize,
    parallelism: u32,
) -> anyhow::Result<Figures> {
    let dir = tempfile::tempdir()?;
    let url = match database_url {
        None => format!("sqlite://{}", dir.path().join("map.db").display()),
        Some(server) => fresh_postgres(server, n).await?,
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let admin_url = format!("http://127.0.0.1:{port}");
    let (executors, arrivals) =
        setup::executors(2, dir.path(), std::slice::from_ref(&admin_url), false).await;
    let store = jobwheel_admin::store::connect(&url).await.context("connecting to the database")?;
    let addresses: Vec<String> = executors.iter().map(|e| format!("http://{}/", e.addr)).collect();
    let group = setup::bench_group(&*store, &addresses).await?;
    let job = Job {
        executor_route_strategy: Some("ROUND".into()),
        ..jobwheel_tests::fixtures::bean_job(group, "map item", HANDLER)
    };
    let job = store.add_job(&job).await?.0;
    let admin = setup::admin(&url, port, &dir.path().join("admin"), 1000).await?;
    let pid = admin.id().context("the admin's pid")?;
    let api = Api { http: reqwest::Client::new(), base: format!("{admin_url}/api/v1") };
    let graph = json!({"nodes": [{"name": "each", "kind": "MAP", "jobId": job, "items": "/ids",
                                  "parallelism": parallelism, "collect": false}]});
    let body = json!({"name": "map", "jobGroup": group.0, "graph": graph});
    let workflow = api.post("/workflows", &body).await?["id"].as_i64().context("a workflow id")?;
    let before = api.histogram("jobwheel_workflow_item_dispatch_seconds").await?;
    let started = Instant::now();
    let ids: Vec<usize> = (0..items).collect();
    let reply =
        api.post(&format!("/workflows/{workflow}/instances"), &json!({"context": {"ids": ids}})).await?;
    let instance = reply["instanceId"].as_i64().context("an instance id")?;
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        loop {
            if let Ok(sample) = crate::measure::sample(pid) {
                samples.push(sample.rss_kib);
            }
            tokio::select! {
                _ = &mut stopped => return samples,
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    });
    api.wait_over(&[instance], Duration::from_secs(1800)).await?;
    let wall = started.elapsed();
    let _ = stop.send(());
    let mut samples = sampler.await?;
    let at = |tenths: usize| samples.get(samples.len() * tenths / 10).copied().unwrap_or(0);
    let course_kib = [at(1), at(5), at(9)];
    samples.sort_unstable();
    let running_rss_kib = samples.get(samples.len() / 2).copied().unwrap_or(0);
    let peak_rss_kib = crate::measure::sample(pid)?.peak_rss_kib;
    let dispatch = api.histogram("jobwheel_workflow_item_dispatch_seconds").await?.since(&before);

    let view = api.get(&format!("/workflow-instances/{instance}")).await?;
    ensure!(view["status"] == "SUCCEEDED", "the instance ended {}", view["status"]);
    let counts = &view["runs"][0]["items"];
    ensure!(counts["succeeded"] == items && counts["total"] == items, "the map's counts: {counts}");
    let arrived = arrivals.lock().expect("arrivals");
    let mut seen = HashSet::new();
    for a in arrived.iter() {
        ensure!(seen.insert(a.log_id), "log {} ran twice", a.log_id);
    }
    ensure!(seen.len() == items, "{} arrivals for {items} items", seen.len());
    drop(arrived);
    drop(admin);
    drop(executors);
    Ok(Figures { items, wall, dispatch, peak_rss_kib, running_rss_kib, course_kib })
}

/// A new database on the server of `url` (`…/bench_map_<n>`, dropped first if it exists).
async fn fresh_postgres(url: &str, n: usize) -> anyhow::Result<String> {
    use sqlx::Connection as _;
    let (server, _) = url.rsplit_once('/').context("a database URL")?;
    let name = format!("bench_map_{n}");
    let mut admin = sqlx::PgConnection::connect(&format!("{server}/postgres")).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}"))).execute(&mut admin).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await?;
    Ok(format!("{server}/{name}"))
}
