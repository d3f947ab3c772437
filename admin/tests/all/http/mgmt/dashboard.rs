//! `/api/v1/dashboard`: upstream's four counters and the per-day chart from the report table.

use chrono::{Days, NaiveDate, TimeZone as _, Utc};
use jobwheel_admin::cron::local_time_zone;
use jobwheel_admin::store::{Group, LogReport};
use serde_json::json;

use super::Env;
use crate::http::executor::job;

/// A report row for `day` (in the admin's zone, as the engine writes them).
async fn report(env: &Env, day: NaiveDate, running: i32, success: i32, failed: i32) {
    let midnight = local_time_zone()
        .from_local_datetime(&day.and_hms_opt(0, 0, 0).expect("midnight"))
        .earliest()
        .expect("midnight exists")
        .with_timezone(&Utc);
    env.store()
        .upsert_log_report(&LogReport {
            trigger_day: midnight,
            running_count: running,
            suc_count: success,
            fail_count: failed,
            update_time: Utc::now(),
        })
        .await
        .expect("report row");
}

fn today() -> NaiveDate {
    Utc::now().with_timezone(&local_time_zone()).date_naive()
}

fn days_ago(n: u64) -> NaiveDate {
    today().checked_sub_days(Days::new(n)).expect("date")
}

#[tokio::test]
async fn the_counters_sum_jobs_reports_and_distinct_executor_addresses() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = |app: &str, list: &str| Group {
        app_name: app.to_owned(),
        title: app.to_owned(),
        address_type: 1,
        address_list: Some(list.to_owned()),
        update_time: None,
    };
    let a = env.store().add_group(&group("app-a", "http://a:1/,http://b:1/")).await?;
    env.store().add_group(&group("app-b", "http://b:1/,http://c:1/")).await?;
    env.store().add_job(&job(a)).await?;
    env.store().add_job(&job(a)).await?;
    // Days the engine's report pass (today and the two before) does not rewrite.
    report(&env, days_ago(10), 1, 5, 2).await;
    report(&env, days_ago(8), 0, 3, 1).await;
    env.normal_user("alice", &[]).await;
    let (status, counters) = env.login("alice").await.get("/api/v1/dashboard").await;
    assert_eq!(status, 200, "any logged-in user");
    assert_eq!(counters, json!({"jobCount": 2, "logCount": 12, "logSuccessCount": 8, "executorCount": 3}));
    assert_eq!(env.anonymous().get("/api/v1/dashboard").await.0, 401);
    env.admin.stop().await
}

#[tokio::test]
async fn the_chart_has_every_day_of_the_range_with_zeros_for_missing_days() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    report(&env, days_ago(10), 1, 5, 2).await;
    report(&env, days_ago(8), 0, 3, 1).await;
    report(&env, days_ago(20), 9, 9, 9).await;
    let root = env.login("root").await;
    let (from, to) = (days_ago(10).format("%Y-%m-%d"), days_ago(8).format("%Y-%m-%d"));
    let (status, chart) = root.get(&format!("/api/v1/dashboard/chart?from={from}&to={to}")).await;
    assert_eq!(status, 200, "{chart}");
    assert_eq!(
        chart["days"],
        json!([from.to_string(), days_ago(9).format("%Y-%m-%d").to_string(), to.to_string()])
    );
    assert_eq!(
        (chart["running"].clone(), chart["success"].clone(), chart["failed"].clone()),
        (json!([1, 0, 0]), json!([5, 0, 3]), json!([2, 0, 1]))
    );
    assert_eq!(
        (chart["runningTotal"].as_i64(), chart["successTotal"].as_i64(), chart["failedTotal"].as_i64()),
        (Some(1), Some(8), Some(3))
    );

    // Without dates: the last seven days, ending today.
    let (status, week) = root.get("/api/v1/dashboard/chart").await;
    assert_eq!(status, 200);
    let days = week["days"].as_array().expect("days");
    assert_eq!(days.len(), 7);
    assert_eq!(
        (days[0].as_str(), days[6].as_str()),
        (Some(&*days_ago(6).format("%Y-%m-%d").to_string()), Some(&*today().format("%Y-%m-%d").to_string()))
    );

    for bad in [
        "from=2024-13-01",
        "from=yesterday",
        "from=2024-03-02&to=2024-03-01",
        "from=2020-01-01&to=2024-01-01",
    ] {
        let (status, reply) = root.get(&format!("/api/v1/dashboard/chart?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {reply}");
    }
    assert_eq!(env.anonymous().get("/api/v1/dashboard/chart").await.0, 401);
    env.admin.stop().await
}
