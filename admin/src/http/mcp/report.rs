//! The two tools that compose an answer rather than pass one through: a job's schedule
//! explained (its next fire times under its calendars and windows, in its zone) and the
//! lateness and missed-fire report (read from the admin's own metrics).

use axum::http::Method;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::api::Api;
use crate::http::McpState;
use crate::http::mgmt::auth::AgentToken;

/// The next `count` fire times of `job` (as `GET /api/v1/jobs/{id}` shows it).
pub(super) async fn explain(api: &Api, token: &AgentToken, job: &Value, count: u32) -> Result<Value, String> {
    let ids = |key: &str| {
        job[key]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).map(|i| i.to_string()).collect::<Vec<_>>().join(","))
    };
    let mut url = reqwest::Url::parse("http://localhost/api/v1/schedule/next").expect("a valid URL");
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("scheduleType", job["scheduleType"].as_str().unwrap_or("NONE"));
        q.append_pair("scheduleConf", job["scheduleConf"].as_str().unwrap_or_default());
        if let Some(zone) = job["timeZone"].as_str() {
            q.append_pair("timeZone", zone);
        }
        for key in ["onlyOn", "neverOn"] {
            if let Some(list) = ids(key).filter(|l| !l.is_empty()) {
                q.append_pair(key, &list);
            }
        }
        if let Some(windows) = job["exclusionWindows"].as_array().filter(|w| !w.is_empty()) {
            let text: Vec<&str> = windows.iter().filter_map(Value::as_str).collect();
            q.append_pair("exclusionWindows", &text.join(","));
        }
        q.append_pair("count", &count.to_string());
    }
    let path = format!("{}?{}", url.path(), url.query().unwrap_or_default());
    let next = api.call(token, Method::GET, &path, None).await.ok()?;
    let zone_name = job["timeZone"].as_str().map(str::to_owned);
    let zone: chrono_tz::Tz = zone_name.as_deref().and_then(|z| z.parse().ok()).unwrap_or(chrono_tz::UTC);
    let times: Vec<Value> = next["times"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|ms| DateTime::<Utc>::from_timestamp_millis(ms).map(|t| (ms, t)))
        .map(|(ms, t)| {
            json!({"epochMs": ms, "local": t.with_timezone(&zone).format("%Y-%m-%d %H:%M:%S %a").to_string(),
                   "utc": t.format("%Y-%m-%dT%H:%M:%SZ").to_string()})
        })
        .collect();
    Ok(json!({
        "job": job["id"], "description": job["jobDesc"],
        "scheduleType": job["scheduleType"], "scheduleConf": job["scheduleConf"],
        "timeZone": zone_name.unwrap_or_else(|| "the admin's zone (shown as UTC here)".to_owned()),
        "onlyOnCalendars": job["onlyOn"], "neverOnCalendars": job["neverOn"],
        "exclusionWindows": job["exclusionWindows"],
        "running": job["triggerStatus"] == 1,
        "nextFireTimes": times,
    }))
}

/// How late triggers were and how many fire times were missed, since this admin started.
pub(super) fn lateness(state: &McpState) -> Value {
    let crate::metrics::LatenessSnapshot { buckets, sum, count, misfires } =
        state.metrics.lateness_snapshot();
    let quantile = |q: f64| {
        let rank = (q * count as f64).ceil() as u64;
        buckets.iter().find(|(_, c)| *c >= rank.max(1)).map(|(le, _)| *le)
    };
    json!({
        "since": "this admin's start",
        "triggers": count,
        "meanLatenessSeconds": if count == 0 { 0.0 } else { sum / count as f64 },
        "p50AtMostSeconds": quantile(0.5),
        "p99AtMostSeconds": quantile(0.99),
        "buckets": buckets.iter().map(|(le, c)| json!({"le": le, "count": c})).collect::<Vec<_>>(),
        "missedFireTimesByStrategy": misfires,
        "note": "lateness is how long after its second a trigger left for its executor; missed fire times \
                 (DO_NOTHING) are also runs of their own in list_runs, failed with a 'Missed fire' message",
    })
}
