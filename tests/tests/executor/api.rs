//! Endpoint validation, envelopes and BEAN results through the executor's HTTP API.

use std::time::Duration;

use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::{TOKEN, trigger, wait_until};
use serde_json::json;

use crate::support::{SETTLE, rig};

fn bean_handlers() -> Handlers {
    let mut handlers = Handlers::new();
    handlers.register("ok", |ctx: JobContext| async move {
        ctx.log(format!("param={} shard={}/{}", ctx.param(), ctx.shard_index(), ctx.shard_total()));
        Ok(())
    });
    handlers.register("err", |_ctx: JobContext| async move { anyhow::bail!("database unreachable") });
    handlers.register("fail", |ctx: JobContext| async move {
        ctx.handle_fail("business rule violated");
        Ok(())
    });
    handlers.register("panics", |_ctx: JobContext| async move {
        if std::hint::black_box(true) {
            panic!("handler bug");
        }
        Ok(())
    });
    handlers
}

#[tokio::test]
async fn beat_accepts_java_empty_string_body_and_no_body() {
    let rig = rig(Handlers::new(), |_| {}).await;
    assert_eq!(rig.executor.post_raw("/beat", "\"\"", Some(TOKEN)).await, json!({"code": 200}));
    assert_eq!(rig.executor.post_raw("/beat", "", Some(TOKEN)).await, json!({"code": 200}));
}

#[tokio::test]
async fn rejects_wrong_or_missing_token_method_and_path_like_upstream() {
    let rig = rig(Handlers::new(), |_| {}).await;
    let wrong = json!({"code": 500, "msg": "The access token is wrong."});
    assert_eq!(rig.executor.post_raw("/beat", "", Some("nope")).await, wrong);
    assert_eq!(rig.executor.post_raw("/beat", "", None).await, wrong);
    assert_eq!(rig.executor.post_raw("/run", "{}", Some(&format!("{TOKEN}x"))).await, wrong);

    let get = reqwest::get(rig.executor.url("/beat")).await.unwrap();
    assert_eq!(get.status(), 200);
    assert_eq!(
        get.json::<serde_json::Value>().await.unwrap(),
        json!({"code": 500, "msg": "invalid request, HttpMethod not support."})
    );
    assert_eq!(
        rig.executor.post_raw("/nope", "", Some(TOKEN)).await,
        json!({"code": 500, "msg": "invalid request, uri-mapping(/nope) not found."})
    );
}

#[tokio::test]
async fn malformed_bodies_get_a_clear_request_error() {
    let rig = rig(Handlers::new(), |_| {}).await;
    for (path, body) in [("/run", "{not json"), ("/kill", "[1,2"), ("/idleBeat", ""), ("/log", "\"x\"")] {
        let reply = rig.executor.post_raw(path, body, Some(TOKEN)).await;
        assert_eq!(reply["code"], 500, "{path} {body}: {reply}");
        let msg = reply["msg"].as_str().unwrap();
        assert!(msg.starts_with(&format!("request error: invalid JSON body for {path}")), "{msg}");
    }
    let huge = "x".repeat(6 * 1024 * 1024);
    let reply = rig.executor.post_raw("/run", &huge, Some(TOKEN)).await;
    assert!(reply["msg"].as_str().unwrap().contains("limit"), "{reply}");
}

#[tokio::test]
async fn serves_the_api_under_a_configured_path_prefix() {
    let rig = rig(Handlers::new(), |c| c.path_prefix = "/xxl-job-executor".into()).await;
    assert_eq!(rig.executor.post_raw("/xxl-job-executor/beat", "", Some(TOKEN)).await, json!({"code": 200}));
    assert_eq!(rig.executor.post_raw("/beat", "", Some(TOKEN)).await["code"], 500);
    // The registered address carries the prefix, so an admin appends `run` to it.
    rig.admin.wait_for(SETTLE, "registry", |r| !r.registry.is_empty()).await;
    let value = rig.admin.recorded().registry[0].registry_value.clone();
    assert_eq!(value, format!("http://{}/xxl-job-executor/", rig.executor.addr));
}

#[tokio::test]
async fn run_rejects_what_it_cannot_run_with_upstream_messages() {
    let rig = rig(bean_handlers(), |_| {}).await;
    let cases = [
        (trigger(1, 1, "GLUE_FOO", "", ""), "glueType[GLUE_FOO] is not valid."),
        (trigger(1, 2, "BEAN", "missing", ""), "job handler [missing] not found."),
    ];
    for (body, msg) in cases {
        assert_eq!(rig.executor.run(body).await, json!({"code": 500, "msg": msg}));
    }
    let groovy = rig.executor.run(trigger(1, 3, "GLUE_GROOVY", "", "")).await;
    assert!(groovy["msg"].as_str().unwrap().contains("GLUE_WASM"), "{groovy}");
    // Upstream's admin's own GLUE(Java) trigger, as xxl-job-core 2.4.2 received it: failed at
    // once, saying why, where the JVM executor answered 200 and ran it.
    let probe = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../admin/tests/fixtures/java-2.4.2/java-2.4.2.probe.txt"),
    )
    .expect("the wire capture");
    let captured = probe
        .lines()
        .skip_while(|line| *line != "### run GLUE_GROOVY")
        .find_map(|line| line.strip_prefix(">>> {").map(|rest| format!("{{{rest}")))
        .expect("the captured GLUE(Java) /run");
    let captured: serde_json::Value = serde_json::from_str(&captured).expect("JSON");
    let java = rig.executor.run(captured).await;
    assert_eq!(java["code"], 500, "{java}");
    assert!(
        java["msg"]
            .as_str()
            .unwrap_or_default()
            .starts_with("GLUE(Java) needs a JVM executor; this is a jobwheel executor"),
        "{java}"
    );
    let shell = rig.executor.run(trigger(1, 4, "GLUE_SHELL", "", "")).await;
    assert!(shell["msg"].as_str().unwrap().contains("--enable-script-glue"), "{shell}");
    assert!(rig.admin.recorded().callbacks.is_empty(), "rejected triggers produce no callback");
}

#[tokio::test]
async fn bean_results_map_to_handle_codes() {
    let rig = rig(bean_handlers(), |_| {}).await;
    let mut ok = trigger(7, 100, "BEAN", "ok", "hello world");
    ok["broadcastIndex"] = json!(2);
    ok["broadcastTotal"] = json!(3);
    for (body, log_id) in [
        (ok, 100),
        (trigger(8, 101, "BEAN", "err", ""), 101),
        (trigger(9, 102, "BEAN", "fail", ""), 102),
        (trigger(10, 103, "BEAN", "panics", ""), 103),
    ] {
        assert_eq!(rig.executor.run(body).await, json!({"code": 200}), "log {log_id} accepted");
    }
    let ok = rig.admin.callback_for(100, SETTLE).await;
    assert_eq!((ok.handle_code, ok.handle_msg.as_str()), (200, ""));
    let err = rig.admin.callback_for(101, SETTLE).await;
    assert_eq!((err.handle_code, err.handle_msg.as_str()), (500, "database unreachable"));
    let fail = rig.admin.callback_for(102, SETTLE).await;
    assert_eq!((fail.handle_code, fail.handle_msg.as_str()), (500, "business rule violated"));
    let panicked = rig.admin.callback_for(103, SETTLE).await;
    assert_eq!(panicked.handle_code, 500);
    assert!(panicked.handle_msg.contains("handler bug"), "{}", panicked.handle_msg);

    let text = rig.executor.log_text(100, ok.log_date_tim).await;
    assert!(text.contains("param=hello world shard=2/3"), "{text}");
    // The executor keeps serving after a handler panic.
    assert_eq!(rig.executor.post_raw("/beat", "", Some(TOKEN)).await, json!({"code": 200}));
}

#[tokio::test]
async fn idle_job_threads_are_reaped_and_destroy_runs() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>, Arc<AtomicUsize>);
    impl jobwheel_executor::JobHandler for Counted {
        fn execute(&self, _ctx: JobContext) -> jobwheel_executor::HandlerFuture {
            Box::pin(async { Ok(()) })
        }
        fn init(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        fn destroy(&self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    let (inits, destroys) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut handlers = Handlers::new();
    handlers.register("counted", Counted(Arc::clone(&inits), Arc::clone(&destroys)));
    let rig = rig(handlers, |c| c.timings.idle_timeout = Duration::from_millis(300)).await;

    rig.executor.run(trigger(5, 1, "BEAN", "counted", "")).await;
    rig.admin.callback_for(1, SETTLE).await;
    wait_until(SETTLE, "idle job thread to end", || destroys.load(Ordering::SeqCst) == 1).await;
    assert_eq!(inits.load(Ordering::SeqCst), 1);
    // The next trigger starts a fresh thread.
    rig.executor.run(trigger(5, 2, "BEAN", "counted", "")).await;
    rig.admin.callback_for(2, SETTLE).await;
    assert_eq!(inits.load(Ordering::SeqCst), 2);
}

/// xxl-job 3.5 admins (and jobwheel's, for a group with its own token) send `/trigger` and the
/// AppName: the executor runs it like `/run`, and refuses a request naming another AppName.
#[tokio::test]
async fn speaks_xxl_job_3_5s_trigger_and_refuses_another_appname() {
    let rig = rig(bean_handlers(), |_| {}).await;
    let http = reqwest::Client::new();
    let call = |path: &str, app: &str, body: serde_json::Value| {
        http.post(rig.executor.url(path))
            .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
            .header(jobwheel_protocol::APPNAME_HEADER, app)
            .json(&body)
            .send()
    };
    let invalid = json!({"code": 500, "msg": "invalid request, accessToken or appname invalid."});
    let reply: serde_json::Value = call("/beat", "other-app", json!({})).await.unwrap().json().await.unwrap();
    assert_eq!(reply, invalid);
    let reply: serde_json::Value = call("/trigger", "other-app", trigger(11, 110, "BEAN", "ok", "x"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply, invalid, "nothing runs for another AppName");
    let reply: serde_json::Value = call("/trigger", "test-app", trigger(11, 111, "BEAN", "ok", "gen-c"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply, json!({"code": 200}));
    let done = rig.admin.callback_for(111, SETTLE).await;
    assert_eq!(done.handle_code, 200);
    assert!(rig.admin.recorded().callbacks.iter().all(|c| c.log_id != 110), "log 110 never ran");
}

#[tokio::test]
async fn a_bean_only_executor_refuses_every_glue_type_with_xxl_job_3_5s_message() {
    let rig = rig(bean_handlers(), |config| config.glue_enabled = false).await;
    for (glue_type, title) in
        [("GLUE_SHELL", "GLUE(Shell)"), ("GLUE_PYTHON", "GLUE(Python3)"), ("GLUE_GROOVY", "GLUE(Java)")]
    {
        let reply = rig.executor.run(trigger(1, 1, glue_type, "", "")).await;
        let msg = format!("fail, current glue type [{title}] not supported.");
        assert_eq!(reply, json!({"code": 500, "msg": msg}), "{glue_type}");
    }
    let wasm = rig.executor.run(jobwheel_tests::wasm_trigger(2, 2, &"a".repeat(64), "")).await;
    assert_eq!(wasm["msg"], "fail, current glue type [GLUE(Wasm)] not supported.", "{wasm}");
    assert_eq!(rig.executor.run(trigger(3, 3, "BEAN", "ok", "x")).await["code"], 200, "BEAN still runs");
    let status = rig.executor.post("/status", json!({})).await;
    assert_eq!(status["content"]["glueEnabled"], false, "{status}");
}

/// jobwheel's `/runBatch`: each trigger is answered exactly as its own `/run` would be, in
/// order, and the accepted ones run; a wrong token refuses the whole request with upstream's
/// one envelope and runs nothing; every `/run` reply offers batches by a header.
#[tokio::test]
async fn run_batch_answers_each_trigger_as_its_own_run_would() {
    let rig = rig(bean_handlers(), |_| {}).await;
    let batch = json!([
        trigger(7, 200, "BEAN", "ok", "a"),
        trigger(1, 201, "BEAN", "missing", ""),
        trigger(8, 202, "BEAN", "ok", "b"),
    ]);
    let replies = rig.executor.post_raw("/runBatch", &batch.to_string(), Some(TOKEN)).await;
    assert_eq!(
        replies,
        json!([{"code": 200}, {"code": 500, "msg": "job handler [missing] not found."}, {"code": 200}])
    );
    assert_eq!(rig.admin.callback_for(200, SETTLE).await.handle_code, 200);
    assert_eq!(rig.admin.callback_for(202, SETTLE).await.handle_code, 200);

    let stolen = json!([trigger(9, 203, "BEAN", "ok", "")]).to_string();
    let refused = rig.executor.post_raw("/runBatch", &stolen, Some("not-the-token")).await;
    assert_eq!(refused, json!({"code": 500, "msg": "The access token is wrong."}));

    let response = reqwest::Client::new()
        .post(format!("http://{}/run", rig.executor.addr))
        .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
        .json(&trigger(10, 204, "BEAN", "ok", ""))
        .send()
        .await
        .expect("executor reachable");
    let offered = response.headers().get(jobwheel_protocol::RUN_BATCH_HEADER).cloned();
    assert_eq!(offered.as_ref().map(|v| v.as_bytes()), Some(&b"1"[..]));
    assert_eq!(response.json::<serde_json::Value>().await.expect("JSON"), json!({"code": 200}));
    // Runs are called back in the order they finish; 204 ran after the refused batch.
    rig.admin.callback_for(204, SETTLE).await;
    assert!(rig.admin.recorded().callbacks.iter().all(|c| c.log_id != 203), "the refused batch ran");
}
