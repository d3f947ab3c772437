//! [`WebhookAlarm`]: a JSON POST per failed log to a configured URL (a jobwheel extension;
//! upstream only ships e-mail). Any 2xx answer counts as delivered.

use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;

use super::{AlarmChannel, AlarmError, AlarmEvent, WorkflowAlarmEvent, WorkflowWebhookPayload};

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
    pub fn from_event(event: &AlarmEvent) -> Self {
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

#[async_trait]
impl AlarmChannel for WebhookAlarm {
    fn name(&self) -> &'static str {
        "webhook"
    }

    async fn alarm(&self, event: &AlarmEvent) -> Result<(), AlarmError> {
        self.post(&WebhookPayload::from_event(event)).await
    }

    async fn alarm_workflow(&self, event: &WorkflowAlarmEvent) -> Result<(), AlarmError> {
        self.post(&WorkflowWebhookPayload::from_event(event)).await
    }
}

impl WebhookAlarm {
    /// POSTs `payload`; anything but a 2xx answer is a failure.
    async fn post(&self, payload: &impl Serialize) -> Result<(), AlarmError> {
        let response = self
            .http
            .post(&self.url)
            .json(payload)
            .send()
            .await
            .map_err(|e| AlarmError::Webhook(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(AlarmError::Webhook(format!("answered HTTP {}", response.status().as_u16())));
        }
        Ok(())
    }
}
