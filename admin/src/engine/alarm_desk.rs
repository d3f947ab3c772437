//! The alarm desk (docs/alarms.md): the one path every alarm takes — [`AlarmDesk::alarm`]
//! raises an [`Alarm`] on its channels and answers what came of it — and the deliveries.
//!
//! - **Raising**: the fail monitor hands it failed, missed and lost runs; the workflow sweep
//!   failed instances and missed starts; its own sweeps find runs and instances past their
//!   "should be done within" (each raised once: the event key is unique) and the first success
//!   after a failure alarm. Configured channels get deliveries the passes send; upstream's mail
//!   and webhook (`alarm/upstream.rs`) get deliveries sent at once, as upstream sends them.
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
use crate::alarm::outbox::{self, CLAIM_MS, Raise};
use crate::alarm::{
    Alarm, Attempt, ChannelSender, EventKind, JobEvent, Notice, UpstreamChannel, WorkflowAlarmEvent,
};
use crate::lang::MessageLang;
use crate::store::{
    DeliveryOutcome, DeliveryRow, DeliveryStatus, JobId, LogRow, RouteRow, Store, WorkflowId, route_scope,
};

/// Waits before the 2nd … 6th attempt.
pub const RETRY_DELAYS_MS: [i64; 5] = [10_000, 30_000, 120_000, 600_000, 1_800_000];
/// Deliveries one pass claims at most.
const BATCH: u32 = 50;
/// Runs or instances one duration sweep raises at most per job or workflow.
const SWEEP_LIMIT: u32 = 100;

/// How often the duration and recovery sweeps run (deliveries go every pass, each second): an
/// overdue run is told within 5 s of its limit, for a few queries every 5 s.
pub const SWEEP_EVERY_MS: i64 = 5_000;

/// What raising an alarm came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlarmOutcome {
    /// Deliveries queued or folded on configured channels (sent by the passes).
    pub queued: usize,
    /// Upstream's channels that accepted it at once.
    pub sent: usize,
    /// Upstream's channels that did not (their deliveries are retried).
    pub failed: usize,
    /// Upstream's channels with nothing to send (a mail for a job without `alarm_email`).
    pub not_needed: usize,
}

impl AlarmOutcome {
    /// Whether the alarm counts as sent — upstream's `alarm_status` 2, else 3 — the one place
    /// this is decided. Where upstream's mail or webhook told it, upstream's rule: every one
    /// accepted it (a mail with no address to go to counts as accepted). Otherwise a delivery
    /// queued on a configured channel counts (its own outcome is in the delivery log). No
    /// channel at all is not sent, as upstream, so a missing configuration shows.
    pub fn counted_as_sent(&self) -> bool {
        if self.sent + self.failed + self.not_needed > 0 { self.failed == 0 } else { self.queued > 0 }
    }
}

/// Raises and delivers alarms.
pub struct AlarmDesk {
    store: Arc<dyn Store>,
    sender: ChannelSender,
    /// When the sweeps last ran, epoch ms.
    last_sweep_ms: AtomicI64,
}

/// Which event a failed log is: a missed fire and a lost run are told apart by the messages
/// the admin itself wrote on them (in either language).
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

impl AlarmDesk {
    pub(super) fn new(store: Arc<dyn Store>, sender: ChannelSender) -> Self {
        Self { store, sender, last_sweep_ms: AtomicI64::new(i64::MIN) }
    }

    /// Raises `alarm` at `now_ms` on its channels: the configured ones of its job or workflow
    /// (its own, else its group's) and upstream's mail and webhook, which are sent before this
    /// answers. A failure also marks the job failing, for the recovery alarm.
    pub async fn alarm(&self, alarm: &Alarm, now_ms: i64) -> Result<AlarmOutcome, EngineError> {
        let channels =
            if alarm.for_configured_channels() { self.route(alarm).await?.channel_ids() } else { Vec::new() };
        if let Alarm::Job { kind: EventKind::Failed | EventKind::Lost, event, .. } = alarm
            && !channels.is_empty()
        {
            self.store.mark_failing(event.job.id, event.log.id, now_ms).await?;
        }
        let notice = alarm.notice(now_ms);
        let raise = Raise {
            key: alarm.key(),
            subject: alarm.subject(),
            upstream: self.sender.upstream().forms(alarm, &notice),
            notice,
            channels,
            fold: true,
        };
        let raised = outbox::raise(self.store.as_ref(), &raise, now_ms).await?;
        let mut outcome =
            AlarmOutcome { queued: raised.queued, not_needed: raised.not_needed, ..AlarmOutcome::default() };
        let mut sends = JoinSet::new();
        for id in raised.at_once {
            let Some(delivery) = self.store.load_delivery(id).await? else { continue };
            let (store, sender) = (Arc::clone(&self.store), self.sender.clone());
            sends.spawn(async move { deliver(store.as_ref(), &sender, &delivery, now_ms).await });
        }
        while let Some(joined) = sends.join_next().await {
            match joined {
                Ok(Ok(DeliveryStatus::Sent)) => outcome.sent += 1,
                Ok(Ok(_)) => outcome.failed += 1,
                Ok(Err(error)) => {
                    tracing::error!(%error, "alarm delivery not stored");
                    outcome.failed += 1;
                }
                Err(error) => {
                    tracing::error!(%error, "alarm delivery task failed");
                    outcome.failed += 1;
                }
            }
        }
        Ok(outcome)
    }

    /// The configured channels and duration of what `alarm` is about.
    async fn route(&self, alarm: &Alarm) -> Result<RouteRow, EngineError> {
        let store = self.store.as_ref();
        Ok(match alarm {
            Alarm::Job { event, .. } => {
                outbox::job_route(store, event.job.id, event.job.job.job_group).await?
            }
            Alarm::Workflow { event, .. } => {
                let w = &event.workflow;
                outbox::workflow_route(store, w.id.0, w.workflow.job_group).await?
            }
        })
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

    /// Raises OVERDUE for runs still going past their job's "should be done within"; how many
    /// deliveries were queued.
    pub async fn overdue_runs(&self, now_ms: i64) -> Result<usize, EngineError> {
        let mut raised = 0;
        for route in self.store.timed_routes(route_scope::JOB).await? {
            let Ok(job_id) = i32::try_from(route.target_id) else { continue };
            let Some(job) = self.store.load_job(JobId(job_id)).await? else { continue };
            let within_ms = i64::from(route.done_within_secs) * 1000;
            let before_secs = (now_ms - within_ms).div_euclid(1000);
            let logs =
                self.store.running_logs_before(job.id, job.job.job_group, before_secs, SWEEP_LIMIT).await?;
            if logs.is_empty() {
                continue;
            }
            let group = self.store.load_group(job.job.job_group).await?;
            for log in logs {
                let alarm = Alarm::Job {
                    kind: EventKind::Overdue,
                    event: JobEvent { job: job.clone(), group: group.clone(), log },
                    retrying: false,
                    within_secs: Some(i64::from(route.done_within_secs)),
                };
                raised += self.alarm(&alarm, now_ms).await?.queued;
            }
        }
        Ok(raised)
    }

    /// Raises WORKFLOW_OVERDUE for instances running past their workflow's duration; how many
    /// deliveries were queued.
    pub async fn overdue_instances(&self, now_ms: i64) -> Result<usize, EngineError> {
        let mut raised = 0;
        for route in self.store.timed_routes(route_scope::WORKFLOW).await? {
            let id = WorkflowId(route.target_id);
            let Some(workflow) = self.store.load_workflow(id).await? else { continue };
            let before = now_ms - i64::from(route.done_within_secs) * 1000;
            let group = self.store.load_group(workflow.workflow.job_group).await?;
            for instance in self.store.running_instances_before(id.0, before, SWEEP_LIMIT).await? {
                let event = WorkflowAlarmEvent {
                    workflow: workflow.clone(),
                    group: group.clone(),
                    instance,
                    failed_nodes: Vec::new(),
                };
                let alarm = Alarm::Workflow {
                    kind: EventKind::WorkflowOverdue,
                    event,
                    within_secs: Some(i64::from(route.done_within_secs)),
                };
                raised += self.alarm(&alarm, now_ms).await?.queued;
            }
        }
        Ok(raised)
    }

    /// Raises RECOVERED for failing jobs that have succeeded since; how many deliveries were
    /// queued.
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
            let alarm = Alarm::Job {
                kind: EventKind::Recovered,
                event: JobEvent { job, group, log },
                retrying: false,
                within_secs: None,
            };
            raised += self.alarm(&alarm, now_ms).await?.queued;
        }
        Ok(raised)
    }

    /// Claims the due deliveries and sends them all at once; each one's final status.
    pub async fn deliver_due(&self, now_ms: i64) -> Result<Vec<(DeliveryRow, DeliveryStatus)>, EngineError> {
        let mut sends = JoinSet::new();
        for delivery in self.store.due_deliveries(now_ms, BATCH).await? {
            if !self.store.claim_delivery(&delivery, now_ms + CLAIM_MS).await? {
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

/// One attempt at `d`, claimed by the caller; its outcome stored. Answers the status it ended in.
async fn deliver(
    store: &dyn Store,
    sender: &ChannelSender,
    d: &DeliveryRow,
    now_ms: i64,
) -> Result<DeliveryStatus, EngineError> {
    let attempts = d.attempts + 1;
    let Some(event) = store.load_event(d.event_id).await? else {
        return skip(store, d, now_ms).await;
    };
    let notice: Notice = serde_json::from_str(&event.notice).unwrap_or_default();
    let (name, attempt): (String, Attempt) = match UpstreamChannel::of(d.channel_id) {
        Some(upstream) => (upstream.name().to_owned(), sender.send_upstream(upstream, &notice, d).await),
        None => {
            let channel = store.load_channel(d.channel_id).await?;
            let Some(channel) = channel.filter(|c| c.channel.enabled.is_on()) else {
                return skip(store, d, now_ms).await;
            };
            let attempt = sender.send(&channel, &notice, d.folded, now_ms).await;
            (channel.channel.name, attempt)
        }
    };
    let retry = usize::try_from(d.attempts).ok().and_then(|i| RETRY_DELAYS_MS.get(i).copied());
    let (status, due_ms) = match (attempt.ok, retry) {
        (true, _) => (DeliveryStatus::Sent, d.due_ms),
        (false, Some(wait)) => (DeliveryStatus::Pending, now_ms + wait),
        (false, None) => (DeliveryStatus::Failed, d.due_ms),
    };
    if !attempt.ok {
        tracing::warn!(delivery = d.id.0, channel = %name, attempts, answer = %attempt.answer, "alarm delivery failed");
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

/// Ends `d` as SKIPPED: its channel was disabled or deleted.
async fn skip(store: &dyn Store, d: &DeliveryRow, now_ms: i64) -> Result<DeliveryStatus, EngineError> {
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
    Ok(DeliveryStatus::Skipped)
}
