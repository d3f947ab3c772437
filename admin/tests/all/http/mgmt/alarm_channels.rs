//! Alarm channels through the management API (docs/alarms.md), from the outside: administrators
//! configure them and their secrets never come back (not in a read, the audit log or the
//! delivery log); normal users see names only and are refused every write and the log; the job
//! form chooses channels and a duration; a channel in use is not deleted; a test message is
//! delivered by the live admin to a Slack stand-in and shows up in the delivery log.

use serde_json::{Value, json};

use super::Env;
use super::jobs::form;
use crate::engine::alarm_vendors::Vendors;
use crate::http::eventually;

const SLACK: &str = "/services/T000/B000/XXXX";

#[tokio::test]
async fn channels_are_configured_chosen_tried_and_logged_without_showing_secrets() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("alarm-app").await;
    env.normal_user("alice", &[group]).await;
    let (root, alice) = (env.login("root").await, env.login("alice").await);
    let vendors = Vendors::start().await?;

    for (bad, needle) in [
        (json!({"name": "s", "kind": "slack"}), "url: required"),
        (json!({"name": "s", "kind": "pager", "url": vendors.url(SLACK)}), "kind"),
        (json!({"name": "s", "kind": "slack", "url": "ftp://x/y"}), "url"),
        (json!({"name": "s", "kind": "slack", "url": vendors.url(SLACK), "signingKey": "k"}), "not signed"),
        (
            json!({"name": "s", "kind": "webhook", "url": vendors.url("/hook"), "template": "{{ oops"}),
            "template",
        ),
        (json!({"name": "s", "kind": "email", "recipients": ["nobody"]}), "recipients"),
        (json!({"name": "s", "kind": "email", "events": ["SOMETIMES"]}), "events"),
    ] {
        let (status, refused) = root.post("/api/v1/alarm-channels", bad).await;
        assert_eq!(status, 400, "{refused}");
        assert!(refused["msg"].as_str().unwrap_or_default().contains(needle), "{needle}: {refused}");
    }
    let (status, channel) = root
        .post(
            "/api/v1/alarm-channels",
            json!({"name": "ops-slack", "kind": "slack", "url": vendors.url(SLACK)}),
        )
        .await;
    assert_eq!(status, 201, "{channel}");
    let id = channel["id"].as_i64().expect("id");
    assert_eq!((channel["urlSet"].clone(), channel["urlHost"].clone()), (json!(true), json!("127.0.0.1")));
    assert!(!channel.to_string().contains("XXXX"), "the URL is never shown: {channel}");
    assert_eq!(channel["events"].as_array().map(Vec::len), Some(7), "all but RECOVERED by default");
    let (status, _) = root
        .post(
            "/api/v1/alarm-channels",
            json!({"name": "ops-slack", "kind": "slack", "url": vendors.url(SLACK)}),
        )
        .await;
    assert_eq!(status, 409, "names are unique");

    let (status, listed) = alice.get("/api/v1/alarm-channels").await;
    assert_eq!(
        (status, listed[0]["name"].clone(), listed[0]["urlHost"].clone()),
        (200, json!("ops-slack"), Value::Null)
    );
    let (status, _) = alice.post("/api/v1/alarm-channels", json!({"name": "mine", "kind": "email"})).await;
    assert_eq!(status, 403);
    let (status, _) = alice.post(&format!("/api/v1/alarm-channels/{id}/test"), json!({})).await;
    assert_eq!(status, 403);
    let (status, _) = alice.get("/api/v1/alarm-deliveries").await;
    assert_eq!(status, 403, "the delivery log holds every group's messages");

    // The job form chooses channels and a duration; leaving them out keeps them.
    let mut job = form(group.0);
    job["alarmChannels"] = json!([id]);
    job["doneWithin"] = json!(120);
    let (status, created) = alice.post("/api/v1/jobs", job.clone()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!((created["alarmChannels"].clone(), created["doneWithin"].clone()), (json!([id]), json!(120)));
    let job_id = created["id"].as_i64().expect("id");
    let (status, edited) = alice.put(&format!("/api/v1/jobs/{job_id}"), form(group.0)).await;
    assert_eq!(
        (status, edited["alarmChannels"].clone(), edited["doneWithin"].clone()),
        (200, json!([id]), json!(120))
    );
    job["alarmChannels"] = json!([id + 1000]);
    let (status, refused) = alice.put(&format!("/api/v1/jobs/{job_id}"), job.clone()).await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = root
        .put(
            &format!("/api/v1/groups/{}", group.0),
            json!({"appname": "alarm-app", "title": "t", "addressType": 0, "doneWithin": 5}),
        )
        .await;
    assert_eq!(status, 400, "a group has no duration: {refused}");
    let (status, conflict) = root.delete(&format!("/api/v1/alarm-channels/{id}")).await;
    assert_eq!(status, 409, "{conflict}");
    assert!(conflict["msg"].as_str().unwrap_or_default().contains(&format!("job {job_id}")), "{conflict}");

    // A test goes out through the live admin; renamed without a URL, the channel keeps it.
    let (status, queued) = root.post(&format!("/api/v1/alarm-channels/{id}/test"), json!({})).await;
    assert_eq!((status, queued["queued"].clone()), (202, json!(1)), "{queued}");
    let (status, renamed) = root
        .put(&format!("/api/v1/alarm-channels/{id}"), json!({"name": "ops-slack-2", "kind": "slack"}))
        .await;
    assert_eq!((status, renamed["urlSet"].clone()), (200, json!(true)), "{renamed}");
    root.post(&format!("/api/v1/alarm-channels/{id}/test"), json!({})).await;
    let log = eventually("two test messages sent", || async {
        let (_, log) = root.get(&format!("/api/v1/alarm-deliveries?channel={id}")).await;
        let sent = log["items"].as_array()?.iter().filter(|d| d["status"] == "SENT").count();
        (sent == 2).then_some(log)
    })
    .await;
    assert_eq!(vendors.seen(SLACK).len(), 2);
    let item = &log["items"][0];
    assert_eq!(
        (item["event"].clone(), item["answerCode"].clone(), item["answer"].clone()),
        (json!("TEST"), json!(200), json!("ok"))
    );
    assert!(item["request"].as_str().unwrap_or_default().contains("Test message"), "{item}");

    let (_, audit) = root.get("/api/v1/audit?limit=50").await;
    let audit = audit.to_string();
    assert!(audit.contains("alarm_channel.create") && audit.contains("alarm_channel.test"), "{audit}");
    for secret_place in [audit, log.to_string()] {
        assert!(!secret_place.contains("XXXX"), "the URL leaked: {secret_place}");
    }
    Ok(())
}

/// Review N7, from an administrator's side (a role single sign-on may hand to a whole group): a
/// webhook channel aimed at an address inside the admin's network is refused when it sends —
/// the listener there hears nothing and the delivery log says why — unless the operator
/// started the admin with `--alarm-allow-private` naming that network.
#[tokio::test]
async fn a_webhook_to_a_private_address_is_refused_unless_the_operator_allows_it() -> anyhow::Result<()> {
    let env = Env::start_configured(|c| c.alarm_allow_private = Default::default()).await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let inside = Vendors::start().await?;
    for (name, url) in
        [("inside", inside.url("/hook")), ("metadata", "http://169.254.169.254/latest".to_owned())]
    {
        let (status, created) =
            root.post("/api/v1/alarm-channels", json!({"name": name, "kind": "webhook", "url": url})).await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_i64().expect("id");
        let (status, queued) = root.post(&format!("/api/v1/alarm-channels/{id}/test"), json!({})).await;
        assert_eq!(status, 202, "{queued}");
        let answer = eventually("the refused attempt in the delivery log", || async {
            let (_, log) = root.get(&format!("/api/v1/alarm-deliveries?channel={id}")).await;
            let answer = log["items"].as_array()?.first()?["answer"].as_str()?.to_owned();
            (!answer.is_empty()).then_some(answer)
        })
        .await;
        assert!(answer.contains("--alarm-allow-private"), "{name}: {answer}");
    }
    assert!(inside.seen("/hook").is_empty(), "nothing reached the address inside");
    env.admin.stop().await
}

/// Review N8, from an administrator's side: the review's template that builds gigabytes from a
/// line (`"x" * 100000000`, then `~` of it) is refused at save time with the operator named,
/// before anything renders, and the admin keeps answering.
#[tokio::test]
async fn a_template_that_multiplies_text_is_refused_when_saved() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let bomb = r#"{% set a = "x"*100000000 %}{% set b = a~a~a~a %}{{ b~b~b~b }}"#;
    for template in [bomb, "{{ range(100000)|join(message) }}", "{% set a %}{{ text }}{% endset %}{{ a }}"] {
        let (status, refused) = root
            .post(
                "/api/v1/alarm-channels",
                json!({"name": "bomb", "kind": "webhook", "url": "https://hooks.example.com/x", "template": template}),
            )
            .await;
        assert_eq!(status, 400, "{template}: {refused}");
        assert!(refused["msg"].as_str().unwrap_or_default().contains("larger than the notice"), "{refused}");
    }
    let (status, _) = root.get("/api/v1/alarm-channels").await;
    assert_eq!(status, 200, "the admin still answers");
    env.admin.stop().await
}
