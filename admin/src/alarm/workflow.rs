//! Workflow alarms (jobwheel): an instance that ended FAILED, or a scheduled start that was
//! missed (more than 5 s late under `DO_NOTHING`, or skipped at max instances). The workflow
//! sweep claims each waiting instance once (`instance_alarm`) and hands it to every channel:
//! the e-mail channel mails the workflow's `alarm_email`, the webhook channel POSTs
//! [`WorkflowWebhookPayload`].

use serde::Serialize;

use crate::domain::TriggerType;
use crate::lang::MessageLang;
use crate::store::{GroupRow, InstanceRow, InstanceStatus, WorkflowRow};

/// A node that failed in the instance, with its last message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedNode {
    /// The node's name.
    pub node: String,
    /// Its run's message (the handle or trigger message).
    pub message: String,
}

/// What a workflow alarm is about.
#[derive(Debug, Clone)]
pub struct WorkflowAlarmEvent {
    /// The workflow.
    pub workflow: WorkflowRow,
    /// Its owner group, if it still exists.
    pub group: Option<GroupRow>,
    /// The failed or missed instance.
    pub instance: InstanceRow,
    /// The nodes that failed (none for a missed start).
    pub failed_nodes: Vec<FailedNode>,
}

impl WorkflowAlarmEvent {
    /// `WORKFLOW_MISSED` or `WORKFLOW_FAIL`.
    pub fn alarm_type(&self) -> &'static str {
        if self.instance.status == InstanceStatus::Missed { "WORKFLOW_MISSED" } else { "WORKFLOW_FAIL" }
    }

    /// One sentence saying what happened, in `lang`.
    pub fn summary(&self, lang: MessageLang) -> String {
        let name = &self.workflow.workflow.name;
        let late = self.instance.trigger_type.is(TriggerType::Misfire);
        let nodes = self.failed_nodes.iter().map(|n| n.node.as_str()).collect::<Vec<_>>().join(", ");
        match (lang, self.instance.status == InstanceStatus::Missed, late) {
            (MessageLang::Zh, true, true) => {
                format!("工作流 {name} 的计划启动已过期超过 5 秒，按「忽略」未启动")
            }
            (MessageLang::Zh, true, false) => {
                format!("工作流 {name} 的计划启动因运行中的实例已达上限而被跳过")
            }
            (MessageLang::Zh, false, _) => {
                format!("工作流 {name} 的实例 #{} 失败，失败节点：{nodes}", self.instance.id)
            }
            (MessageLang::En, true, true) => {
                format!(
                    "A scheduled start of workflow {name} was more than 5 s late and, under DO_NOTHING, did not run"
                )
            }
            (MessageLang::En, true, false) => {
                format!(
                    "A scheduled start of workflow {name} was skipped: its maximum of instances was running"
                )
            }
            (MessageLang::En, false, _) => {
                format!("Instance #{} of workflow {name} failed; failed nodes: {nodes}", self.instance.id)
            }
        }
    }

    /// The alarm mail's HTML: the summary and one row per failed node. Names and messages come
    /// from users and executors, so every one is escaped.
    pub fn mail_html(&self, lang: MessageLang) -> String {
        let text = |value: &str| html_escape::encode_text(value).into_owned();
        let mut rows = String::new();
        for node in &self.failed_nodes {
            let message = text(&node.message).replace("&lt;br&gt;", "<br>");
            rows.push_str(&format!("<tr><td>{}</td><td>{message}</td></tr>", text(&node.node)));
        }
        let table = if rows.is_empty() {
            String::new()
        } else {
            format!("<table border=\"1\" cellpadding=\"3\" style=\"border-collapse:collapse\">{rows}</table>")
        };
        let group = self.group.as_ref().map_or_else(String::new, |g| text(&g.group.title));
        format!(
            "<h5>{}</h5><p>{}</p><p>{group} · #{} · {}</p>{table}",
            self.alarm_type(),
            text(&self.summary(lang)),
            self.instance.id,
            text(&self.instance.started_by())
        )
    }
}

/// The JSON body of a workflow webhook alarm: a wire contract for receivers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowWebhookPayload {
    /// `WORKFLOW_FAIL` or `WORKFLOW_MISSED`.
    pub alarm_type: &'static str,
    /// The workflow's id and name.
    pub workflow_id: i64,
    /// Its name.
    pub workflow_name: String,
    /// Its owner group's id, and title if the group exists.
    pub job_group: i32,
    /// The group's title.
    pub job_group_title: Option<String>,
    /// The instance (a missed start is kept as an instance in state `MISSED`).
    pub instance_id: i64,
    /// `FAILED` or `MISSED`.
    pub status: &'static str,
    /// `CRON`, `MISFIRE`, `MANUAL`, `RERUN of …`.
    pub trigger_type: String,
    /// The scheduled (or requested) time, epoch ms.
    pub fire_time: i64,
    /// When it ended, epoch ms.
    pub end_time: i64,
    /// What happened, in English.
    pub summary: String,
    /// The nodes that failed.
    pub failed_nodes: Vec<FailedNode>,
}

impl WorkflowWebhookPayload {
    /// The payload describing `event`.
    pub fn from_event(event: &WorkflowAlarmEvent) -> Self {
        let missed = event.instance.status == InstanceStatus::Missed;
        Self {
            alarm_type: event.alarm_type(),
            workflow_id: event.workflow.id.0,
            workflow_name: event.workflow.workflow.name.clone(),
            job_group: event.workflow.workflow.job_group.0,
            job_group_title: event.group.as_ref().map(|g| g.group.title.clone()),
            instance_id: event.instance.id.0,
            status: if missed { "MISSED" } else { "FAILED" },
            trigger_type: event.instance.started_by(),
            fire_time: event.instance.fire_time_ms,
            end_time: event.instance.end_ms,
            summary: event.summary(MessageLang::En),
            failed_nodes: event.failed_nodes.clone(),
        }
    }
}
