//! The alarm desk (docs/alarms.md): raises events on the configured channels and delivers them.
//!
//! - **Raising**: the fail monitor hands it failed, missed and lost runs that have no retries
//!   left; the workflow sweep failed instances and missed starts; its own sweeps find runs and
//!   instances past their "should be done within" (each raised once: the event key is unique)
//!   and the first success after a failure alarm.
//! - **Delivering**: each pass claims due deliveries (a guarded update with a lease, so of
//!   several admins one sends each, and a dead admin's claim is taken again when its lease
//!   ends), sends them at once, and stores what was sent and the answer. A failed attempt is
//!   retried after 10 s, 30 s, 2 min, 10 min and 30 min; after the sixth it stays FAILED.
//!
//! Every pass takes `now_ms`, so tests drive retries, folding and durations with controlled time.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tokio::task::JoinSet;

use super::EngineError;
use super::i18n::{is_missed_fire, texts};
use crate::alarm::outbox::{self, Raise};
use crate::alarm::{ChannelSender, EventKind, Notice, SEND_TIMEOUT, plain_text};
use crate::lang::MessageLang;
use crate::store::{
    DeliveryOutcome, DeliveryRow, DeliveryStatus, GroupRow, JobRow, LogRow, Store, route_scope,
};

/// Waits before the 2nd … 6th attempt.
pub const RETRY_DELAYS_MS: [i64; 5] = [10_000, 30_000, 120_000, 600_000, 1_800_000];
/// Deliveries one pass claims at most.
const BATCH: u32 = 50;
/// Runs or instances one duration sweep raises at most per job or workflow.
const SWEEP_LIMIT: u32 = 100;
/// A claim outlives the longest attempt.
const LEASE_MS: i64 = 3 * SEND_TIMEOUT.as_millis() as i64;

/// How often the duration and recovery sweeps run (deliveries go every pass, each second): an
/// overdue run is told within 5 s of its limit, for a few queries every 5 s.
pub const SWEEP_EVERY_MS: i64 = 5_000;

/// Raises and delivers alarms on configured channels.
pub struct AlarmDesk {
    store: Arc<dyn Store>,
    sender: ChannelSender,
    /// When the sweeps last ran, epoch ms.
    last_sweep_ms: AtomicI64,
}

/// Which configured-channel event a failed log is: a missed fire and a lost run are told
/// apart by the messages the admin itself wrote on them (in either language).
pub(super) fn classify(log: &LogRow) -> EventKind {
    let langs = [texts(MessageLang::Zh), texts(MessageLang::En)];
    if log.handle_code == 0 && is_missed_fire(log.trigger_msg.as_deref().unwrap_or_default()) {
        return EventKind::Missed;
    }
    let handle_msg = log.handle_msg.as_deref().unwrap_or_default();
    if langs.iter().any(|t| handle_msg == t.lost_fail || handle_msg == t.trigger_stalled) {
        return EventKind::Lost;
    }
    EventKind::Failed
}

/// The notice of `kind` about `log` of `job`.
pub(super) fn log_notice(
    kind: EventKind,
    job: &JobRow,
    group: Option<&GroupRow>,
    log: &LogRow,
    now_ms: i64,
) -> Notice {
    let message = if log.handle_code != 0 { log.handle_msg.as_deref() } else { log.trigger_msg.as_deref() };
    Notice {
        kind: kind.as_str().to_owned(),
        title: job.job.job_desc.clone(),
        job_id: Some(job.id.0),
        group_id: Some(job.job.job_group.0),
        group_title: group.map(|g| g.group.title.clone()),
        log_id: Some(log.id.0),
        executor_address: log.executor_address.clone(),
        trigger_time: log.trigger_time.map(|t| t.timestamp_millis()),
        handle_code: Some(log.handle_code),
        message: message.map(plain_text),
        at_ms: now_ms,
        alarm_email: job.job.alarm_email.clone(),
        ..Notice::default()
    }
}

impl AlarmDesk {
    pub(super) fn new(store: Arc<dyn Store>, sender: ChannelSender) -> Self {
        Self { store, sender, last_sweep_ms: AtomicI64::new(i64::MIN) }
    }

    /// Raises `kind` for `log` on its job's channels (its own, else its group's); how many
    /// deliveries were queued. A failure also marks the job failing, for the recovery alarm.
    pub async fn raise_log(
        &self,
        kind: EventKind,
        job: &JobRow,
        group: Option<&GroupRow>,
        log: &LogRow,
        now_ms: i64,
    ) -> Result<usize, EngineError> {
        let route = outbox::job_route(self.store.as_ref(), job.id, job.job.job_group).await?;
        let channels = route.channel_ids();
        if channels.is_empty() {
            return Ok(0);
        }
        if matches!(kind, EventKind::Failed | EventKind::Lost) {
            self.store.mark_failing(job.id, log.id, now_ms).await?;
        }
        let raise = Raise {
            key: format!("{}:log:{}", kind.as_str(), log.id.0),
            subject: format!("job:{}", job.id.0),
            notice: log_notice(kind, job, group, log, now_ms),
            channels,
            fold: true,
        };
        Ok(outbox::raise(self.store.as_ref(), &raise, now_ms).await?)
    }

    /// Raises a workflow's event (`notice` filled by the caller) on its channels.
    pub async fn raise_workflow(&self, notice: Notice, now_ms: i64) -> Result<usize, EngineError> {
        let (Some(workflow), Some(instance), Some(group)) =
            (notice.workflow_id, notice.instance_id, notice.group_id)
        else {
            return Ok(0);
        };
        let route =
            outbox::workflow_route(self.store.as_ref(), workflow, crate::store::GroupId(group)).await?;
        let raise = Raise {
            key: format!("{}:instance:{instance}", notice.kind),
            subject: format!("workflow:{workflow}"),
            channels: route.channel_ids(),
            notice,
            fold: true,
        };
        Ok(outbox::raise(self.store.as_ref(), &raise, now_ms).await?)
    }

    /// One pass: every [`SWEEP_EVERY_MS`] the duration sweeps and recoveries, then the due
    /// deliveries; answers the deliveries attempted with the status each ended in.
    pub async fn pass(&self, now_ms: i64) -> Result<Vec<(DeliveryRow, DeliveryStatus)>, EngineError> {
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        if now_ms.saturating_sub(last) >= SWEEP_EVERY_MS {
            self.last_sweep_ms.store(now_ms, Ordering::Relaxed);
            self.overdue_runs(now_ms).await?;
            self.overdue_instances(now_ms).await?;
            self.recoveries(now_ms).await?;
        }
        self.deliver_due(now_ms).await
    }

    /// Raises OVERDUE for runs still going past their job's "should be done within".
    pub async fn overdue_runs(&self, now_ms: i64) -> Result<usize, EngineError> {
        let mut raised = 0;
        for route in self.store.timed_routes(route_scope::JOB).await? {
            let Ok(job_id) = i32::try_from(route.target_id) else { continue };
            let Some(job) = self.store.load_job(crate::store::JobId(job_id)).await? else { continue };
            let within_ms = i64::from(route.done_within_secs) * 1000;
            let before_secs = (now_ms - within_ms).div_euclid(1000);
            let logs =
                self.store.running_logs_before(job.id, job.job.job_group, before_secs, SWEEP_LIMIT).await?;
            if logs.is_empty() {
                continue;
            }
            let group = self.store.load_group(job.job.job_group).await?;
            for log in logs {
                let mut notice = log_notice(EventKind::Overdue, &job, group.as_ref(), &log, now_ms);
                notice.done_within_secs = Some(i64::from(route.done_within_secs));
                notice.message = None;
                let own = outbox::job_route(self.store.as_ref(), job.id, job.job.job_group).await?;
                let raise = Raise {
                    key: format!("OVERDUE:log:{}", log.id.0),
                    subject: format!("job:{}", job.id.0),
                    notice,
                    channels: own.channel_ids(),
                    fold: true,
                };
                raised += outbox::raise(self.store.as_ref(), &raise, now_ms).await?;
            }
        }
        Ok(raised)
    }

    /// Raises WORKFLOW_OVERDUE for instances running past their workflow's duration.
    pub async fn overdue_instances(&self, now_ms: i64) -> Result<usize, EngineError> {
        let mut raised = 0;
        for route in self.store.timed_routes(route_scope::WORKFLOW).await? {
            let id = crate::store::WorkflowId(route.target_id);
            let Some(workflow) = self.store.load_workflow(id).await? else { continue };
            let before = now_ms - i64::from(route.done_within_secs) * 1000;
            let group = self.store.load_group(workflow.workflow.job_group).await?;
            for instance in self.store.running_instances_before(id.0, before, SWEEP_LIMIT).await? {
                let notice = Notice {
                    kind: EventKind::WorkflowOverdue.as_str().to_owned(),
                    title: workflow.workflow.name.clone(),
                    group_id: Some(workflow.workflow.job_group.0),
                    group_title: group.as_ref().map(|g| g.group.title.clone()),
                    workflow_id: Some(id.0),
                    instance_id: Some(instance.id.0),
                    trigger_time: Some(instance.start_ms),
                    done_within_secs: Some(i64::from(route.done_within_secs)),
                    at_ms: now_ms,
                    alarm_email: Some(workflow.workflow.alarm_email.clone()).filter(|e| !e.is_empty()),
                    ..Notice::default()
                };
                raised += self.raise_workflow(notice, now_ms).await?;
            }
        }
        Ok(raised)
    }

    /// Raises RECOVERED for failing jobs that have succeeded since.
    pub async fn recoveries(&self, now_ms: i64) -> Result<usize, EngineError> {
        let mut raised = 0;
        for failing in self.store.failing_jobs(200).await? {
            let Some(success) = self.store.success_after(failing.job_id, failing.log_id).await? else {
                continue;
            };
            if !self.store.clear_failing(failing.job_id, failing.log_id).await? {
                continue; // another admin took it
            }
            let (Some(job), Some(log)) =
                (self.store.load_job(failing.job_id).await?, self.store.load_log(success).await?)
            else {
                continue;
            };
            let group = self.store.load_group(job.job.job_group).await?;
            let route = outbox::job_route(self.store.as_ref(), job.id, job.job.job_group).await?;
            let raise = Raise {
                key: format!("RECOVERED:log:{}", log.id.0),
                // Its own subject: a recovery is never folded away behind the failures.
                subject: format!("job:{}:recovered", job.id.0),
                notice: log_notice(EventKind::Recovered, &job, group.as_ref(), &log, now_ms),
                channels: route.channel_ids(),
                fold: true,
            };
            raised += outbox::raise(self.store.as_ref(), &raise, now_ms).await?;
        }
        Ok(raised)
    }

    /// Claims the due deliveries and sends them all at once; each one's final status.
    pub async fn deliver_due(&self, now_ms: i64) -> Result<Vec<(DeliveryRow, DeliveryStatus)>, EngineError> {
        let mut sends = JoinSet::new();
        for delivery in self.store.due_deliveries(now_ms, BATCH).await? {
            if !self.store.claim_delivery(&delivery, now_ms + LEASE_MS).await? {
                continue;
            }
            let (store, sender) = (Arc::clone(&self.store), self.sender.clone());
            sends.spawn(async move {
                let status = deliver(store.as_ref(), &sender, &delivery, now_ms).await;
                (delivery, status)
            });
        }
        let mut done = Vec::new();
        while let Some(joined) = sends.join_next().await {
            match joined {
                Ok((delivery, Ok(status))) => done.push((delivery, status)),
                Ok((delivery, Err(error))) => {
                    tracing::error!(delivery = delivery.id.0, %error, "alarm delivery not stored");
                }
                Err(error) => tracing::error!(%error, "alarm delivery task failed"),
            }
        }
        Ok(done)
    }
}

/// One attempt at `d`; its outcome stored. Answers the status it ended in.
async fn deliver(
    store: &dyn Store,
    sender: &ChannelSender,
    d: &DeliveryRow,
    now_ms: i64,
) -> Result<DeliveryStatus, EngineError> {
    let channel = store.load_channel(d.channel_id).await?;
    let event = store.load_event(d.event_id).await?;
    let attempts = d.attempts + 1;
    let (Some(channel), Some(event)) = (channel.filter(|c| c.channel.enabled != 0), event) else {
        let outcome = DeliveryOutcome {
            status: DeliveryStatus::Skipped,
            due_ms: d.due_ms,
            attempts: d.attempts,
            sent_ms: now_ms,
            request: String::new(),
            answer_code: 0,
            answer: "the channel was disabled or deleted".to_owned(),
        };
        store.finish_delivery(d.id, &outcome).await?;
        return Ok(DeliveryStatus::Skipped);
    };
    let notice: Notice = serde_json::from_str(&event.notice).unwrap_or_default();
    let attempt = sender.send(&channel, &notice, d.folded, now_ms).await;
    let retry = usize::try_from(d.attempts).ok().and_then(|i| RETRY_DELAYS_MS.get(i).copied());
    let (status, due_ms) = match (attempt.ok, retry) {
        (true, _) => (DeliveryStatus::Sent, d.due_ms),
        (false, Some(wait)) => (DeliveryStatus::Pending, now_ms + wait),
        (false, None) => (DeliveryStatus::Failed, d.due_ms),
    };
    if !attempt.ok {
        tracing::warn!(delivery = d.id.0, channel = %channel.channel.name, attempts, answer = %attempt.answer, "alarm delivery failed");
    }
    let outcome = DeliveryOutcome {
        status,
        due_ms,
        attempts,
        sent_ms: now_ms,
        request: attempt.request,
        answer_code: attempt.answer_code,
        answer: attempt.answer,
    };
    store.finish_delivery(d.id, &outcome).await?;
    Ok(status)
}
