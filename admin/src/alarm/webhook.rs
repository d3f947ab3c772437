//! [`WebhookAlarm`]: the admin's `--alarm-webhook-url` (a jobwheel extension; upstream only
//! ships e-mail), one of upstream's channels of the alarm desk (`upstream.rs`): a JSON POST per
//! failed log ([`WebhookPayload`]) or workflow end. Any 2xx answer counts as delivered.

use std::time::Duration;

use serde::Serialize;

use super::AlarmError;
use super::event::JobEvent;
use super::outbound::read_capped;
use super::sender::{Attempt, clip};

/// The JSON body of a webhook alarm: a wire contract for receivers, so field names are stable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookPayload {
    /// Always `"JOB_FAIL"` (the only alarm type upstream has).
    pub alarm_type: &'static str,
    /// `xxl_job_info.id`.
    pub job_id: i32,
    /// The job's description.
    pub job_desc: String,
    /// `xxl_job_group.id`.
    pub job_group: i32,
    /// The group's title, if the group exists.
    pub job_group_title: Option<String>,
    /// `xxl_job_log.id`.
    pub log_id: i64,
    /// Executor the trigger went to.
    pub executor_address: Option<String>,
    /// Trigger time, epoch ms.
    pub trigger_time: Option<i64>,
    /// 200 or 500.
    pub trigger_code: i32,
    /// HTML trigger message.
    pub trigger_msg: Option<String>,
    /// Result time, epoch ms.
    pub handle_time: Option<i64>,
    /// 0 (no result), 500, 502 …
    pub handle_code: i32,
    /// Result message.
    pub handle_msg: Option<String>,
    /// Retries left after this attempt.
    pub fail_retry_count: i32,
}

impl WebhookPayload {
    /// The payload describing `event`.
    pub fn from_event(event: &JobEvent) -> Self {
        let log = &event.log;
        Self {
            alarm_type: "JOB_FAIL",
            job_id: event.job.id.0,
            job_desc: event.job.job.job_desc.clone(),
            job_group: event.job.job.job_group.0,
            job_group_title: event.group.as_ref().map(|g| g.group.title.clone()),
            log_id: log.id.0,
            executor_address: log.executor_address.clone(),
            trigger_time: log.trigger_time.map(|t| t.timestamp_millis()),
            trigger_code: log.trigger_code,
            trigger_msg: log.trigger_msg.clone(),
            handle_time: log.handle_time.map(|t| t.timestamp_millis()),
            handle_code: log.handle_code,
            handle_msg: log.handle_msg.clone(),
            fail_retry_count: log.executor_fail_retry_count,
        }
    }
}

/// POSTs [`WebhookPayload`] as JSON to one URL.
#[derive(Debug, Clone)]
pub struct WebhookAlarm {
    http: reqwest::Client,
    url: String,
}

impl WebhookAlarm {
    /// A webhook to `url` with a per-call `timeout`.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Result<Self, AlarmError> {
        // The operator's own URL (`--alarm-webhook-url`), so no address policy; but no proxy
        // from the environment and no redirect, like every other alarm request (review N7).
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| AlarmError::Webhook(e.to_string()))?;
        Ok(Self { http, url: url.into() })
    }
}

impl WebhookAlarm {
    /// POSTs `body` (JSON); anything but a 2xx answer is a failure.
    pub(crate) async fn post(&self, body: &str) -> Attempt {
        let request =
            self.http.post(&self.url).header("Content-Type", "application/json").body(body.to_owned());
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                let (answer, _cut) = read_capped(response).await;
                let answer = if status.is_success() {
                    clip(&answer, super::sender::MAX_ANSWER)
                } else {
                    clip(&format!("answered HTTP {}: {answer}", status.as_u16()), super::sender::MAX_ANSWER)
                };
                Attempt {
                    ok: status.is_success(),
                    request: body.to_owned(),
                    answer_code: i32::from(status.as_u16()),
                    answer,
                }
            }
            // Without the URL: the operator's may carry a token.
            Err(e) => Attempt::refused(body.to_owned(), e.without_url().to_string()),
        }
    }
}
