//! WASI 0.2 components through the runtime: the `http-check` sample — in Rust (built for
//! `wasm32-wasip2` here), Python (componentize-py) and JavaScript (componentize-js), the latter
//! two built by `scripts/test.sh` into `JOBWHEEL_GUEST_COMPONENTS` — calling a local HTTP
//! server under network policies.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_wasm::{
    FailureKind, LoadSource, NetGrant, NetLimits, NetPolicy, Outcome, RunInput, RunReport, Runtime,
};
use tokio_util::sync::CancellationToken;

use crate::http_server::TestServer;
use crate::sample_jobs::sample_component;
use crate::support::{Fixture, Log, config, input, load, load_with_source};

pub(crate) fn runtime_allowing(entries: &[&str]) -> Runtime {
    let mut config = config();
    config.max_memory_bytes = 64 << 20;
    config.http_allow = Arc::new(NetPolicy::parse(entries).expect("executor allow-list"));
    Runtime::new(config).expect("runtime")
}

pub(crate) fn grant(entries: &[&str]) -> NetGrant {
    NetGrant { policy: Arc::new(NetPolicy::parse(entries).expect("policy")), limits: NetLimits::default() }
}

/// `http-check` in every language available: Rust always; Python and JavaScript from
/// `JOBWHEEL_GUEST_COMPONENTS` (required under `CI`, where the suites must run).
pub(crate) fn http_checks() -> Vec<(&'static str, Fixture)> {
    let mut all = vec![("rust", sample_component("http-check"))];
    all.extend(guest_components("http-check.wasm"));
    all
}

/// The Python and JavaScript builds of sample component `file` from `JOBWHEEL_GUEST_COMPONENTS`
/// (required under `CI`, where the suites must run; none without it elsewhere).
pub(crate) fn guest_components(file: &str) -> Vec<(&'static str, Fixture)> {
    let Some(dir) = std::env::var_os("JOBWHEEL_GUEST_COMPONENTS") else {
        assert!(std::env::var_os("CI").is_none(), "JOBWHEEL_GUEST_COMPONENTS must be set in CI");
        return Vec::new();
    };
    ["python", "js"]
        .into_iter()
        .map(|language| {
            let path = std::path::Path::new(&dir).join(language).join(file);
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (language, Fixture::from_bytes(bytes))
        })
        .collect()
}

/// Runs `http-check` against `url` with `network`, the secret token `tok-123` and `vars`.
async fn check(
    runtime: &Runtime,
    url: &str,
    network: Option<NetGrant>,
    vars: &[(&str, &str)],
) -> (RunReport, Log) {
    check_with(runtime, &sample_component("http-check"), url, network, vars).await
}

async fn check_with(
    runtime: &Runtime,
    component: &Fixture,
    url: &str,
    network: Option<NetGrant>,
    vars: &[(&str, &str)],
) -> (RunReport, Log) {
    let module = load(runtime, component).await;
    assert!(module.is_component());
    let mut env: Vec<(String, String)> =
        vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    env.push(("CHECK_URL".to_owned(), url.to_owned()));
    env.push(("CHECK_TOKEN".to_owned(), "tok-123".to_owned()));
    let input = RunInput {
        env,
        masked: vec!["tok-123".to_owned()],
        network,
        timeout: Some(Duration::from_secs(60)),
        ..input("")
    };
    let log = Log::new();
    let report = runtime.run(&module, input, log.sink(), CancellationToken::new()).await;
    (report, log)
}

fn failure(report: &RunReport) -> &str {
    match &report.outcome {
        Outcome::Failed { kind: FailureKind::Exit(1), message } => message,
        other => panic!("expected exit 1, got {other:?}"),
    }
}

/// One test for both verdicts so each language's component is compiled once (the Python and
/// JavaScript ones take tens of seconds); the compiled artifacts are kept in the test target
/// directory, so a rerun loads them from disk.
#[tokio::test]
async fn every_language_calls_an_allowed_origin_with_its_secret_and_is_refused_elsewhere() {
    let mut config = config();
    config.max_memory_bytes = 64 << 20;
    config.http_allow = Arc::new(NetPolicy::parse(&["http://127.0.0.1:*"]).expect("allow-list"));
    config.cache_dir = Some(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache"));
    let runtime = Runtime::new(config).expect("runtime");
    for (language, component) in http_checks() {
        let server = TestServer::start().await;
        let origin = format!("http://127.0.0.1:{}", server.port);
        let url = server.url("/ok?key=do-not-log");
        let (report, log) = check_with(&runtime, &component, &url, Some(grant(&[&origin])), &[]).await;
        let lines = log.lines();
        let ok = Outcome::Succeeded { message: Some("status=200".to_owned()) };
        assert_eq!(report.outcome, ok, "{language}: {lines:?}");
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{language}");
        assert_eq!(seen[0].authorization.as_deref(), Some("Bearer tok-123"), "{language}");
        let line = format!("[jobwheel] http GET {origin}/ok -> 200, 4 bytes");
        assert_eq!(log.count(&line), 1, "{language}: {lines:?}");
        let host_lines: Vec<&String> = lines.iter().filter(|l| l.starts_with("[jobwheel] http")).collect();
        assert!(
            !host_lines.iter().any(|l| l.contains("do-not-log")),
            "{language}: no query string in the line"
        );
        assert_eq!(log.count("tok-123"), 0, "{language}");

        let policy = Some(grant(&["https://api.example.com"]));
        let (report, log) = check_with(&runtime, &component, &server.url("/ok"), policy, &[]).await;
        let message = failure(&report);
        if language == "rust" {
            assert!(message.contains("HttpRequestDenied"), "the guest sees the error code: {message}");
        }
        assert_eq!(log.count("is not in the job's network policy"), 1, "{language}: {:?}", log.lines());
        assert_eq!(server.seen().len(), 1, "{language}: the refused request never left");
    }
}

/// A secret that is part of a URL — a webhook path, a bot token, the whole URL — is masked in
/// the host's request lines too, allowed or denied (security review M4).
#[tokio::test]
async fn a_secret_in_the_request_url_is_masked_in_every_host_line() {
    let server = TestServer::start().await;
    let runtime = runtime_allowing(&["http://127.0.0.1:*", "https://denied.example"]);
    let origin = format!("http://127.0.0.1:{}", server.port);
    let allowed = server.url("/hooks/tok-123/send");
    let (report, log) = check(&runtime, &allowed, Some(grant(&[&origin])), &[]).await;
    assert!(matches!(report.outcome, Outcome::Succeeded { .. }), "{:?}", log.lines());
    assert_eq!(server.seen().len(), 1, "the request went out with the secret in its path");
    let line = format!("[jobwheel] http GET {origin}/hooks/****/send -> 200, 4 bytes");
    assert_eq!(log.count(&line), 1, "{:?}", log.lines());
    assert_eq!(log.count("tok-123"), 0, "{:?}", log.lines());

    let (_, log) =
        check(&runtime, "https://denied.example/bot/tok-123/x", Some(grant(&[&origin])), &[]).await;
    assert_eq!(log.count("denied"), 1, "{:?}", log.lines());
    assert_eq!(log.count("tok-123"), 0, "{:?}", log.lines());
}

/// Each wait of a request is capped, and so is the whole request (five caps), against local
/// servers that never answer, stall mid-body, drip a byte just inside every cap, or never
/// accept the connection.
#[tokio::test]
async fn connect_first_byte_idle_and_total_deadlines_end_slow_requests() {
    let server = TestServer::start().await;
    let runtime = runtime_allowing(&["http://127.0.0.1:*"]);
    let origin = format!("http://127.0.0.1:{}", server.port);
    let mut network = grant(&[&origin]);
    network.limits.request_timeout = Duration::from_secs(1);
    for (path, expected) in [
        ("/silent", "no response within 1s".to_owned()),
        ("/stall", "200, 10 bytes".to_owned()),
        ("/drip", "the request's total deadline of 4s passed".to_owned()),
    ] {
        let started = std::time::Instant::now();
        let (report, log) = check(&runtime, &server.url(path), Some(network.clone()), &[]).await;
        let took = started.elapsed();
        assert!(matches!(report.outcome, Outcome::Failed { .. }), "{path}: {:?}", report.outcome);
        assert_eq!(log.count(&expected), 1, "{path}: {:?}", log.lines());
        assert!(took < Duration::from_secs(10), "{path} held the run for {took:?}");
    }
    let stalled = check(&runtime, &server.url("/stall"), Some(network.clone()), &[]).await.1;
    assert_eq!(stalled.count("(no data for 1s)"), 1, "{:?}", stalled.lines());

    // A server that never completes the handshake: its accept queue is full and nobody accepts,
    // so the kernel drops further SYNs and `connect` waits. The connect wait is capped too.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().expect("address")).expect("bind");
    let full = socket.listen(0).expect("listen");
    let address = full.local_addr().expect("address");
    let mut queued = Vec::new();
    for _ in 0..8 {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(Duration::from_millis(200), tokio::net::TcpStream::connect(address)).await
        {
            queued.push(stream);
        }
    }
    assert!(!queued.is_empty(), "the queue took some connections before it filled");
    let mut unanswered = grant(&[&format!("http://{address}")]);
    unanswered.limits.request_timeout = Duration::from_secs(1);
    let started = std::time::Instant::now();
    let (report, log) = check(&runtime, &format!("http://{address}/"), Some(unanswered), &[]).await;
    assert!(matches!(report.outcome, Outcome::Failed { .. }), "{:?}", report.outcome);
    assert_eq!(log.count(&format!("connecting to {address} took over 1s")), 1, "{:?}", log.lines());
    assert!(started.elapsed() < Duration::from_secs(10), "held the run for {:?}", started.elapsed());
    drop((queued, full));
}

#[tokio::test]
async fn no_policy_means_no_network() {
    let server = TestServer::start().await;
    let runtime = runtime_allowing(&["http://127.0.0.1:*"]);
    let (report, log) = check(&runtime, &server.url("/ok"), None, &[]).await;
    failure(&report);
    assert_eq!(log.count("denied"), 1, "{:?}", log.lines());
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn the_executor_allow_list_bounds_every_policy() {
    let server = TestServer::start().await;
    let runtime = runtime_allowing(&[]);
    let origin = format!("http://127.0.0.1:{}", server.port);
    let (report, log) = check(&runtime, &server.url("/ok"), Some(grant(&[&origin])), &[]).await;
    failure(&report);
    assert_eq!(log.count("not in the executor's allow-list"), 1, "{:?}", log.lines());

    // The cloud metadata address, named by the job but not by the operator.
    let runtime = runtime_allowing(&["http://127.0.0.1:*"]);
    let (report, log) = check(
        &runtime,
        "http://169.254.169.254/latest/meta-data",
        Some(grant(&["http://169.254.169.254"])),
        &[],
    )
    .await;
    failure(&report);
    assert_eq!(log.count("http GET http://169.254.169.254/latest/meta-data denied"), 1, "{:?}", log.lines());
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_unless_the_address_is_granted() {
    let server = TestServer::start().await;
    let runtime = runtime_allowing(&["http://localhost:*", "127.0.0.0/8"]);
    let url = format!("http://localhost:{}/ok", server.port);
    let origin = format!("http://localhost:{}", server.port);
    let (report, log) = check(&runtime, &url, Some(grant(&[&origin])), &[]).await;
    assert!(failure(&report).contains("DestinationIpProhibited"), "{report:?}");
    assert_eq!(log.count("resolved to 127.0.0.1, a loopback address"), 1, "{:?}", log.lines());
    assert!(server.seen().is_empty());
    // The run's report counts it as denied (the executor's `wasm_http_requests` metric).
    assert_eq!((report.stats.http_allowed, report.stats.http_denied), (0, 1));

    let (report, log) = check(&runtime, &url, Some(grant(&[&origin, "127.0.0.1"])), &[]).await;
    assert_eq!(
        report.outcome,
        Outcome::Succeeded { message: Some("status=200".to_owned()) },
        "{:?}",
        log.lines()
    );
    assert_eq!(server.seen().len(), 1);
    assert_eq!((report.stats.http_allowed, report.stats.http_denied), (1, 0));
}

#[tokio::test]
async fn a_redirect_is_not_followed_by_the_host_and_its_next_hop_is_checked() {
    let allowed = TestServer::start().await;
    let elsewhere = TestServer::start().await;
    let runtime = runtime_allowing(&["http://127.0.0.1:*"]);
    let origin = format!("http://127.0.0.1:{}", allowed.port);
    let url = allowed.url(&format!("/redirect?to={}", elsewhere.url("/ok")));
    let (report, log) = check(&runtime, &url, Some(grant(&[&origin])), &[]).await;
    failure(&report);
    assert_eq!(log.count(&format!("http GET {origin}/redirect -> 302")), 1, "{:?}", log.lines());
    assert_eq!(log.count(&format!("http://127.0.0.1:{}/ok denied", elsewhere.port)), 1, "{:?}", log.lines());
    assert!(elsewhere.seen().is_empty(), "the host never followed the redirect");
    assert_eq!(
        (report.stats.http_allowed, report.stats.http_denied),
        (1, 1),
        "the 302 went out, the next hop did not"
    );
}

#[tokio::test]
async fn requests_and_response_bytes_are_limited_per_run() {
    let server = TestServer::start().await;
    let runtime = runtime_allowing(&["http://127.0.0.1:*"]);
    let origin = format!("http://127.0.0.1:{}", server.port);
    let mut limited = grant(&[&origin]);
    limited.limits.max_requests = 2;
    let (report, log) =
        check(&runtime, &server.url("/ok"), Some(limited.clone()), &[("CHECK_REPEAT", "3")]).await;
    failure(&report);
    assert_eq!(log.count(&format!("[jobwheel] http GET {origin}/ok -> 200")), 2, "{:?}", log.lines());
    assert_eq!(log.count("limit of 2 requests is reached"), 1, "{:?}", log.lines());
    assert_eq!(server.seen().len(), 2);

    limited.limits.max_response_bytes = 1024;
    let (report, log) = check(&runtime, &server.url("/big"), Some(limited), &[]).await;
    failure(&report);
    assert_eq!(log.count("response byte limit is reached"), 1, "{:?}", log.lines());
}

#[tokio::test]
async fn a_component_reports_its_error_as_exit_1_and_comes_back_from_the_disk_cache() {
    let cache = tempfile::tempdir().expect("temp dir");
    let mut config = config();
    config.max_memory_bytes = 64 << 20;
    config.cache_dir = Some(cache.path().to_owned());
    let component = sample_component("http-check");
    let first = Runtime::new(config.clone()).expect("runtime");
    let (_, source) = load_with_source(&first, &component).await;
    assert_eq!(source, LoadSource::Compiled);

    let second = Runtime::new(config).expect("runtime");
    let (module, source) = load_with_source(&second, &component).await;
    assert_eq!(source, LoadSource::Disk);
    assert!(module.is_component());
    let log = Log::new();
    let report = second.run(&module, input(""), log.sink(), CancellationToken::new()).await;
    assert!(failure(&report).contains("set the variable CHECK_URL"), "{report:?}");
    assert_eq!(log.count("[jobwheel] fuel used"), 1, "{:?}", log.lines());
}

/// The sandbox probe built as a component: files, host environment, processes and every socket
/// (`wasi:sockets` is linked, every use denied) stay out of reach even for a job whose network
/// policy allows the very address it tries over TCP; only `wasi:http` goes through the policy.
#[tokio::test]
async fn a_component_reaches_nothing_but_wasi_http() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
    let address = listener.local_addr().expect("address");
    let runtime = runtime_allowing(&["http://127.0.0.1:*"]);
    let probe = load(&runtime, &sample_component("sandbox-probe")).await;
    assert!(probe.is_component());
    let input = RunInput {
        network: Some(grant(&[&format!("http://{address}")])),
        timeout: Some(Duration::from_secs(60)),
        ..input(&address.to_string())
    };
    let log = Log::new();
    let report = runtime.run(&probe, input, log.sink(), CancellationToken::new()).await;
    assert_eq!(
        report.outcome,
        Outcome::Succeeded { message: Some("all 11 probes were denied".to_owned()) },
        "{:?}",
        log.lines()
    );
    assert_eq!(log.count(&format!("denied: TCP connect {address}")), 1, "{:?}", log.lines());
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "nothing connected to the listener");
}

/// Security review L5, from the guest's side: a module that loops on requests its policy
/// refuses makes the host write a note for each — and those notes count against the run's
/// output budget, so the log stays bounded (the guest itself prints nothing).
#[tokio::test]
async fn a_guest_looping_on_refused_requests_stays_within_the_output_budget() {
    let mut config = config();
    config.max_memory_bytes = 64 << 20;
    config.max_output_bytes = 8 << 10;
    config.http_allow = Arc::new(NetPolicy::parse(&["https://allowed.example"]).expect("allow-list"));
    let runtime = Runtime::new(config).expect("runtime");
    let mut network = grant(&["https://allowed.example"]);
    network.limits.max_requests = 100_000;
    let vars = [("CHECK_REPEAT", "2000"), ("CHECK_KEEP_GOING", "1")];
    let (report, log) = check(&runtime, "https://refused.example/x", Some(network), &vars).await;
    assert!(report.stats.output_truncated, "{:?}", report.stats);
    let forwarded: usize = log.lines().iter().map(|l| l.len() + 1).sum();
    assert!(forwarded <= (8 << 10) + 1024, "{forwarded} bytes of log for an 8 KiB budget");
    assert!(log.count("denied") < 2000, "not one note per refusal: {}", log.count("denied"));
}
