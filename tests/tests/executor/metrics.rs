//! `GET /metrics` on the executor: behind the access token on the main listener (as a bearer
//! token or in upstream's header), open on `--metrics-listen`; the page parses as OpenMetrics
//! and counts the runs, the Wasm run's fuel and memory, and the module load that served it.

use jobwheel_executor::Handlers;
use jobwheel_tests::openmetrics::{parse, scrape};
use jobwheel_tests::sample_jobs::sample_job;
use jobwheel_tests::{TOKEN, trigger, wasm_trigger};

use crate::support::{SETTLE, rig};

#[tokio::test]
async fn runs_are_counted_and_the_page_needs_the_token_except_on_the_metrics_listener() {
    let port = jobwheel_tests::cluster::free_port().expect("a free port");
    let metrics_listen = format!("127.0.0.1:{port}");
    let address = metrics_listen.parse().expect("an address");
    let rig = rig(Handlers::new(), |config| config.metrics_listen = Some(address)).await;
    let digest = rig.admin.add_module(sample_job("hello"));
    rig.executor.post("/run", wasm_trigger(7, 1, &digest, "")).await;
    rig.executor.post("/run", wasm_trigger(7, 2, &digest, "")).await;
    // No handler of that name: refused at /run, so not a run.
    rig.executor.post("/run", trigger(8, 3, "BEAN", "noSuchHandler", "")).await;
    rig.admin.wait_for(SETTLE, "both callbacks", |r| r.callbacks.len() == 2).await;

    let page = rig.executor.url("/metrics");
    let anonymous = reqwest::get(&page).await.expect("answers");
    assert_eq!(anonymous.status(), 401);
    let wrong = reqwest::Client::new().get(&page).bearer_auth("not-the-token").send().await.expect("answers");
    assert_eq!(wrong.status(), 401);
    let header = reqwest::Client::new()
        .get(&page)
        .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
        .send()
        .await
        .expect("answers");
    assert_eq!(header.status(), 200);

    for text in [
        scrape(&page, Some(TOKEN)).await.expect("bearer scrape"),
        scrape(&format!("http://{metrics_listen}/metrics"), None).await.expect("open scrape"),
    ] {
        let samples = parse(&text).await.expect("OpenMetrics");
        let runs = |outcome| {
            samples.sum("jobwheel_executor_runs_total", &[("glue_type", "GLUE_WASM"), ("outcome", outcome)])
        };
        assert_eq!((runs("success"), runs("fail")), (2.0, 0.0), "{text}");
        assert_eq!(samples.sum("jobwheel_executor_runs_total", &[]), 2.0, "{text}");
        assert_eq!(samples.sum("jobwheel_executor_run_duration_seconds_count", &[]), 2.0, "{text}");
        assert_eq!(samples.sum("jobwheel_executor_wasm_fuel_used_count", &[]), 2.0, "{text}");
        assert!(samples.sum("jobwheel_executor_wasm_fuel_used_sum", &[]) > 0.0, "{text}");
        assert!(samples.sum("jobwheel_executor_wasm_peak_memory_bytes_sum", &[]) >= 65536.0, "{text}");
        // The first run fetched and compiled the module; the second found it in memory.
        let loads = |source| samples.sum("jobwheel_executor_wasm_module_loads_total", &[("source", source)]);
        assert_eq!((loads("compiled"), loads("memory")), (1.0, 1.0), "{text}");
        assert_eq!(samples.sum("jobwheel_executor_callback_spool_batches", &[]), 0.0, "{text}");
        assert!(samples.has("jobwheel_executor_job_queue_depth"), "job 7's thread is still alive: {text}");
    }
}
