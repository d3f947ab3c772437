//! `bench-workflow`: workflow node hand-off latency and whole-workflow throughput of a real
//! `jobwheel-admin` process (docs/benchmarks.md, "Workflows").
//!
//! One in-process executor runs a no-op BEAN handler that records when each run arrived (the
//! same as `bench-admin`'s). Three workflows are made through the management API and started
//! through it:
//! - **chain**: `--chain` nodes in a line, `--rounds` instances one after another — every node
//!   but the first is a hand-off from one parent;
//! - **fan-out**: a root, `--width` parallel nodes, and a join — 200-node fan-out/fan-in end to
//!   end;
//! - **concurrent**: `--instances` instances at once of a 10-node workflow (a root, 8 parallel
//!   nodes, a join), checked for every node run exactly once.
//!
//! A hand-off is measured from the moment the admin stored the last parent's result (the
//! parent run's `endTime`) to the child's `/run` — both when the admin took the child to fire
//! it (`firedTime`, just before the request) and when the request arrived at the executor.
//! Every figure comes from the instances as the API reports them plus the executor's record,
//! and the admin's own hand-off histogram (stored → `/run` answered), read from `/metrics`.
//! Each node runs a job of its own (an executor runs one job's runs one after another).

mod cel;
mod map;
#[allow(dead_code, reason = "shared with bench-admin; only the process sample is used here")]
#[path = "../bench-admin/measure.rs"]
mod measure;
#[allow(dead_code, reason = "shared with bench-admin; only the executor and admin helpers are used here")]
#[path = "../bench-admin/setup.rs"]
mod setup;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use serde_json::{Value, json};
use setup::{API_TOKEN, Arrivals, HANDLER};

#[derive(Debug, Parser)]
struct Args {
    /// Database of the run; must be empty. Default: a new SQLite file under $TMPDIR.
    #[arg(long)]
    database_url: Option<String>,
    /// Nodes of the chain.
    #[arg(long, default_value_t = 50)]
    chain: usize,
    /// Chain instances, one after another.
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// Parallel nodes of the fan-out.
    #[arg(long, default_value_t = 200)]
    width: usize,
    /// Concurrent instances of the 10-node workflow.
    #[arg(long, default_value_t = 100)]
    instances: usize,
    /// Instead of the scenarios above: a map node over each of these numbers of items, each on
    /// a fresh admin and database (docs/benchmarks.md, "Map nodes").
    #[arg(long, value_delimiter = ',')]
    map_items: Vec<usize>,
    /// The map node's parallelism.
    #[arg(long, default_value_t = 200)]
    map_parallelism: u32,
    /// Instead: what a condition on data costs at the context size limit.
    #[arg(long)]
    cel: bool,
}

/// What one workflow's instances measured.
#[derive(Debug, Default)]
struct Measured {
    /// Last parent stored → child taken to fire, ms.
    to_fired: Vec<f64>,
    /// Last parent stored → child's `/run` at the executor, ms.
    to_executor: Vec<f64>,
    /// Instance start → end, ms.
    end_to_end: Vec<f64>,
    /// The admin's own hand-off histogram over the scenario (result stored → child's `/run`
    /// answered), `jobwheel_workflow_handoff_seconds`.
    answered: Histogram,
}

/// A Prometheus histogram's cumulative buckets: `(le, count)`, ascending.
#[derive(Debug, Default)]
struct Histogram(Vec<(f64, u64)>);

impl Histogram {
    /// The counts added since `before`.
    fn since(&self, before: &Histogram) -> Histogram {
        let old = |le: f64| before.0.iter().find(|(l, _)| *l == le).map_or(0, |(_, n)| *n);
        Histogram(self.0.iter().map(|&(le, n)| (le, n - old(le))).collect())
    }

    /// The upper bound (ms) of the bucket holding the `p`-th percentile, and the count.
    fn bound(&self, p: f64) -> (f64, u64) {
        let total = self.0.last().map_or(0, |(_, n)| *n);
        let rank = ((p / 100.0) * total as f64).ceil() as u64;
        let le = self.0.iter().find(|(_, n)| *n >= rank.max(1)).map_or(f64::INFINITY, |(le, _)| *le);
        (le * 1000.0, total)
    }
}

#[tokio::main]
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.cel {
        return cel::run();
    }
    if !args.map_items.is_empty() {
        return map::run(args.database_url.as_deref(), &args.map_items, args.map_parallelism).await;
    }
    let dir = tempfile::tempdir()?;
    let url = args
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let admin_url = format!("http://127.0.0.1:{port}");
    let (executors, arrivals) =
        setup::executors(1, dir.path(), std::slice::from_ref(&admin_url), false).await;
    let store = jobwheel_admin::store::connect(&url).await.context("connecting to the database")?;
    let group = setup::bench_group(&*store, &[format!("http://{}/", executors[0].addr)]).await?;
    // One job per node position, as a real workflow's nodes run different jobs (an executor
    // runs one job's runs one after another, so nodes sharing a job would queue there).
    let mut jobs = Vec::new();
    for i in 0..args.chain.max(args.width + 2) {
        let job = jobwheel_tests::fixtures::bean_job(group, &format!("workflow node {i}"), HANDLER);
        jobs.push(store.add_job(&job).await?.0);
    }
    let _admin = setup::admin(&url, port, &dir.path().join("admin"), 1000).await?;
    let api = Api { http: reqwest::Client::new(), base: format!("{admin_url}/api/v1") };
    println!("database: {:?}", store.backend());

    let chain = api.workflow("chain", group.0, chain(&jobs, args.chain), 1).await?;
    let mut measured = Measured::default();
    let before = api.handoffs().await?;
    for _ in 0..args.rounds {
        let id = api.start(chain).await?;
        api.wait_over(&[id], Duration::from_secs(120)).await?;
        measure(&api, &arrivals, &[id], &mut measured).await?;
    }
    measured.answered = api.handoffs().await?.since(&before);
    report(&format!("chain of {} × {} instances", args.chain, args.rounds), &measured);

    let fan_out = api.workflow("fan-out", group.0, fan(&jobs, args.width), 1).await?;
    let mut measured = Measured::default();
    let before = api.handoffs().await?;
    let id = api.start(fan_out).await?;
    api.wait_over(&[id], Duration::from_secs(300)).await?;
    measure(&api, &arrivals, &[id], &mut measured).await?;
    measured.answered = api.handoffs().await?.since(&before);
    report(&format!("fan-out/fan-in of {} nodes", args.width + 2), &measured);

    let max = i32::try_from(args.instances.min(100))?;
    let ten = api.workflow("ten", group.0, fan(&jobs, 8), max).await?;
    let mut measured = Measured::default();
    let before = api.handoffs().await?;
    let started = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..args.instances {
        ids.push(api.start(ten).await?);
    }
    api.wait_over(&ids, Duration::from_secs(600)).await?;
    let wall = started.elapsed();
    measure(&api, &arrivals, &ids, &mut measured).await?;
    measured.answered = api.handoffs().await?.since(&before);
    report(&format!("{} concurrent instances of 10 nodes", args.instances), &measured);
    println!(
        "  all {} instances over in {:.2} s ({:.0} node runs/s); every node ran exactly once",
        ids.len(),
        wall.as_secs_f64(),
        (ids.len() * 10) as f64 / wall.as_secs_f64()
    );
    Ok(())
}

/// `n` nodes in a line, node `i` running `jobs[i]`.
fn chain(jobs: &[i32], n: usize) -> Value {
    let nodes: Vec<Value> = (0..n).map(|i| json!({"name": format!("n{i}"), "jobId": jobs[i]})).collect();
    let edges: Vec<Value> =
        (1..n).map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")})).collect();
    json!({"nodes": nodes, "edges": edges})
}

/// A root, `width` parallel nodes, a join, each on a job of its own.
fn fan(jobs: &[i32], width: usize) -> Value {
    let mut nodes =
        vec![json!({"name": "root", "jobId": jobs[0]}), json!({"name": "join", "jobId": jobs[1]})];
    let mut edges = Vec::new();
    for i in 0..width {
        let name = format!("p{i}");
        edges.push(json!({"from": "root", "to": name}));
        edges.push(json!({"from": name, "to": "join"}));
        nodes.push(json!({"name": name, "jobId": jobs[i + 2]}));
    }
    json!({"nodes": nodes, "edges": edges})
}

/// Reads the instances, checks each node ran exactly once and succeeded, and adds their figures.
async fn measure(api: &Api, arrivals: &Arrivals, ids: &[i64], into: &mut Measured) -> anyhow::Result<()> {
    // Executor arrivals by log id; a log id seen twice would be a doubled run.
    let mut arrived: HashMap<i64, i64> = HashMap::new();
    for a in arrivals.lock().expect("arrivals").iter() {
        ensure!(arrived.insert(a.log_id, a.at_ms).is_none(), "log {} ran twice on the executor", a.log_id);
    }
    for &id in ids {
        let instance = api.get(&format!("/workflow-instances/{id}")).await?;
        ensure!(instance["status"] == "SUCCEEDED", "instance {id} ended {}", instance["status"]);
        let mut runs: BTreeMap<String, &Value> = BTreeMap::new();
        for run in instance["runs"].as_array().context("runs")? {
            let node = run["node"].as_str().context("node")?.to_owned();
            ensure!(run["status"] == "SUCCEEDED", "instance {id} node {node}: {run}");
            ensure!(runs.insert(node.clone(), run).is_none(), "instance {id}: node {node} ran twice");
        }
        let graph = &instance["graph"];
        let nodes = graph["nodes"].as_array().context("nodes")?;
        ensure!(runs.len() == nodes.len(), "instance {id}: {} of {} nodes ran", runs.len(), nodes.len());
        let mut parents: HashMap<&str, Vec<&str>> = HashMap::new();
        for edge in graph["edges"].as_array().context("edges")? {
            let (from, to) = (edge["from"].as_str().unwrap_or(""), edge["to"].as_str().unwrap_or(""));
            parents.entry(to).or_default().push(from);
        }
        for (node, run) in &runs {
            let log = run["logId"].as_i64().context("a log id")?;
            let at = *arrived.get(&log).with_context(|| format!("instance {id} node {node}: no arrival"))?;
            let Some(ps) = parents.get(node.as_str()) else { continue };
            let stored = ps.iter().filter_map(|p| runs.get(*p)).filter_map(|r| r["endTime"].as_i64()).max();
            let stored = stored.context("a parent's end")?;
            into.to_fired.push((run["firedTime"].as_i64().unwrap_or(0) - stored) as f64);
            into.to_executor.push((at - stored) as f64);
        }
        let span = instance["endTime"].as_i64().unwrap_or(0) - instance["startTime"].as_i64().unwrap_or(0);
        into.end_to_end.push(span as f64);
    }
    Ok(())
}

/// `p`-th percentile of `values` (nearest rank).
fn pct(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
fn report(what: &str, m: &Measured) {
    println!("{what}:");
    println!(
        "  hand-off stored → fired:    p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms ({} hand-offs)",
        pct(&m.to_fired, 50.0),
        pct(&m.to_fired, 99.0),
        pct(&m.to_fired, 100.0),
        m.to_fired.len()
    );
    println!(
        "  hand-off stored → executor: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        pct(&m.to_executor, 50.0),
        pct(&m.to_executor, 99.0),
        pct(&m.to_executor, 100.0)
    );
    let ((p50, n), (p99, _)) = (m.answered.bound(50.0), m.answered.bound(99.0));
    println!(
        "  admin's hand-off histogram (stored → /run answered): p50 ≤ {p50} ms, p99 ≤ {p99} ms ({n} hand-offs)"
    );
    println!(
        "  instance start → end: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        pct(&m.end_to_end, 50.0),
        pct(&m.end_to_end, 99.0),
        pct(&m.end_to_end, 100.0)
    );
}

/// The management API as the benchmark's administrator.
struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let answer = self.http.get(format!("{}{path}", self.base)).bearer_auth(API_TOKEN).send().await?;
        ensure!(answer.status().is_success(), "GET {path}: {}", answer.status());
        Ok(answer.json().await?)
    }

    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let answer =
            self.http.post(format!("{}{path}", self.base)).bearer_auth(API_TOKEN).json(body).send().await?;
        let status = answer.status();
        let text = answer.text().await?;
        ensure!(status.is_success(), "POST {path}: {status} {text}");
        Ok(serde_json::from_str(&text)?)
    }

    /// The admin's `jobwheel_workflow_handoff_seconds` buckets now.
    async fn handoffs(&self) -> anyhow::Result<Histogram> {
        self.histogram("jobwheel_workflow_handoff_seconds").await
    }

    /// The buckets of the admin's histogram `name` now.
    async fn histogram(&self, name: &str) -> anyhow::Result<Histogram> {
        let url = self.base.replace("/api/v1", "/metrics");
        let text = self.http.get(url).bearer_auth(API_TOKEN).send().await?.text().await?;
        let mut buckets = Vec::new();
        let prefix = format!("{name}_bucket{{");
        for line in text.lines().filter(|l| l.starts_with(&prefix)) {
            let le = line.split("le=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("+Inf");
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse()? };
            let count = line.rsplit(' ').next().unwrap_or("0").parse()?;
            buckets.push((le, count));
        }
        ensure!(!buckets.is_empty(), "no {name} in /metrics");
        Ok(Histogram(buckets))
    }

    async fn workflow(&self, name: &str, group: i32, graph: Value, max: i32) -> anyhow::Result<i64> {
        let body = json!({"name": name, "jobGroup": group, "maxInstances": max, "overflow": "QUEUE", "graph": graph});
        self.post("/workflows", &body).await?["id"].as_i64().context("a workflow id")
    }

    async fn start(&self, workflow: i64) -> anyhow::Result<i64> {
        let started = self.post(&format!("/workflows/{workflow}/instances"), &json!({"context": {}})).await?;
        started["instanceId"].as_i64().context("an instance id")
    }

    /// Waits until every instance of `ids` is over, polling twice a second.
    async fn wait_over(&self, ids: &[i64], within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        for &id in ids {
            loop {
                let status = self.get(&format!("/workflow-instances/{id}")).await?["status"].clone();
                if status != "RUNNING" && status != "QUEUED" {
                    break;
                }
                ensure!(Instant::now() < deadline, "instance {id} still {status} after {within:?}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Ok(())
    }
}
