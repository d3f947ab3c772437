//! [`Alarm`]: every event the admin tells anyone about — a job's failed, missed, lost, overdue
//! or recovered run, a workflow's failed or missed instance or one past its duration — with the
//! key it is recorded under once, the subject it folds under and the [`Notice`] channels render.
//! The engine's alarm desk takes nothing else (`AlarmDesk::alarm`).

use super::notice::{EventKind, Notice, plain_text};
use super::workflow::WorkflowAlarmEvent;
use crate::store::{GroupRow, InstanceRow, InstanceStatus, JobRow, LogRow};

/// A run of a job and what it belongs to (upstream's `XxlJobInfo` and `XxlJobLog`).
#[derive(Debug, Clone)]
pub struct JobEvent {
    /// The job.
    pub job: JobRow,
    /// The job's group, if it still exists (its title is shown).
    pub group: Option<GroupRow>,
    /// The run's log.
    pub log: LogRow,
}

/// One thing worth telling.
#[derive(Debug, Clone)]
pub enum Alarm {
    /// A job's run: FAILED, MISSED or LOST from the fail monitor, OVERDUE from the duration
    /// sweep, RECOVERED for the first success after a failure alarm.
    Job {
        /// What happened.
        kind: EventKind,
        /// The run.
        event: JobEvent,
        /// The run has retries left: upstream's mail and webhook hear every failed attempt
        /// (as upstream), configured channels only the last.
        retrying: bool,
        /// The "should be done within" that was passed (OVERDUE), seconds.
        within_secs: Option<i64>,
    },
    /// A workflow's instance: WORKFLOW_FAILED, WORKFLOW_MISSED or WORKFLOW_OVERDUE.
    Workflow {
        /// What happened.
        kind: EventKind,
        /// The instance and its failed nodes.
        event: WorkflowAlarmEvent,
        /// The "should be done within" that was passed (WORKFLOW_OVERDUE), seconds.
        within_secs: Option<i64>,
    },
}

/// The key of an instance's end (WORKFLOW_FAILED or WORKFLOW_MISSED).
pub fn ended_key(kind: EventKind, instance: &InstanceRow) -> String {
    format!("{}:instance:{}:{}", kind.as_str(), instance.id.0, instance.end_ms)
}

/// What an ended instance tells: WORKFLOW_MISSED for a start that did not happen, else
/// WORKFLOW_FAILED.
pub fn ended_kind(instance: &InstanceRow) -> EventKind {
    if instance.status == InstanceStatus::Missed {
        EventKind::WorkflowMissed
    } else {
        EventKind::WorkflowFailed
    }
}

impl Alarm {
    /// A workflow instance's end: WORKFLOW_MISSED for a start that did not happen, else
    /// WORKFLOW_FAILED.
    pub fn workflow_ended(event: WorkflowAlarmEvent) -> Self {
        Alarm::Workflow { kind: ended_kind(&event.instance), event, within_secs: None }
    }

    /// What happened.
    pub fn kind(&self) -> EventKind {
        match self {
            Alarm::Job { kind, .. } | Alarm::Workflow { kind, .. } => *kind,
        }
    }

    /// Whether configured channels hear it (a failure with retries left is told to them only
    /// once the retries are spent).
    pub fn for_configured_channels(&self) -> bool {
        !matches!(self, Alarm::Job { retrying: true, .. })
    }

    /// The key the event is recorded under, once: `FAILED:log:12`, `WORKFLOW_OVERDUE:instance:3`;
    /// an instance's end with its end time (`WORKFLOW_FAILED:instance:3:1767261600000`), so a
    /// second failure after a rerun is an event of its own.
    pub fn key(&self) -> String {
        match self {
            Alarm::Job { kind, event, .. } => format!("{}:log:{}", kind.as_str(), event.log.id.0),
            Alarm::Workflow { kind: EventKind::WorkflowOverdue, event, .. } => {
                format!("{}:instance:{}", EventKind::WorkflowOverdue.as_str(), event.instance.id.0)
            }
            Alarm::Workflow { kind, event, .. } => ended_key(*kind, &event.instance),
        }
    }

    /// What it folds with (`job:3`); a recovery has its own, so it is never folded away
    /// behind the failures it ends.
    pub fn subject(&self) -> String {
        match self {
            Alarm::Job { kind: EventKind::Recovered, event, .. } => {
                format!("job:{}:recovered", event.job.id.0)
            }
            Alarm::Job { event, .. } => format!("job:{}", event.job.id.0),
            Alarm::Workflow { event, .. } => format!("workflow:{}", event.workflow.id.0),
        }
    }

    /// The notice every channel renders, seen at `now_ms`.
    pub fn notice(&self, now_ms: i64) -> Notice {
        match self {
            Alarm::Job { kind, event, within_secs, .. } => {
                let JobEvent { job, group, log } = event;
                // An overdue run is still going: it has no message yet.
                let message = if *kind == EventKind::Overdue {
                    None
                } else if log.handle_code != 0 {
                    log.handle_msg.as_deref()
                } else {
                    log.trigger_msg.as_deref()
                };
                Notice {
                    kind: kind.as_str().to_owned(),
                    title: job.job.job_desc.clone(),
                    job_id: Some(job.id.0),
                    group_id: Some(job.job.job_group.0),
                    group_title: group.as_ref().map(|g| g.group.title.clone()),
                    log_id: Some(log.id.0),
                    executor_address: log.executor_address.clone(),
                    trigger_time: log.trigger_time.map(|t| t.timestamp_millis()),
                    handle_code: Some(log.handle_code),
                    message: message.map(plain_text),
                    done_within_secs: *within_secs,
                    at_ms: now_ms,
                    alarm_email: job.job.alarm_email.clone(),
                    ..Notice::default()
                }
            }
            Alarm::Workflow { kind, event, within_secs } => {
                let w = &event.workflow;
                // An overrun counts from the instance's start, an end from its scheduled time.
                let trigger_time = if *kind == EventKind::WorkflowOverdue {
                    event.instance.start_ms
                } else {
                    event.instance.fire_time_ms
                };
                Notice {
                    kind: kind.as_str().to_owned(),
                    title: w.workflow.name.clone(),
                    group_id: Some(w.workflow.job_group.0),
                    group_title: event.group.as_ref().map(|g| g.group.title.clone()),
                    workflow_id: Some(w.id.0),
                    instance_id: Some(event.instance.id.0),
                    trigger_time: Some(trigger_time),
                    failed_nodes: event
                        .failed_nodes
                        .iter()
                        .map(|n| format!("{}: {}", n.node, n.message))
                        .collect(),
                    done_within_secs: *within_secs,
                    at_ms: now_ms,
                    alarm_email: Some(w.workflow.alarm_email.clone()).filter(|e| !e.is_empty()),
                    ..Notice::default()
                }
            }
        }
    }
}
