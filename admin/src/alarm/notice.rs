//! [`Notice`]: one thing worth telling, as every channel renders it — what happened
//! ([`EventKind`]), to which job or workflow, with the run's figures. It is stored with the
//! event as JSON (so a retry sends what was seen, even after the job changed) and is the
//! context of the generic webhook's template, so its field names are a contract.

use serde::{Deserialize, Serialize};

/// The events a channel can tell (docs/alarms.md, "Events").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventKind {
    /// A run failed and has no retries left.
    Failed,
    /// A fire time was skipped by the misfire strategy.
    Missed,
    /// A run's result never came (executor gone, or the admin stopped mid-trigger).
    Lost,
    /// A run is still going past the job's "should be done within".
    Overdue,
    /// The first success after a failure alarm.
    Recovered,
    /// A workflow instance failed.
    WorkflowFailed,
    /// A workflow's scheduled start did not happen.
    WorkflowMissed,
    /// A workflow instance is still running past its "should be done within".
    WorkflowOverdue,
    /// Sent from the channel's page to try it.
    Test,
}

impl EventKind {
    /// Every kind, in the order forms list them.
    pub const ALL: [EventKind; 9] = [
        EventKind::Failed,
        EventKind::Missed,
        EventKind::Lost,
        EventKind::Overdue,
        EventKind::Recovered,
        EventKind::WorkflowFailed,
        EventKind::WorkflowMissed,
        EventKind::WorkflowOverdue,
        EventKind::Test,
    ];

    /// What a new channel tells: everything but recoveries (which are opt-in).
    pub const DEFAULT: [EventKind; 7] = [
        EventKind::Failed,
        EventKind::Missed,
        EventKind::Lost,
        EventKind::Overdue,
        EventKind::WorkflowFailed,
        EventKind::WorkflowMissed,
        EventKind::WorkflowOverdue,
    ];

    /// The stored and API name (`FAILED`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Failed => "FAILED",
            EventKind::Missed => "MISSED",
            EventKind::Lost => "LOST",
            EventKind::Overdue => "OVERDUE",
            EventKind::Recovered => "RECOVERED",
            EventKind::WorkflowFailed => "WORKFLOW_FAILED",
            EventKind::WorkflowMissed => "WORKFLOW_MISSED",
            EventKind::WorkflowOverdue => "WORKFLOW_OVERDUE",
            EventKind::Test => "TEST",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The headline of a message.
    pub fn headline(self) -> &'static str {
        match self {
            EventKind::Failed => "Run failed",
            EventKind::Missed => "Fire time missed",
            EventKind::Lost => "Run lost",
            EventKind::Overdue => "Run still going past its expected duration",
            EventKind::Recovered => "Recovered: a run succeeded after a failure",
            EventKind::WorkflowFailed => "Workflow instance failed",
            EventKind::WorkflowMissed => "Workflow start missed",
            EventKind::WorkflowOverdue => "Workflow instance still running past its expected duration",
            EventKind::Test => "Test message",
        }
    }

    /// Whether the event is good news (vendors colour it differently).
    pub fn is_good(self) -> bool {
        matches!(self, EventKind::Recovered | EventKind::Test)
    }
}

/// One event as channels tell it. Absent figures are `None` (a workflow has no log).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// [`EventKind::as_str`].
    pub kind: String,
    /// The job's description or the workflow's name.
    pub title: String,
    /// `xxl_job_info.id`.
    pub job_id: Option<i32>,
    /// The group's id.
    pub group_id: Option<i32>,
    /// The group's title.
    pub group_title: Option<String>,
    /// `xxl_job_log.id`.
    pub log_id: Option<i64>,
    /// Where the run went.
    pub executor_address: Option<String>,
    /// The fire (or trigger) time, epoch ms.
    pub trigger_time: Option<i64>,
    /// 0 (none yet), 200, 500 …
    pub handle_code: Option<i32>,
    /// The run's or trigger's message, plain text.
    pub message: Option<String>,
    /// The workflow's id.
    pub workflow_id: Option<i64>,
    /// The instance's id.
    pub instance_id: Option<i64>,
    /// Failed nodes of a workflow instance (`name: message`).
    pub failed_nodes: Vec<String>,
    /// The "should be done within" that was passed, seconds.
    pub done_within_secs: Option<i64>,
    /// When the event was seen, epoch ms.
    pub at_ms: i64,
    /// The job's (or workflow's) `alarmEmail`: where an e-mail channel without recipients of
    /// its own sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_email: Option<String>,
}

impl Notice {
    /// The kind, if it is one this version knows.
    pub fn event_kind(&self) -> Option<EventKind> {
        EventKind::parse(&self.kind)
    }

    /// The message's title line (`[jobwheel] Run failed: nightly-etl`).
    pub fn subject_line(&self) -> String {
        let headline = match self.event_kind() {
            Some(kind) => kind.headline(),
            None => self.kind.as_str(),
        };
        format!("[jobwheel] {headline}: {}", self.title)
    }

    /// The message as lines of `label: value`, plain text, with the fold count last.
    pub fn lines(&self, folded: i32) -> Vec<(&'static str, String)> {
        let mut lines = Vec::new();
        let time = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .map_or_else(|| ms.to_string(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        };
        if let Some(id) = self.job_id {
            lines.push(("Job", format!("#{id} {}", self.title)));
        }
        if let Some(id) = self.workflow_id {
            lines.push(("Workflow", format!("#{id} {}", self.title)));
        }
        if let Some(group) = &self.group_title {
            lines.push(("Group", group.clone()));
        }
        if let Some(id) = self.log_id {
            lines.push(("Log", id.to_string()));
        }
        if let Some(id) = self.instance_id {
            lines.push(("Instance", id.to_string()));
        }
        if let Some(address) = &self.executor_address {
            lines.push(("Executor", address.clone()));
        }
        if let Some(t) = self.trigger_time {
            lines.push(("Fire time", time(t)));
        }
        if let Some(secs) = self.done_within_secs {
            lines.push(("Should be done within", format!("{secs} s")));
        }
        if let Some(code) = self.handle_code.filter(|c| *c != 0) {
            lines.push(("Result code", code.to_string()));
        }
        if let Some(message) = self.message.as_deref().filter(|m| !m.is_empty()) {
            lines.push(("Message", message.to_owned()));
        }
        for node in &self.failed_nodes {
            lines.push(("Failed node", node.clone()));
        }
        lines.push(("Seen at", time(self.at_ms)));
        if folded > 0 {
            lines.push(("Folded", format!("{folded} more like it since the last message")));
        }
        lines
    }

    /// Plain text: the subject line, then the lines.
    pub fn text(&self, folded: i32) -> String {
        let mut out = self.subject_line();
        for (label, value) in self.lines(folded) {
            out.push_str(&format!("\n{label}: {value}"));
        }
        out
    }

    /// Markdown (DingTalk, WeCom, Slack's mrkdwn differs only in bold): a bold title and a
    /// list of the lines, every text that users wrote (titles, descriptions, handle messages)
    /// passed through `escape`, so it cannot add mentions, links or images (review N9).
    pub fn markdown(&self, folded: i32, bold: &str, escape: fn(&str) -> String) -> String {
        let mut out = format!("{bold}{}{bold}\n", escape(&self.subject_line()));
        for (label, value) in self.lines(folded) {
            out.push_str(&format!("\n- {label}: {}", escape(&value.replace('\n', " "))));
        }
        out
    }
}

/// Text for Slack's mrkdwn: `&`, `<` and `>` as entities, so `<!channel>` or `<url|label>`
/// written by a user stays text (Slack's own rule for escaping).
pub(crate) fn escape_slack(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Text for DingTalk's and WeCom's markdown: the characters that make links, images, emphasis,
/// headings and HTML (`<font>`, `<@user>`) backslash-escaped or as entities.
pub(crate) fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '[' | ']' | '(' | ')' | '!' | '*' | '_' | '`' | '#' | '|' | '~' | '@' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The text of an upstream message that may hold HTML (`<br>`, `<span>`): tags become line
/// breaks or nothing, entities are decoded.
pub fn plain_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        match rest[start..].find('>') {
            Some(end) => {
                let tag = rest[start + 1..start + end].trim().to_ascii_lowercase();
                if tag.starts_with("br") || tag.starts_with("/p") || tag.starts_with("/div") {
                    out.push('\n');
                }
                rest = &rest[start + end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    let decoded = html_escape::decode_html_entities(&out).into_owned();
    decoded.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_messages_become_plain_lines() {
        let html = "任务触发类型：Cron触发<br>调度机器：10.0.0.1<br><br><span style=\"color:#00c0ef;\" > &gt;&gt;&gt;触发调度&lt;&lt;&lt; </span><br>";
        assert_eq!(plain_text(html), "任务触发类型：Cron触发\n调度机器：10.0.0.1\n>>>触发调度<<<");
        assert_eq!(plain_text("a < b"), "a < b");
    }

    #[test]
    fn kinds_round_trip_and_recovery_is_opt_in() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(kind));
        }
        assert!(!EventKind::DEFAULT.contains(&EventKind::Recovered));
    }
}
