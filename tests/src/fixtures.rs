//! Rows the multi-process tests and benchmarks write straight into an admin's database before
//! (or while) it runs: an administrator with an API token, and jobs with every column set.

use chrono::Utc;
use jobwheel_admin::store::{Group, GroupId, Job, NewApiToken, Store, User};
use sha2::{Digest as _, Sha256};

use crate::now_ms;

/// An administrator named `username` whose API token is `token` (only its SHA-256 is stored).
pub async fn api_administrator(store: &dyn Store, username: &str, token: &str) -> anyhow::Result<()> {
    let user = store
        .add_user(&User {
            username: username.to_owned(),
            // Not a valid hash: this user can only use its token, never log in.
            password: "!".to_owned(),
            token: None,
            role: 1,
            permission: None,
        })
        .await?;
    let token_hash = hex::encode(Sha256::digest(token.as_bytes()));
    store
        .add_api_token(&NewApiToken {
            user_id: user,
            name: username.to_owned(),
            token_hash,
            created_ms: now_ms(),
            // An administrator's deploy token: its module uploads and grants take effect at once,
            // as a signed-in administrator's do (docs/replay.md, "Capabilities and approval").
            scope: "approve".to_owned(),
            expires_ms: None,
        })
        .await?;
    Ok(())
}

/// A stopped BEAN job of `group` running `handler`, with no schedule, routed FIRST; callers
/// set the schedule and status they need.
pub fn bean_job(group: GroupId, desc: &str, handler: &str) -> Job {
    let now = Utc::now();
    Job {
        job_group: group,
        job_desc: desc.to_owned(),
        add_time: Some(now),
        update_time: Some(now),
        author: Some("tests".to_owned()),
        alarm_email: None,
        schedule_type: "NONE".into(),
        schedule_conf: None,
        misfire_strategy: "DO_NOTHING".into(),
        executor_route_strategy: Some("FIRST".into()),
        executor_handler: Some(handler.to_owned()),
        executor_param: Some(String::new()),
        executor_block_strategy: Some("SERIAL_EXECUTION".into()),
        executor_timeout: 0,
        executor_fail_retry_count: 0,
        glue_type: "BEAN".into(),
        glue_source: None,
        glue_remark: None,
        glue_updatetime: Some(now),
        child_jobid: None,
        trigger_status: 0,
        trigger_last_time: 0,
        trigger_next_time: 0,
    }
}

/// An automatically registered group (`address_type` 0) named `app` for both AppName and title.
pub async fn auto_group(store: &dyn Store, app: &str) -> anyhow::Result<GroupId> {
    let group = Group {
        app_name: app.to_owned(),
        title: app.to_owned(),
        address_type: 0,
        address_list: None,
        update_time: None,
    };
    Ok(store.add_group(&group).await?)
}
