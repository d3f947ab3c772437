//! Golden wire-shape tests: upstream xxl-job request/response bodies (Gen A 2.x `{code,msg,content}`,
//! Gen B 3.3+ `{code,msg,data}`, Gen C master) pinned as fixtures under `tests/golden/`.
//!
//! Every fixture is a raw HTTP body exactly as an upstream peer sends it (or, for `jobwheel_*`,
//! as we send it). Each case says what the fixture must decode into and whether we also send that
//! shape; if we do, our encoding must equal the fixture — as a JSON value, or byte for byte
//! (which also pins upstream's key order) for single-line fixtures marked [`Emit::Bytes`].
//! Naming: `gen_a_*` / `gen_b_*` / `gen_c_*` = that generation's shape (Gen A shapes are also what
//! Gen B sends unless a `gen_b_*` variant exists), `lenient_*` = Gson-style sloppy input,
//! `jobwheel_*` = our own shapes.

use std::fmt::Debug;
use std::path::PathBuf;

use jobwheel_protocol::admin_api::paths as admin_paths;
use jobwheel_protocol::envelope::{AckEnvelope, Envelope, FAIL_CODE, SUCCESS_CODE};
use jobwheel_protocol::executor_api::paths as executor_paths;
use jobwheel_protocol::{
    ACCESS_TOKEN_HEADER, BEAT_TIMEOUT_SECS, BlockStrategy, CallbackBody, DEAD_TIMEOUT_SECS, GlueType,
    HandleCallbackParam, HandleCode, IdleBeatParam, KillParam, LogParam, LogResult, REGISTRY_GROUP_EXECUTOR,
    RegistryParam, TriggerParam, WasmGrant, WasmModuleRef,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Fixture helpers
// ---------------------------------------------------------------------------------------------

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

/// The fixture's bytes as text.
fn raw(name: &str) -> String {
    let path = fixture_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
}

/// The fixture parsed as a generic JSON value.
fn value(name: &str) -> Value {
    serde_json::from_str(&raw(name)).unwrap_or_else(|e| panic!("fixture {name} is not valid JSON: {e}"))
}

/// The fixture decoded into one of our wire types.
fn decode<T: DeserializeOwned>(name: &str) -> Result<T, String> {
    serde_json::from_str(&raw(name))
        .map_err(|e| format!("{name}: does not decode into {}: {e}", std::any::type_name::<T>()))
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Whether, and how strictly, we must produce a case's shape ourselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emit {
    /// Only received from upstream peers; we never send it.
    No,
    /// We send it: our encoding must be JSON-value-equal to the fixture.
    Value,
    /// We send it: our encoding must equal the single-line fixture byte for byte.
    Bytes,
}

/// One golden case: `fixture` decodes into `want`; if `emit` says so, `want` encodes to `fixture`.
struct Case<T> {
    fixture: &'static str,
    want: T,
    emit: Emit,
}

fn case<T>(fixture: &'static str, emit: Emit, want: T) -> Case<T> {
    Case { fixture, want, emit }
}

/// Runs every case and reports all mismatches at once.
fn check<T>(cases: Vec<Case<T>>)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let mut failures = Vec::new();
    for Case { fixture, want, emit } in &cases {
        match decode::<T>(fixture) {
            Ok(got) if got == *want => {}
            Ok(got) => {
                failures.push(format!("{fixture}: decoded wrongly\n  got:  {got:?}\n  want: {want:?}"))
            }
            Err(e) => failures.push(e),
        }
        let encoded = serde_json::to_string(want).expect("wire types always serialize");
        match emit {
            Emit::No => {}
            Emit::Value => {
                let ours: Value = serde_json::from_str(&encoded).expect("we emit valid JSON");
                let golden = value(fixture);
                if ours != golden {
                    failures.push(format!(
                        "{fixture}: what we send differs from upstream's shape\n  ours:\n{}\n  golden:\n{}",
                        pretty(&ours),
                        pretty(&golden)
                    ));
                }
            }
            Emit::Bytes => {
                let golden = raw(fixture);
                let golden = golden.trim_end_matches('\n');
                if encoded != golden {
                    failures.push(format!(
                        "{fixture}: what we send is not byte-identical to upstream's\n  ours:   {encoded}\n  golden: {golden}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} golden mismatch(es):\n\n{}", failures.len(), failures.join("\n\n"));
}

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().expect("a JSON object").keys().cloned().collect();
    keys.sort();
    keys
}

// ---------------------------------------------------------------------------------------------
// Expected values shared by several cases
// ---------------------------------------------------------------------------------------------

/// The `/run` body of `gen_a_run_request.json`: a plain BEAN trigger.
fn bean_trigger() -> TriggerParam {
    TriggerParam {
        job_id: 12,
        executor_handler: "demoJobHandler".into(),
        executor_params: "hello".into(),
        executor_block_strategy: "SERIAL_EXECUTION".into(),
        executor_timeout: 0,
        log_id: 4242,
        log_date_time: 1_700_000_000_123,
        glue_type: "BEAN".into(),
        glue_source: String::new(),
        glue_updatetime: 1_699_999_000_000,
        broadcast_index: 0,
        broadcast_total: 1,
        wasm_module: None,
        wasm_grant: None,
        priority: None,
        workflow_context: None,
        workflow_item: None,
        fire_key: None,
        scheduled_time: None,
        delivery_mode: None,
    }
}

fn callback(log_id: i64, log_date_tim: i64, handle_code: i32, handle_msg: &str) -> HandleCallbackParam {
    HandleCallbackParam {
        log_id,
        log_date_tim,
        handle_code,
        handle_msg: handle_msg.into(),
        output: None,
        flight: None,
    }
}

fn gen_a_callbacks() -> Vec<HandleCallbackParam> {
    vec![
        callback(4242, 1_700_000_000_123, 200, "hello, world"),
        callback(4243, 1_700_000_000_456, 500, "script exit value(1) is failed"),
    ]
}

fn sample_registry() -> RegistryParam {
    RegistryParam {
        registry_group: "EXECUTOR".into(),
        registry_key: "xxl-job-executor-sample".into(),
        registry_value: "http://10.0.0.5:9999/".into(),
        incarnation: None,
    }
}

/// The `LogResult` carried by `gen_a_log_response.json`, `gen_b_log_response.json` and
/// `jobwheel_log_response.json`.
fn two_lines() -> LogResult {
    LogResult {
        from_line_num: 1,
        to_line_num: 2,
        log_content: "2023-11-14 22:13:20 [demo]-[1]-[t] start\n2023-11-14 22:13:21 [demo]-[2]-[t] done\n"
            .into(),
        is_end: false,
    }
}

/// Upstream's 12 `TriggerParam` / `TriggerRequest` keys (§1.3), sorted.
const TRIGGER_PARAM_KEYS: [&str; 12] = [
    "broadcastIndex",
    "broadcastTotal",
    "executorBlockStrategy",
    "executorHandler",
    "executorParams",
    "executorTimeout",
    "glueSource",
    "glueType",
    "glueUpdatetime",
    "jobId",
    "logDateTime",
    "logId",
];

// ---------------------------------------------------------------------------------------------
// Requests to the executor: /run, /idleBeat, /kill, /log, /beat
// ---------------------------------------------------------------------------------------------

#[test]
fn run_requests() {
    check(vec![
        // What a Gen A/B admin sends for a BEAN job, and what our admin must send.
        case("gen_a_run_request.json", Emit::Bytes, bean_trigger()),
        // Gen A's Gson escapes HTML characters (`<` → \u003c, `=` → \u003d, `'` → \u0027 …).
        case(
            "gen_a_run_request_glue_html_escaped.json",
            Emit::Value,
            TriggerParam {
                job_id: 13,
                executor_handler: String::new(),
                executor_params: "x=1".into(),
                executor_block_strategy: "COVER_EARLY".into(),
                executor_timeout: 30,
                log_id: 4243,
                log_date_time: 1_700_000_000_456,
                glue_type: "GLUE_PYTHON".into(),
                glue_source: "print('a < b && c > d')\n".into(),
                glue_updatetime: 1_699_999_000_001,
                broadcast_index: 0,
                broadcast_total: 1,
                wasm_module: None,
                wasm_grant: None,
                priority: None,
                workflow_context: None,
                workflow_item: None,
                fire_key: None,
                scheduled_time: None,
                delivery_mode: None,
            },
        ),
        // Gen B (disableHtmlEscaping): a sharded script job; the parameter keeps its space.
        case(
            "gen_b_run_request.json",
            Emit::Bytes,
            TriggerParam {
                job_id: 14,
                executor_handler: String::new(),
                executor_params: "a b".into(),
                executor_block_strategy: "DISCARD_LATER".into(),
                executor_timeout: 60,
                log_id: 4244,
                log_date_time: 1_700_000_000_789,
                glue_type: "GLUE_SHELL".into(),
                glue_source: "#!/bin/bash\necho \"a < b\" && exit 0\n".into(),
                glue_updatetime: 1_699_999_000_002,
                broadcast_index: 2,
                broadcast_total: 3,
                wasm_module: None,
                wasm_grant: None,
                priority: None,
                workflow_context: None,
                workflow_item: None,
                fire_key: None,
                scheduled_time: None,
                delivery_mode: None,
            },
        ),
        // Our GLUE_WASM extension: the 12 upstream keys plus `wasmModule`.
        case(
            "jobwheel_run_request_wasm.json",
            Emit::Bytes,
            TriggerParam {
                job_id: 15,
                executor_handler: String::new(),
                executor_params: "{\"n\":3}".into(),
                executor_block_strategy: "SERIAL_EXECUTION".into(),
                executor_timeout: 10,
                log_id: 4245,
                log_date_time: 1_700_000_001_000,
                glue_type: "GLUE_WASM".into(),
                glue_source: String::new(),
                glue_updatetime: 1_699_999_000_003,
                broadcast_index: 0,
                broadcast_total: 1,
                wasm_module: Some(WasmModuleRef {
                    digest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
                    url: "http://127.0.0.1:8080/api/wasm/\
                          9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
                        .into(),
                    size: 1024,
                }),
                wasm_grant: None,
                priority: None,
                workflow_context: None,
                workflow_item: None,
                fire_key: None,
                scheduled_time: None,
                delivery_mode: None,
            },
        ),
        // A workflow node's trigger: upstream's keys plus `workflowContext`, the instance's context.
        case(
            "jobwheel_run_request_workflow.json",
            Emit::Bytes,
            TriggerParam {
                job_id: 16,
                executor_params: "ops".into(),
                log_id: 4246,
                log_date_time: 1_700_000_002_000,
                glue_updatetime: 1_699_999_000_004,
                workflow_context: Some(
                    serde_json::json!({"day": "2031-02-03", "extract": {"rows": [1, 2, 3]}}),
                ),
                ..bean_trigger()
            },
        ),
        // A map item's trigger: upstream's keys (the item as the parameter) plus `workflowItem`.
        case(
            "jobwheel_run_request_map_item.json",
            Emit::Bytes,
            TriggerParam {
                job_id: 17,
                executor_params: "s3://bucket/a.csv".into(),
                log_id: 4247,
                log_date_time: 1_700_000_003_000,
                glue_updatetime: 1_699_999_000_004,
                workflow_item: Some(serde_json::json!("s3://bucket/a.csv")),
                ..bean_trigger()
            },
        ),
        // Gson leniency: numeric strings, nulls, a float for a long, missing and unknown fields.
        case(
            "lenient_run_request.json",
            Emit::No,
            TriggerParam {
                executor_params: String::new(),
                executor_block_strategy: String::new(),
                executor_timeout: 0,
                glue_updatetime: 1_699_999_000_000,
                broadcast_index: 0,
                broadcast_total: 1,
                ..bean_trigger()
            },
        ),
        case("lenient_run_request_empty_object.json", Emit::No, TriggerParam::default()),
    ]);
}

#[test]
fn trigger_param_we_send_has_exactly_upstream_keys() {
    let plain = serde_json::to_value(TriggerParam::default()).expect("serializes");
    assert_eq!(keys(&plain), TRIGGER_PARAM_KEYS, "a TriggerParam must carry exactly upstream's 12 keys");
    assert_eq!(
        keys(&value("gen_a_run_request.json")),
        TRIGGER_PARAM_KEYS,
        "fixture gen_a_run_request.json must carry exactly upstream's 12 keys"
    );

    let wasm = TriggerParam { wasm_module: Some(WasmModuleRef::default()), ..TriggerParam::default() };
    let wasm = serde_json::to_value(wasm).expect("serializes");
    let mut want: Vec<&str> = TRIGGER_PARAM_KEYS.to_vec();
    want.push("wasmModule");
    want.sort_unstable();
    assert_eq!(keys(&wasm), want, "wasmModule is the only extra key, and only when set");
    assert_eq!(keys(&wasm["wasmModule"]), ["digest", "size", "url"], "wasmModule's keys");
}

#[test]
fn wasm_grant_round_trips_with_camel_case_keys_and_debug_hides_secret_values() {
    let grant = WasmGrant {
        http_allow: vec!["https://api.example.com".into()],
        http_max_requests: Some(3),
        vars: [("CHECK_URL".to_owned(), "https://api.example.com/health".to_owned())].into(),
        secrets: [("CHECK_TOKEN".to_owned(), "tok-secret-value".to_owned())].into(),
        fuel: Some(1_000_000),
        ..WasmGrant::default()
    };
    let value = serde_json::to_value(&grant).expect("serializes");
    assert_eq!(
        keys(&value),
        ["fuel", "httpAllow", "httpMaxRequests", "secrets", "vars"],
        "unset fields are omitted"
    );
    let back: WasmGrant = serde_json::from_value(value).expect("deserializes");
    assert_eq!(back, grant);
    let debug = format!("{grant:?}");
    assert!(debug.contains("CHECK_TOKEN") && !debug.contains("tok-secret-value"), "{debug}");
}

#[test]
fn idle_beat_and_kill_requests() {
    check(vec![
        case("gen_a_idle_beat_request.json", Emit::Bytes, IdleBeatParam { job_id: 12 }),
        case("lenient_idle_beat_request.json", Emit::No, IdleBeatParam { job_id: 0 }),
    ]);
    check(vec![
        case("gen_a_kill_request.json", Emit::Bytes, KillParam { job_id: 12 }),
        case("lenient_kill_request.json", Emit::No, KillParam { job_id: 12 }),
    ]);
}

#[test]
fn log_requests() {
    check(vec![
        // Gen A/B: the truncated `logDateTim`; this is also what we send.
        case("gen_a_log_request.json", Emit::Bytes, LogParam::new(1_700_000_000_123, 4242, 1)),
        // Gen C: `logDateTime` (plus `jobId` on master), folded into the same value.
        case("gen_c_log_request.json", Emit::No, LogParam::new(1_700_000_000_123, 4242, 5)),
        case("lenient_log_request.json", Emit::No, LogParam::new(1_700_000_000_123, 4242, 0)),
        // Both spellings: a non-zero `logDateTim` wins.
        case("lenient_log_request_both_spellings.json", Emit::No, LogParam::new(1_700_000_000_123, 7, 1)),
    ]);
    let gen_c: LogParam = decode("gen_c_log_request.json").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(gen_c.log_date_time(), 1_700_000_000_123, "Gen C's logDateTime must be the log's date");
    let resent = serde_json::to_value(gen_c).expect("serializes");
    assert_eq!(
        resent,
        json!({"logDateTim": 1_700_000_000_123_i64, "logId": 4242, "fromLineNum": 5}),
        "a Gen C request re-sent by us must use Gen A's `logDateTim` and keep the date"
    );
}

#[test]
fn beat_requests() {
    // A 2.x admin sends the JSON string "" as the /beat body, a 3.3+ admin sends nothing.
    assert_eq!(value("gen_a_beat_request.json"), Value::String(String::new()), "Gen A /beat body is \"\"");
    assert_eq!(raw("gen_b_beat_request.json"), "", "Gen B /beat has an empty body");
    // Neither is an object, so /beat must be answered without decoding its body.
    for fixture in ["gen_a_beat_request.json", "gen_b_beat_request.json"] {
        assert!(
            decode::<IdleBeatParam>(fixture).is_err(),
            "{fixture}: a /beat body is not a JSON object; the executor must ignore it rather than parse it"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Requests to the admin: api/registry, api/registryRemove, api/callback
// ---------------------------------------------------------------------------------------------

#[test]
fn registry_requests() {
    check(vec![
        case("gen_a_registry_request.json", Emit::Bytes, sample_registry()),
        case("gen_a_registry_remove_request.json", Emit::Bytes, sample_registry()),
        case(
            "lenient_registry_request.json",
            Emit::No,
            RegistryParam { registry_value: String::new(), ..sample_registry() },
        ),
    ]);
    let valid: RegistryParam = decode("gen_a_registry_request.json").unwrap_or_else(|e| panic!("{e}"));
    assert!(valid.is_valid(), "gen_a_registry_request.json is a valid registration");
    let blank: RegistryParam = decode("lenient_registry_request.json").unwrap_or_else(|e| panic!("{e}"));
    assert!(!blank.is_valid(), "a null registryValue must fail upstream's \"Illegal Argument.\" check");
}

#[test]
fn callback_requests() {
    // The body as a whole, in both generations' framings.
    check(vec![
        case("gen_a_callback_request.json", Emit::Bytes, CallbackBody::List(gen_a_callbacks())),
        case(
            "gen_c_callback_request.json",
            Emit::No,
            CallbackBody::Wrapped {
                callback_list: vec![
                    callback(4242, 1_700_000_000_123, 200, "hello, world"),
                    callback(4243, 1_700_000_000_456, 502, "job execute timeout "),
                ],
            },
        ),
        case("gen_c_callback_request_empty.json", Emit::No, CallbackBody::Wrapped { callback_list: vec![] }),
        // A jobwheel executor's result for a workflow node: upstream's keys plus `output`.
        case(
            "jobwheel_callback_request_workflow.json",
            Emit::Bytes,
            CallbackBody::List(vec![HandleCallbackParam {
                output: Some(r#"{"hello":"ops","inputs":["day","extract"]}"#.into()),
                ..callback(4246, 1_700_000_002_000, 200, "")
            }]),
        ),
        // Gson: numeric strings, null → 0, a null handleMsg is omitted, unknown fields.
        case(
            "lenient_callback_request.json",
            Emit::No,
            CallbackBody::List(vec![callback(4242, 0, 500, ""), callback(4243, 1_700_000_000_456, 200, "")]),
        ),
    ]);
    // The executor sends a plain slice of params; that too must be Gen A's array with `logDateTim`.
    check(vec![case("gen_a_callback_request.json", Emit::Bytes, gen_a_callbacks())]);

    for (fixture, count) in [("gen_a_callback_request.json", 2), ("gen_c_callback_request.json", 2)] {
        let body: CallbackBody = decode(fixture).unwrap_or_else(|e| panic!("{e}"));
        let items = body.into_items();
        assert_eq!(items.len(), count, "{fixture}: into_items() must return every callback");
        assert_eq!(items[0].log_date_tim, 1_700_000_000_123, "{fixture}: the log date must survive");
    }
}

// ---------------------------------------------------------------------------------------------
// Responses (envelopes)
// ---------------------------------------------------------------------------------------------

fn envelope<T>(code: i32, msg: Option<&str>, content: Option<T>, data: Option<T>) -> Envelope<T> {
    Envelope { code, msg: msg.map(str::to_owned), content, data }
}

#[test]
fn envelopes_without_payload() {
    check::<Envelope<()>>(vec![
        // What we emit: upstream's `ReturnT.SUCCESS` / `new ReturnT(FAIL_CODE, msg)`.
        case("gen_a_success_response.json", Emit::Bytes, Envelope::success()),
        case(
            "gen_a_fail_response.json",
            Emit::Bytes,
            Envelope::fail("job handler [demoJobHandler] not found."),
        ),
        case("gen_a_kill_response.json", Emit::Bytes, Envelope::success_msg("job thread already killed.")),
        // What we read from Gen B peers (`Response.ofSuccess()`).
        case("gen_b_success_response.json", Emit::No, Envelope::success_msg("Success")),
        // Admin replies are Jackson-serialized: nulls are present.
        case("gen_a_admin_response.json", Emit::No, Envelope::success()),
        case("gen_a_admin_fail_response.json", Emit::No, Envelope::fail("The access token is wrong.")),
        // Gen B admin: Jackson also renders `Response.isSuccess()` as `"success"`; ignored.
        case("gen_b_admin_response.json", Emit::No, Envelope::success_msg("Success")),
    ]);
}

#[test]
fn ack_envelopes_accept_any_payload() {
    check::<AckEnvelope>(vec![
        // 3.4.2 puts the /kill message in `data` instead of `msg`.
        case(
            "gen_b_kill_response.json",
            Emit::No,
            envelope(200, Some("Success"), None, Some(Value::String("job thread already killed.".into()))),
        ),
        case("gen_a_admin_response.json", Emit::No, AckEnvelope::success()),
        case("gen_b_admin_response.json", Emit::No, AckEnvelope::success_msg("Success")),
        case(
            "gen_a_log_response.json",
            Emit::No,
            envelope(200, None, Some(value("gen_a_log_response.json")["content"].clone()), None),
        ),
    ]);
    for fixture in ["gen_b_kill_response.json", "gen_a_admin_response.json", "gen_b_admin_response.json"] {
        let reply: AckEnvelope = decode(fixture).unwrap_or_else(|e| panic!("{e}"));
        assert!(reply.is_success(), "{fixture}: must read as success");
    }
    for fixture in ["gen_a_fail_response.json", "gen_a_admin_fail_response.json"] {
        let reply: AckEnvelope = decode(fixture).unwrap_or_else(|e| panic!("{e}"));
        assert!(!reply.is_success(), "{fixture}: must read as failure");
        assert_eq!(reply.code, FAIL_CODE, "{fixture}: code");
    }
}

#[test]
fn log_responses() {
    check::<Envelope<LogResult>>(vec![
        // What we emit: the same LogResult under Gen A's `content` and Gen B's `data`.
        case("jobwheel_log_response.json", Emit::Bytes, Envelope::success_with(two_lines())),
        // Gen A executor (`ReturnT`): `content` only.
        case("gen_a_log_response.json", Emit::No, envelope(200, None, Some(two_lines()), None)),
        // Gen B executor (`Response.ofSuccess(logResult)`): `data` only.
        case("gen_b_log_response.json", Emit::No, envelope(200, Some("Success"), None, Some(two_lines()))),
        case(
            "gen_a_log_response_missing_file.json",
            Emit::No,
            envelope(
                200,
                None,
                Some(LogResult {
                    from_line_num: 1,
                    to_line_num: 0,
                    log_content: "readLog fail, logFile not exists".into(),
                    is_end: true,
                }),
                None,
            ),
        ),
        case(
            "gen_a_log_response_lenient.json",
            Emit::No,
            envelope(
                200,
                None,
                Some(LogResult {
                    from_line_num: 3,
                    to_line_num: 0,
                    log_content: String::new(),
                    is_end: true,
                }),
                None,
            ),
        ),
    ]);
}

#[test]
fn log_payload_readable_from_either_generation() {
    for fixture in ["gen_a_log_response.json", "gen_b_log_response.json", "jobwheel_log_response.json"] {
        let reply: Envelope<LogResult> = decode(fixture).unwrap_or_else(|e| panic!("{e}"));
        assert!(reply.is_success(), "{fixture}: must read as success");
        assert_eq!(
            reply.into_payload(),
            Some(two_lines()),
            "{fixture}: into_payload() must yield the LogResult"
        );
    }

    // What we emit is what each generation's admin looks for: Gen A reads `content`, Gen B `data`.
    let ours = serde_json::to_value(Envelope::success_with(two_lines())).expect("serializes");
    assert_eq!(
        ours["content"],
        value("gen_a_log_response.json")["content"],
        "our `content` = Gen A's payload"
    );
    assert_eq!(ours["data"], value("gen_b_log_response.json")["data"], "our `data` = Gen B's payload");
    assert_eq!(
        keys(&ours["content"]),
        ["fromLineNum", "isEnd", "logContent", "toLineNum"],
        "LogResult keys (the flag is literally `isEnd`)"
    );

    // If both keys are present but differ, Gen B's `data` wins.
    let both = envelope(
        200,
        None,
        Some(LogResult::default()),
        Some(LogResult { is_end: true, ..LogResult::default() }),
    );
    assert!(both.into_payload().is_some_and(|p| p.is_end), "`data` wins over `content`");
}

// ---------------------------------------------------------------------------------------------
// Enums and constants (upstream §3)
// ---------------------------------------------------------------------------------------------

/// One row of upstream's glue type table: name, desc, and (cmd, suffix) for script types.
type GlueRow = (&'static str, &'static str, Option<(&'static str, &'static str)>);

/// Upstream's `GlueTypeEnum` at 3.4.2, in declaration order.
const UPSTREAM_GLUE_TYPES: [GlueRow; 8] = [
    ("BEAN", "BEAN", None),
    ("GLUE_GROOVY", "GLUE(Java)", None),
    ("GLUE_SHELL", "GLUE(Shell)", Some(("bash", ".sh"))),
    ("GLUE_PYTHON", "GLUE(Python3)", Some(("python3", ".py"))),
    ("GLUE_PYTHON2", "GLUE(Python2)", Some(("python", ".py"))),
    ("GLUE_NODEJS", "GLUE(Nodejs)", Some(("node", ".js"))),
    ("GLUE_POWERSHELL", "GLUE(PowerShell)", Some(("pwsh", ".ps1"))),
    ("GLUE_PHP", "GLUE(PHP)", Some(("php", ".php"))),
];

/// Upstream's `ExecutorBlockStrategyEnum`: name and the executor-side English title.
const UPSTREAM_BLOCK_STRATEGIES: [(&str, &str); 3] = [
    ("SERIAL_EXECUTION", "Serial execution"),
    ("DISCARD_LATER", "Discard Later"),
    ("COVER_EARLY", "Cover Early"),
];

#[test]
fn glue_types_match_upstream() {
    for (name, title, script) in UPSTREAM_GLUE_TYPES {
        let glue: GlueType =
            name.parse().unwrap_or_else(|e| panic!("upstream glue type {name} must parse: {e}"));
        assert_eq!(glue.name(), name, "{name}: wire name");
        assert_eq!(glue.to_string(), name, "{name}: Display");
        assert_eq!(glue.title(), title, "{name}: title");
        assert_eq!(glue.script(), script, "{name}: interpreter and suffix");
        assert_eq!(glue.is_script(), script.is_some(), "{name}: is_script");
    }
    let ours: Vec<&str> = GlueType::ALL.iter().map(|g| g.name()).collect();
    let upstream: Vec<&str> = UPSTREAM_GLUE_TYPES.iter().map(|(name, _, _)| *name).collect();
    assert_eq!(ours[..upstream.len()], upstream[..], "GlueType::ALL starts with upstream's types, in order");
    assert_eq!(ours[upstream.len()..], ["GLUE_WASM"], "GLUE_WASM is our only addition");
    for glue in GlueType::ALL {
        assert_eq!(glue.name().parse::<GlueType>(), Ok(glue), "{glue}: name() must round-trip");
    }
    for unknown in ["", "bean", "GLUE_JAVA", "GLUE_PYTHON3", " BEAN"] {
        assert!(unknown.parse::<GlueType>().is_err(), "{unknown:?} is not a glue type (upstream: not valid)");
    }
}

#[test]
fn block_strategies_match_upstream() {
    for (name, title) in UPSTREAM_BLOCK_STRATEGIES {
        let strategy = BlockStrategy::from_wire(name);
        assert_eq!(strategy.name(), name, "{name}: wire name");
        assert_eq!(strategy.to_string(), name, "{name}: Display");
        assert_eq!(strategy.title(), title, "{name}: title");
    }
    let ours: Vec<&str> = BlockStrategy::ALL.iter().map(|b| b.name()).collect();
    let upstream: Vec<&str> = UPSTREAM_BLOCK_STRATEGIES.iter().map(|(name, _)| *name).collect();
    assert_eq!(ours, upstream, "BlockStrategy::ALL is upstream's enum, in order");
    for strategy in BlockStrategy::ALL {
        assert_eq!(BlockStrategy::from_wire(strategy.name()), strategy, "{strategy}: name() must round-trip");
    }
    // Upstream: `ExecutorBlockStrategyEnum.match(name, SERIAL_EXECUTION)` — exact, case-sensitive.
    for unknown in ["", "CONCURRENT_EXECUTION", "discard_later", " COVER_EARLY", "null"] {
        assert_eq!(
            BlockStrategy::from_wire(unknown),
            BlockStrategy::SerialExecution,
            "unknown block strategy {unknown:?} must mean SERIAL_EXECUTION"
        );
    }
}

#[test]
fn codes_headers_and_paths_match_upstream() {
    assert_eq!((SUCCESS_CODE, FAIL_CODE), (200, 500), "envelope codes");
    assert_eq!(
        [HandleCode::Success.code(), HandleCode::Fail.code(), HandleCode::Timeout.code()],
        [200, 500, 502],
        "handle codes"
    );
    assert_eq!(ACCESS_TOKEN_HEADER, "XXL-JOB-ACCESS-TOKEN", "token header");
    assert_eq!((BEAT_TIMEOUT_SECS, DEAD_TIMEOUT_SECS), (30, 90), "registry beat / dead timeouts");
    assert_eq!(REGISTRY_GROUP_EXECUTOR, "EXECUTOR", "registry group");
    assert_eq!(
        [
            executor_paths::BEAT,
            executor_paths::IDLE_BEAT,
            executor_paths::RUN,
            executor_paths::KILL,
            executor_paths::LOG
        ],
        ["/beat", "/idleBeat", "/run", "/kill", "/log"],
        "executor API paths (exact match upstream)"
    );
    assert_eq!(
        [admin_paths::REGISTRY, admin_paths::REGISTRY_REMOVE, admin_paths::CALLBACK],
        ["api/registry", "api/registryRemove", "api/callback"],
        "admin API paths, relative to the admin base address"
    );
}

// ---------------------------------------------------------------------------------------------
// Fixture hygiene
// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_is_named_by_convention_and_used() {
    let source = include_str!("golden.rs");
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("fixture directory exists")
        .map(|entry| entry.expect("readable directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no fixtures found in {}", fixture_dir().display());
    for name in &names {
        let prefixed =
            ["gen_a_", "gen_b_", "gen_c_", "jobwheel_", "lenient_"].iter().any(|p| name.starts_with(p));
        assert!(
            prefixed && name.ends_with(".json"),
            "fixture {name}: expected gen_[abc]_/jobwheel_/lenient_*.json"
        );
        assert!(source.contains(&format!("\"{name}\"")), "fixture {name} is not used by any test");
    }
}
