//! `GET /healthz` and `GET /readyz` on the executor, without a token: up at once; ready while
//! its registry beats reach an admin, not ready (503) while they fail, ready again after; ready
//! without an admin configured. Other `GET`s keep upstream's "HttpMethod not support." answer.

use std::time::Duration;

use jobwheel_executor::Handlers;
use jobwheel_tests::{TestExecutor, test_config, wait_until_async};
use serde_json::{Value, json};

use crate::support::{SETTLE, rig};

async fn get(executor: &TestExecutor, path: &str) -> (u16, Value) {
    let response = reqwest::get(executor.url(path)).await.expect("the executor answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

async fn wait_readyz(executor: &TestExecutor, status: u16) -> Value {
    wait_until_async(SETTLE, &format!("/readyz answering {status}"), || async {
        let (got, body) = get(executor, "/readyz").await;
        (got == status).then_some(body)
    })
    .await
}

#[tokio::test]
async fn readiness_follows_the_registry_beat() {
    let rig =
        rig(Handlers::new(), |config| config.timings.registry_interval = Duration::from_millis(100)).await;
    assert_eq!(get(&rig.executor, "/healthz").await, (200, json!({"status": "up"})));
    let ready = wait_readyz(&rig.executor, 200).await;
    assert_eq!(ready, json!({"status": "ready", "checks": {"admin": "registered"}}));

    rig.admin.set_failing(true);
    let not_ready = wait_readyz(&rig.executor, 503).await;
    assert_eq!(not_ready["status"], "not ready");
    assert!(not_ready["checks"]["admin"].as_str().unwrap_or_default().starts_with("not registered"));
    assert_eq!(get(&rig.executor, "/healthz").await.0, 200, "still up");
    rig.admin.set_failing(false);
    wait_readyz(&rig.executor, 200).await;

    // Any other GET is upstream's answer, as before.
    let (status, body) = get(&rig.executor, "/beat").await;
    assert_eq!(
        (status, body["code"].as_i64(), body["msg"].as_str()),
        (200, Some(500), Some("invalid request, HttpMethod not support."))
    );
}

#[tokio::test]
async fn an_executor_without_an_admin_is_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let executor = TestExecutor::start(test_config(dir.path()), Handlers::new()).await;
    let (status, body) = get(&executor, "/readyz").await;
    assert_eq!((status, body["checks"]["admin"].as_str()), (200, Some("none configured")));
}

/// A dial-out executor whose admin takes no socket (this fake admin serves no `/api/dial`)
/// registers nowhere: no admin may route a trigger to an address nobody can reach. It is not
/// ready, and its registry beats wait for a socket (the case `.ci/run` once hit: a test sent a
/// trigger the moment the address was registered, before the socket was up).
#[tokio::test]
async fn a_dial_out_executor_without_a_socket_does_not_register() {
    let rig = rig(Handlers::new(), |config| {
        config.dial_out = true;
        config.timings.registry_interval = Duration::from_millis(100);
    })
    .await;
    let not_ready = wait_readyz(&rig.executor, 503).await;
    assert_eq!(not_ready["status"], "not ready");
    // Ten intervals and more: a beat would have gone out many times over.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    while tokio::time::Instant::now() < deadline {
        assert!(rig.admin.recorded().registry.is_empty(), "registered without a socket");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
