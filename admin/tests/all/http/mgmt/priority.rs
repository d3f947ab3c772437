//! A job's priority through the management API: set on create, kept when an edit leaves it
//! out, changed, refused when unknown; the trigger carries it to the executor (engine test).

use serde_json::json;

use super::Env;
use super::jobs::form;

#[tokio::test]
async fn priority_is_set_kept_changed_and_checked() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("prio-app").await;
    let root = env.login("root").await;
    let (_, plain) = root.post("/api/v1/jobs", form(group.0)).await;
    assert_eq!(plain["priority"], "NORMAL", "{plain}");
    let mut high = form(group.0);
    high["priority"] = json!("high");
    let (status, job) = root.post("/api/v1/jobs", high).await;
    assert_eq!((status, job["priority"].as_str()), (201, Some("HIGH")), "{job}");
    let id = job["id"].as_i64().expect("id");
    let (_, kept) = root.put(&format!("/api/v1/jobs/{id}"), form(group.0)).await;
    assert_eq!(kept["priority"], "HIGH", "an edit without priority keeps it");
    let mut low = form(group.0);
    low["priority"] = json!("LOW");
    assert_eq!(root.put(&format!("/api/v1/jobs/{id}"), low).await.1["priority"], "LOW");
    let mut bad = form(group.0);
    bad["priority"] = json!("urgent");
    let (status, reply) = root.put(&format!("/api/v1/jobs/{id}"), bad).await;
    assert_eq!(status, 400, "{reply}");
    assert!(
        reply["msg"].as_str().unwrap_or_default().contains("priority: must be HIGH, NORMAL or LOW"),
        "{reply}"
    );
    let mut normal = form(group.0);
    normal["priority"] = json!("NORMAL");
    assert_eq!(root.put(&format!("/api/v1/jobs/{id}"), normal).await.1["priority"], "NORMAL");
    env.admin.stop().await
}
