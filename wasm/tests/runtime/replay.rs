//! The flight recorder: a run recorded with its journal and run again from it comes out the
//! same — guest output, outcome and fuel — for WAT modules that read clocks and random bytes
//! and for the Rust sample jobs (preview1 modules and a component); a changed module replayed
//! shows the calls the journal could not answer; secrets are journaled by digest only and a
//! changed one is never opened; a run that made HTTP requests says it is not replayable.

use std::sync::Arc;

use jobwheel_wasm::{EnvEntry, Flight, FlightReport, Journal, LoadedModule, RunInput, RunReport, Runtime};
use tokio_util::sync::CancellationToken;

use crate::fixtures;
use crate::sample_jobs::{sample, sample_component};
use crate::support::{Fixture, Log, input, load, runtime};

const KEY: &[u8] = b"the executor's digest key";

async fn run(runtime: &Runtime, module: &LoadedModule, input: RunInput) -> (RunReport, Log) {
    let log = Log::new();
    let report = runtime.run(module, input, log.sink(), CancellationToken::new()).await;
    (report, log)
}

fn recording(input: RunInput) -> RunInput {
    RunInput { flight: Flight::Record { secret_key: KEY.to_vec() }, ..input }
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

#[tokio::test]
async fn a_run_that_made_http_requests_is_not_replayable_yet() {
    let runtime = runtime();
    let module = load(&runtime, &sample_component("http-check")).await;
    let given =
        RunInput { env: vec![("CHECK_URL".to_owned(), "http://127.0.0.1:9/never".to_owned())], ..input("") };
    let (recorded, _) = run(&runtime, &module, recording(given)).await;
    let journal = journal_of(&recorded);
    let why = journal.not_replayable.clone().expect("marked not replayable");
    assert!(why.contains("HTTP"), "{why}");
    let refused = journal.replay_input(KEY, &[]).unwrap_err();
    assert!(refused.contains("not replayable") && refused.contains("HTTP"), "{refused}");
}

#[tokio::test]
async fn a_module_with_shared_memory_is_refused() {
    let runtime = runtime();
    let fixture = fixtures::shared_memory();
    let bytes = fixture.bytes.clone();
    let error = runtime.module(&fixture.digest, || async move { Ok(bytes) }).await.expect_err("no threads");
    assert!(format!("{error}").contains("shared"), "{error}");
}
