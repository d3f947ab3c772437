//! `bench-first-run`: how long the first run of a new Wasm module version takes after its
//! upload, with and without pre-compilation, through real processes.
//!
//! Starts `jobwheel-admin` (SQLite) and one `jobwheel-executor` from the directory of this
//! binary, creates a GLUE_WASM job in a group with a manual address list and, for each of
//! `--rounds` rounds, uploads a new version of `--module` (a custom section appended to it
//! makes its digest new each time) twice:
//! - **announced**: the group lists the executor, so the admin announces the upload
//!   (`/wasmPrepare`); the benchmark waits until the executor logged that it compiled this
//!   digest, then triggers the job;
//! - **not announced**: the group lists a closed port, so the announcement goes nowhere (as for
//!   an executor that was down or started later); the job is triggered on the executor's
//!   address (the trigger's address list), and the executor compiles at the first run.
//!
//! Each version is then triggered a second time, for comparison with a warm run.
//! Latency is from sending the trigger request to the run's result in the log list (polled
//! every 2 ms). The job log of every run is checked for how the module was obtained, so a
//! case that did not happen as named fails the benchmark. See docs/benchmarks.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use jobwheel_tests::api::Api;
use jobwheel_tests::cluster::{Daemon, free_port};
use serde_json::json;
use sha2::{Digest as _, Sha256};

const API_TOKEN: &str = "bench-first-run-api-token-0123456789";

#[derive(Debug, Parser)]
struct Args {
    /// The module or component to upload (e.g. the Python `http-check` component).
    #[arg(long)]
    module: PathBuf,
    /// Versions uploaded per case.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Extra executor flags, e.g. `--wasm-pool-slots=16` (give it as one `--flag=value` word).
    #[arg(long, allow_hyphen_values = true)]
    executor_flag: Vec<String>,
}

#[tokio::main]
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bytes = std::fs::read(&args.module).with_context(|| args.module.display().to_string())?;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let store = jobwheel_admin::store::connect(&url).await?;
    jobwheel_tests::fixtures::api_administrator(&*store, "ops", API_TOKEN).await?;
    let admin = Daemon::start_admin(&url, &dir.path().join("admin"), &["--i18n", "en"], &[]).await?;
    // The job calls a loopback server (the `http-check` samples need a URL); any other module
    // simply does not use the grant.
    let server = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let origin = format!("http://127.0.0.1:{}", server.local_addr()?.port());
    let app = axum::Router::new().route("/check", axum::routing::get(|| async { "ok" }));
    let serving = tokio::spawn(std::future::IntoFuture::into_future(axum::serve(server, app)));
    let mut flags: Vec<&str> = vec!["--wasm-http-allow=http://127.0.0.1:*,127.0.0.1"];
    flags.extend(args.executor_flag.iter().map(String::as_str));
    let executor = Daemon::start_executor(
        "bench-app",
        std::slice::from_ref(&admin.base),
        &dir.path().join("executor"),
        &flags,
    )
    .await?;
    let api = Api::new(&admin.base, API_TOKEN);
    let nowhere = format!("http://127.0.0.1:{}/", free_port()?);
    let group = api
        .post(
            "/groups",
            json!({"appname": "bench-app", "title": "Bench", "addressType": 1, "addressList": nowhere}),
        )
        .await?["id"]
        .as_i64()
        .context("group id")?;
    let job = api.job(group, "first run", json!({"glueType": "GLUE_WASM", "executorHandler": ""})).await?;
    let grant = json!({"httpAllow": [origin], "variables": {"CHECK_URL": format!("{origin}/check")}});
    api.put(&format!("/jobs/{job}/grant"), grant).await?;
    let point_at = |list: String| {
        let api = api.clone();
        async move {
            let body =
                json!({"appname": "bench-app", "title": "Bench", "addressType": 1, "addressList": list});
            api.put(&format!("/groups/{group}"), body).await.map(drop)
        }
    };

    println!(
        "module: {} ({:.2} MB), {} rounds",
        args.module.display(),
        bytes.len() as f64 / 1e6,
        args.rounds
    );
    let mut version = 0u32;
    for announced in [true, false] {
        let (mut samples, mut again) = (Vec::new(), Vec::new());
        for _ in 0..args.rounds {
            version += 1;
            let module = jobwheel_tests::sample_jobs::with_marker(&bytes, version);
            let digest = hex::encode(Sha256::digest(&module));
            point_at(if announced { executor.address() } else { nowhere.clone() }).await?;
            let on = (!announced).then(|| executor.address());
            upload(&admin.base, job, module).await?;
            if announced {
                let prepared = format!("wasm module prepared digest={digest}");
                jobwheel_tests::wait_until(
                    Duration::from_secs(600),
                    "the executor compiled the upload",
                    || executor.log_count(&prepared) == 1,
                )
                .await;
            }
            let (took, content) = first_run(&api, job, on.as_deref()).await?;
            let expected = if announced {
                "compiled module cached in memory"
            } else {
                "fetched from the admin and compiled"
            };
            ensure!(
                content.contains(expected),
                "version {version}: expected \"{expected}\" in the job log:\n{content}"
            );
            samples.push(took);
            again.push(first_run(&api, job, on.as_deref()).await?.0);
        }
        let ms = |samples: &mut Vec<Duration>| {
            samples.sort();
            let ms: Vec<String> = samples.iter().map(|d| format!("{:.1}", d.as_secs_f64() * 1e3)).collect();
            ms.join(", ")
        };
        let case = if announced {
            "announced (compiled before the trigger)"
        } else {
            "not announced (compiled at the first run)"
        };
        println!(
            "{case}: first run in [{}] ms, second run in [{}] ms (sorted)",
            ms(&mut samples),
            ms(&mut again)
        );
    }
    serving.abort();
    drop(store);
    Ok(())
}

/// Triggers `job` (on `on` if given) and waits for its newest run's result; the time taken and the run's job log.
async fn first_run(api: &Api, job: i64, on: Option<&str>) -> anyhow::Result<(Duration, String)> {
    let before = api.logs(job).await?.len();
    let started = Instant::now();
    api.trigger(job, on).await?;
    let deadline = started + Duration::from_secs(600);
    loop {
        let logs = api.logs(job).await?;
        if let Some(log) = logs.get(before)
            && log["handleCode"].as_i64().unwrap_or(0) > 0
        {
            let took = started.elapsed();
            let content = api.content(log["id"].as_i64().context("log id")?).await?;
            ensure!(log["handleCode"] == 200, "the run failed: {log}\n{content}");
            return Ok((took, content));
        }
        ensure!(Instant::now() < deadline, "no result within 600 s: {logs:#?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn upload(admin: &str, job: i64, bytes: Vec<u8>) -> anyhow::Result<()> {
    let response = reqwest::Client::new()
        .post(format!("{admin}/api/v1/jobs/{job}/wasm?remark=bench"))
        .bearer_auth(API_TOKEN)
        .header("content-type", "application/wasm")
        .body(bytes)
        .send()
        .await?;
    ensure!(response.status().is_success(), "upload: {} {}", response.status(), response.text().await?);
    Ok(())
}
