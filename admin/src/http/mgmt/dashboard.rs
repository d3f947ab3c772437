//! `/api/v1/dashboard`: upstream's four counters and the per-day run chart, both from the
//! report table the engine recounts every minute (upstream `IndexController`).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use chrono::{Days, NaiveDate};
use serde::{Deserialize, Serialize};

use super::ApiQuery;
use super::auth::Principal;
use crate::cron::local_time_zone;
use crate::engine::local_midnight;
use crate::http::{ApiError, MgmtState};
use crate::routing::split_address_list;
use crate::store::{JobFilter, Page};

/// Days shown when the chart is asked without dates (upstream's "recent week").
const DEFAULT_DAYS: u64 = 7;
/// The longest chart range, so one request cannot ask for centuries of zeros.
const MAX_DAYS: i64 = 366;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Counters {
    job_count: u64,
    log_count: i64,
    log_success_count: i64,
    executor_count: usize,
}

/// `GET /api/v1/dashboard`: all jobs, all reported runs and successes, and the distinct
/// executor addresses over every group's address list (upstream counts the same, for every
/// logged-in user).
pub(crate) async fn counters(
    State(state): State<Arc<MgmtState>>,
    _principal: Principal,
) -> Result<Json<Counters>, ApiError> {
    let job_count = state.store.page_jobs(&JobFilter::default(), Page { offset: 0, limit: 1 }).await?.total;
    let totals = state.store.log_report_totals().await?;
    let executors: BTreeSet<String> = state
        .store
        .list_groups()
        .await?
        .into_iter()
        .filter_map(|g| g.group.address_list)
        .flat_map(|list| split_address_list(&list))
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty())
        .collect();
    Ok(Json(Counters {
        job_count,
        log_count: totals.running + totals.success + totals.failed,
        log_success_count: totals.success,
        executor_count: executors.len(),
    }))
}

#[derive(Deserialize)]
pub(crate) struct ChartQuery {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Chart {
    days: Vec<String>,
    running: Vec<i64>,
    success: Vec<i64>,
    failed: Vec<i64>,
    running_total: i64,
    success_total: i64,
    failed_total: i64,
}

fn date(field: &str, value: Option<&str>) -> Result<Option<NaiveDate>, ApiError> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| {
            NaiveDate::parse_from_str(v, "%Y-%m-%d")
                .map_err(|_| ApiError::BadRequest(format!("{field}: {v:?} is not a date (YYYY-MM-DD)")))
        })
        .transpose()
}

/// `GET /api/v1/dashboard/chart?from=&to=`: one entry per day of `[from, to]` (days in the
/// admin's time zone, as the engine counts them), zeros for days without a report row.
pub(crate) async fn chart(
    State(state): State<Arc<MgmtState>>,
    _principal: Principal,
    ApiQuery(query): ApiQuery<ChartQuery>,
) -> Result<Json<Chart>, ApiError> {
    let tz = local_time_zone();
    let today = state.clock.now().with_timezone(&tz).date_naive();
    let back = |day: NaiveDate| day.checked_sub_days(Days::new(DEFAULT_DAYS - 1)).unwrap_or(day);
    let (from, to) = match (date("from", query.from.as_deref())?, date("to", query.to.as_deref())?) {
        (Some(from), Some(to)) => (from, to),
        (Some(from), None) => (from, today.max(from)),
        (None, Some(to)) => (back(to), to),
        (None, None) => (back(today), today),
    };
    if from > to {
        return Err(ApiError::BadRequest("from: must not be after to".to_owned()));
    }
    if (to - from).num_days() >= MAX_DAYS {
        return Err(ApiError::BadRequest(format!("to: the range may span at most {MAX_DAYS} days")));
    }
    let (Some(start), Some(end)) = (local_midnight(tz, from), local_midnight(tz, to)) else {
        return Err(ApiError::BadRequest("from: the dates are outside the supported range".to_owned()));
    };
    let by_day: HashMap<NaiveDate, (i64, i64, i64)> = state
        .store
        .log_reports(start, end)
        .await?
        .into_iter()
        .filter_map(|row| {
            let day = row.trigger_day?.with_timezone(&tz).date_naive();
            Some((day, (row.running_count.into(), row.suc_count.into(), row.fail_count.into())))
        })
        .collect();
    let mut chart = Chart::default();
    for day in from.iter_days().take_while(|d| *d <= to) {
        let (running, success, failed) = by_day.get(&day).copied().unwrap_or_default();
        chart.days.push(day.format("%Y-%m-%d").to_string());
        chart.running.push(running);
        chart.success.push(success);
        chart.failed.push(failed);
        chart.running_total += running;
        chart.success_total += success;
        chart.failed_total += failed;
    }
    Ok(Json(chart))
}
