//! The flight recorder: a run recorded with its journal and run again from it comes out the
//! same — guest output, outcome and fuel — for WAT modules that read clocks and random bytes
//! and for the Rust sample jobs (preview1 modules and a component); a changed module replayed
//! shows the calls the journal could not answer; secrets are journaled by digest only and a
//! changed one is never opened; a component's HTTP exchanges, in every guest language, are
//! answered from the journal with no request leaving, and a journal past its cap refuses replay.

use std::sync::Arc;

use std::time::Duration;

use jobwheel_wasm::{
    EnvEntry, Flight, FlightReport, HttpAnswer, Journal, LoadedModule, Outcome, RunInput, RunReport, Runtime,
};
use tokio_util::sync::CancellationToken;

use crate::components::{grant, guest_components, http_checks, runtime_allowing};
use crate::fixtures;
use crate::http_server::TestServer;
use crate::sample_jobs::{sample, sample_component};
use crate::support::{Fixture, Log, input, load, runtime};

const KEY: &[u8] = b"the executor's digest key";

async fn run(runtime: &Runtime, module: &LoadedModule, input: RunInput) -> (RunReport, Log) {
    let log = Log::new();
    let report = runtime.run(module, input, log.sink(), CancellationToken::new()).await;
    (report, log)
}

fn recording(input: RunInput) -> RunInput {
    RunInput { flight: Flight::Record { secret_key: KEY.to_vec(), max_body_bytes: 1 << 20 }, ..input }
}

fn journal_of(report: &RunReport) -> Arc<Journal> {
    match &report.flight {
        Some(FlightReport::Recorded(journal)) => Arc::new((**journal).clone()),
        other => panic!("expected a recorded journal, got {other:?}"),
    }
}

fn unanswered(report: &RunReport) -> Vec<String> {
    match &report.flight {
        Some(FlightReport::Replayed { unanswered }) => unanswered.clone(),
        other => panic!("expected a replay report, got {other:?}"),
    }
}

/// Records `fixture` with `input`, replays its journal, and checks the two runs agree.
async fn record_and_replay(runtime: &Runtime, fixture: &Fixture, input: RunInput) -> Vec<String> {
    let module = load(runtime, fixture).await;
    let (recorded, recorded_log) = run(runtime, &module, recording(input)).await;
    let journal = journal_of(&recorded);
    assert_eq!(journal.not_replayable, None);
    let (replayed, replayed_log) = run(runtime, &module, journal.replay_input(KEY, &[]).unwrap()).await;
    assert_eq!(replayed.outcome, recorded.outcome);
    assert_eq!(replayed_log.guest_lines(), recorded_log.guest_lines());
    assert_eq!(
        replayed.stats.fuel_used, recorded.stats.fuel_used,
        "the same work, instruction for instruction"
    );
    assert_eq!(replayed.workflow_output, recorded.workflow_output);
    assert_eq!(unanswered(&replayed), Vec::<String>::new());
    recorded_log.guest_lines()
}

#[tokio::test]
async fn a_run_that_reads_clocks_and_random_bytes_replays_byte_for_byte() {
    let runtime = runtime();
    let fixture = fixtures::clock_and_random(3);
    let first = record_and_replay(&runtime, &fixture, input("")).await;
    // Without the journal the same module prints something else: the test can fail.
    let module = load(&runtime, &fixture).await;
    let (plain, again) = run(&runtime, &module, input("")).await;
    assert_eq!(first.len(), 3, "{:?} {:?}", plain.outcome, again.lines());
    assert_ne!(again.guest_lines(), first, "clocks and random bytes differ between two plain runs");

    // The journal holds each answer once, in order.
    let (recorded, _) = run(&runtime, &module, recording(input(""))).await;
    let journal = journal_of(&recorded);
    assert_eq!((journal.wall.len(), journal.monotonic.len(), journal.random.len()), (3, 3, 48));
}

#[tokio::test]
async fn the_rust_sample_jobs_replay_byte_for_byte() {
    let runtime = runtime();
    for name in ["hello", "sha256", "sharding", "failing"] {
        let lines = record_and_replay(&runtime, &sample(name), input("10")).await;
        assert!(!lines.is_empty(), "{name} printed nothing");
    }
    let lines = record_and_replay(&runtime, &sample_component("sandbox-probe"), input("")).await;
    assert!(lines.iter().any(|l| l.starts_with("denied: ")), "{lines:?}");
}

#[tokio::test]
async fn the_workflow_steps_replay_byte_for_byte_with_their_context_and_item() {
    let runtime = runtime();
    let mut steps = vec![("rust", sample("workflow-step"))];
    steps.extend(guest_components("workflow-step.wasm"));
    for (language, step) in steps {
        let node = RunInput { workflow_context: Some(r#"{"day":"2026-12-07"}"#.to_owned()), ..input("4") };
        let lines = record_and_replay(&runtime, &step, node).await;
        assert!(!lines.is_empty(), "{language}");
        let item = RunInput {
            workflow_context: Some("{}".to_owned()),
            workflow_item: Some("21".to_owned()),
            ..input("")
        };
        record_and_replay(&runtime, &step, item).await;
    }
}

#[tokio::test]
async fn a_changed_module_replayed_shows_the_calls_the_journal_cannot_answer() {
    let runtime = runtime();
    let original = load(&runtime, &fixtures::clock_and_random(1)).await;
    let (recorded, recorded_log) = run(&runtime, &original, recording(input(""))).await;
    let journal = journal_of(&recorded);

    let changed = load(&runtime, &fixtures::clock_and_random(2)).await;
    let (replayed, log) = run(&runtime, &changed, journal.replay_input(KEY, &[]).unwrap()).await;
    let lines = log.guest_lines();
    assert_eq!(lines[0], recorded_log.guest_lines()[0], "the first round is answered from the journal");
    assert_ne!(lines[1], lines[0]);
    assert_eq!(
        unanswered(&replayed),
        vec![
            "wall clock reads: 1 past the 1 recorded",
            "monotonic clock reads: 1 past the 1 recorded",
            "secure random bytes: 16 past the 16 recorded",
        ]
    );
}

#[tokio::test]
async fn a_secret_is_journaled_by_digest_and_a_changed_one_is_never_opened() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::dump_args_and_env()).await;
    let secret = "s3cret-value";
    let given = RunInput {
        env: vec![("API_KEY".to_owned(), secret.to_owned()), ("REGION".to_owned(), "eu".to_owned())],
        masked: vec![secret.to_owned()],
        ..input("p")
    };
    let (recorded, recorded_log) = run(&runtime, &module, recording(given)).await;
    let journal = journal_of(&recorded);
    let text = serde_json::to_string(&*journal).unwrap();
    assert!(!text.contains(secret), "the value is not in the journal: {text}");
    assert!(matches!(&journal.inputs.env[0], EnvEntry::Secret { name, .. } if name == "API_KEY"));
    assert!(matches!(&journal.inputs.env[1], EnvEntry::Plain { value, .. } if value == "eu"));

    let changed = journal.replay_input(KEY, &[("API_KEY".to_owned(), "rotated".to_owned())]).unwrap_err();
    assert!(
        changed.contains("API_KEY") && changed.contains("changed") && !changed.contains("rotated"),
        "{changed}"
    );
    let gone = journal.replay_input(KEY, &[]).unwrap_err();
    assert!(gone.contains("API_KEY") && gone.contains("gone"), "{gone}");
    let other_key = journal.replay_input(b"another key", &[("API_KEY".to_owned(), secret.to_owned())]);
    assert!(other_key.is_err(), "a digest under another key does not match");

    let replay = journal.replay_input(KEY, &[("API_KEY".to_owned(), secret.to_owned())]).unwrap();
    let (_, replayed_log) = run(&runtime, &module, replay).await;
    assert_eq!(replayed_log.guest_lines(), recorded_log.guest_lines());
    assert!(replayed_log.lines().iter().all(|l| !l.contains(secret)), "still masked");
}

/// `http-check`'s input: the URL it calls and its secret token.
fn http_input(url: &str, network: Option<jobwheel_wasm::NetGrant>) -> RunInput {
    RunInput {
        env: vec![("CHECK_URL".to_owned(), url.to_owned()), ("CHECK_TOKEN".to_owned(), "tok-123".to_owned())],
        masked: vec!["tok-123".to_owned()],
        network,
        timeout: Some(Duration::from_secs(60)),
        ..input("")
    }
}

fn secrets() -> Vec<(String, String)> {
    vec![("CHECK_TOKEN".to_owned(), "tok-123".to_owned())]
}

#[tokio::test]
async fn every_languages_http_exchange_replays_without_the_network() {
    let server = TestServer::start().await;
    let origin = format!("http://127.0.0.1:{}", server.port);
    let runtime = runtime_allowing(&[&origin]);
    for (language, component) in http_checks() {
        let module = load(&runtime, &component).await;
        let before = server.seen().len();
        let given = recording(http_input(&server.url("/ok"), Some(grant(&[&origin]))));
        let (recorded, recorded_log) = run(&runtime, &module, given).await;
        assert!(
            matches!(recorded.outcome, Outcome::Succeeded { .. }),
            "{language}: {:?}",
            recorded_log.lines()
        );
        assert_eq!(server.seen().len(), before + 1, "{language}: the recorded run called the server once");
        let journal = journal_of(&recorded);
        assert_eq!(journal.not_replayable, None, "{language}");
        assert_eq!(journal.http.len(), 1, "{language}: {:?}", journal.http);
        assert!(matches!(&journal.http[0].answer, HttpAnswer::Response { status: 200, complete: true, .. }));
        let text = serde_json::to_string(&*journal).unwrap();
        assert!(!text.contains("tok-123"), "{language}: the secret is not in the journal");

        // The replay reaches nothing: the server hears no request, and the guest sees the same.
        let (replayed, replayed_log) =
            run(&runtime, &module, journal.replay_input(KEY, &secrets()).unwrap()).await;
        assert_eq!(server.seen().len(), before + 1, "{language}: the replay sent a request");
        assert_eq!(replayed.outcome, recorded.outcome, "{language}");
        assert_eq!(replayed_log.guest_lines(), recorded_log.guest_lines(), "{language}");
        assert_eq!(replayed.stats.fuel_used, recorded.stats.fuel_used, "{language}");
        assert_eq!(unanswered(&replayed), Vec::<String>::new(), "{language}");
        assert_eq!(
            replayed_log.count("replayed from the journal"),
            1,
            "{language}: {:?}",
            replayed_log.lines()
        );
    }
}

/// A component that races a timer against a body arriving in chunks prints what the timing
/// gave it ("waiting" while the server paused); its replay answers every poll, every
/// non-blocking read and the trailers from the journal and prints the same — and the same
/// journal without its readiness (a format-1 journal) does not, so the test can fail.
#[tokio::test]
async fn a_streamed_body_replays_its_polls_reads_and_trailers() {
    let server = TestServer::start().await;
    let origin = format!("http://127.0.0.1:{}", server.port);
    let runtime = runtime_allowing(&[&origin]);
    let module = load(&runtime, &sample_component("http-stream")).await;
    let given = RunInput {
        network: Some(grant(&[&origin])),
        timeout: Some(Duration::from_secs(60)),
        ..input(&server.url("/chunks"))
    };
    let (recorded, recorded_log) = run(&runtime, &module, recording(given)).await;
    let lines = recorded_log.guest_lines();
    assert!(matches!(recorded.outcome, Outcome::Succeeded { .. }), "{:?}", recorded_log.lines());
    assert!(lines.iter().any(|l| l == "waiting"), "the server's pauses outlast the 5 ms tick: {lines:?}");
    assert!(lines.iter().any(|l| l == "trailer x-digest: sha256=5e1f"), "{lines:?}");
    let bytes: usize = lines
        .iter()
        .filter_map(|l| l.strip_prefix("chunk: ")?.strip_suffix(" bytes")?.parse::<usize>().ok())
        .sum();
    assert_eq!(bytes, 43, "{lines:?}");
    let journal = journal_of(&recorded);
    assert_eq!(journal.not_replayable, None);
    assert!(!journal.polls.is_empty() && !journal.reads.is_empty());
    assert!(
        matches!(&journal.http[0].answer, HttpAnswer::Response { trailers: Some(t), complete: true, .. } if t.len() == 1),
        "{:?}",
        journal.http
    );
    let heard = server.seen().len();

    let (replayed, replayed_log) = run(&runtime, &module, journal.replay_input(KEY, &[]).unwrap()).await;
    assert_eq!(server.seen().len(), heard, "the replay sent a request");
    assert_eq!(replayed.outcome, recorded.outcome);
    assert_eq!(replayed_log.guest_lines(), lines);
    assert_eq!(replayed.stats.fuel_used, recorded.stats.fuel_used);
    assert_eq!(unanswered(&replayed), Vec::<String>::new());

    // Without the readiness the journal holds, the body is all there at once: no "waiting".
    let unscripted = Journal { version: 1, polls: Vec::new(), reads: Vec::new(), ..(*journal).clone() };
    let (_, plain_log) = run(&runtime, &module, Arc::new(unscripted).replay_input(KEY, &[]).unwrap()).await;
    assert!(!plain_log.guest_lines().iter().any(|l| l == "waiting"), "{:?}", plain_log.lines());
    assert_ne!(plain_log.guest_lines(), lines);
}

#[tokio::test]
async fn a_refused_request_and_a_failed_one_replay_as_they_happened() {
    let server = TestServer::start().await;
    let runtime = runtime_allowing(&["http://127.0.0.1:*"]);
    let module = load(&runtime, &sample_component("http-check")).await;
    // No policy: refused. A closed port: failed.
    let closed = format!("http://127.0.0.1:{}/gone", crate::http_server::closed_port());
    for (url, network) in [(server.url("/ok"), None), (closed, Some(grant(&["http://127.0.0.1:*"])))] {
        let (recorded, recorded_log) = run(&runtime, &module, recording(http_input(&url, network))).await;
        let journal = journal_of(&recorded);
        assert!(
            matches!(journal.http[0].answer, HttpAnswer::Denied { .. } | HttpAnswer::Failed { .. }),
            "{:?}",
            journal.http
        );
        let (replayed, replayed_log) =
            run(&runtime, &module, journal.replay_input(KEY, &secrets()).unwrap()).await;
        assert_eq!(replayed.outcome, recorded.outcome, "{url}");
        assert_eq!(replayed_log.guest_lines(), recorded_log.guest_lines(), "{url}");
        assert_eq!(replayed.stats.fuel_used, recorded.stats.fuel_used, "{url}");
    }
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn a_journal_past_its_cap_refuses_replay_with_the_reason() {
    let server = TestServer::start().await;
    let origin = format!("http://127.0.0.1:{}", server.port);
    let runtime = runtime_allowing(&[&origin]);
    let module = load(&runtime, &sample_component("http-check")).await;
    let given = RunInput {
        flight: Flight::Record { secret_key: KEY.to_vec(), max_body_bytes: 1 },
        ..http_input(&server.url("/ok"), Some(grant(&[&origin])))
    };
    let (recorded, _) = run(&runtime, &module, given).await;
    let journal = journal_of(&recorded);
    let why = journal.not_replayable.clone().expect("marked not replayable");
    assert!(why.contains("cap of 1 body bytes"), "{why}");
    let refused = journal.replay_input(KEY, &secrets()).unwrap_err();
    assert!(refused.contains("not replayable") && refused.contains("cap"), "{refused}");
}

#[tokio::test]
async fn a_module_with_shared_memory_is_refused() {
    let runtime = runtime();
    let fixture = fixtures::shared_memory();
    let bytes = fixture.bytes.clone();
    let error = runtime.module(&fixture.digest, || async move { Ok(bytes) }).await.expect_err("no threads");
    assert!(format!("{error}").contains("shared"), "{error}");
}
