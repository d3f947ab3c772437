//! [`EmailAlarm`]: upstream's `EmailJobAlarm` over SMTP with lettre — one HTML mail per distinct
//! address in the job's `alarm_email`, with upstream's subject and table. One of upstream's
//! channels of the alarm desk (`upstream.rs`); its transport also sends configured e-mail
//! channels (`sender.rs`).

use std::collections::BTreeSet;
use std::time::Duration;

use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::AlarmError;
use super::event::JobEvent;
use super::workflow::WorkflowAlarmEvent;
use crate::lang::MessageLang;

/// How the SMTP connection is secured (also the `--smtp-tls` flag's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SmtpTls {
    /// Plain SMTP (a local relay or a test sink).
    None,
    /// Plain connection upgraded with `STARTTLS` (required), usually port 587.
    #[value(name = "starttls")]
    StartTls,
    /// TLS from the first byte ("SMTPS"), usually port 465.
    Tls,
}

impl SmtpTls {
    /// The usual port for this kind of connection.
    pub fn default_port(self) -> u16 {
        match self {
            Self::None => 25,
            Self::StartTls => 587,
            Self::Tls => 465,
        }
    }
}

/// Where and how to send mail (upstream `spring.mail.*`).
#[derive(Clone)]
pub struct SmtpConfig {
    /// SMTP server host.
    pub host: String,
    /// SMTP server port.
    pub port: u16,
    /// Login, if the server wants one.
    pub username: Option<String>,
    /// Password for `username`.
    pub password: Option<String>,
    /// Sender address (`spring.mail.from`).
    pub from: String,
    /// Transport security.
    pub tls: SmtpTls,
    /// Per-connection timeout.
    pub timeout: Duration,
}

impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password stays out of logs.
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field("from", &self.from)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// Upstream's e-mail alarm.
pub struct EmailAlarm {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    lang: MessageLang,
}

impl std::fmt::Debug for EmailAlarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailAlarm").field("from", &self.from).finish_non_exhaustive()
    }
}

impl EmailAlarm {
    /// An alarm sending through `config`, writing labels in `lang`.
    pub fn new(config: &SmtpConfig, lang: MessageLang) -> Result<Self, AlarmError> {
        let builder = match config.tls {
            SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(config.host.clone()),
            SmtpTls::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&config.host)
                .map_err(|e| AlarmError::Email(e.to_string()))?,
            SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&config.host)
                .map_err(|e| AlarmError::Email(e.to_string()))?,
        };
        let mut builder = builder.port(config.port).timeout(Some(config.timeout));
        if let Some(username) = &config.username {
            builder = builder
                .credentials(Credentials::new(username.clone(), config.password.clone().unwrap_or_default()));
        }
        let from_address =
            config.from.parse().map_err(|e| AlarmError::Email(format!("from {:?}: {e}", config.from)))?;
        Ok(Self {
            transport: builder.build(),
            from: Mailbox::new(Some("jobwheel".to_owned()), from_address),
            lang,
        })
    }
}

impl EmailAlarm {
    /// Upstream's alarm mail of a job's run: its table, in the admin's language.
    pub(crate) fn job_html(&self, event: &JobEvent) -> String {
        mail_body(event, &Labels::of(self.lang))
    }

    /// The alarm mail of a workflow's end.
    pub(crate) fn workflow_html(&self, event: &WorkflowAlarmEvent) -> String {
        event.mail_html(self.lang)
    }

    /// Upstream's subject, in the admin's language.
    pub(crate) fn subject(&self) -> &'static str {
        Labels::of(self.lang).subject
    }
}

/// The distinct addresses of a comma-separated `alarm_email` (a job's or a workflow's).
pub(crate) fn addresses(list: &str) -> BTreeSet<&str> {
    list.split(',').map(str::trim).filter(|a| !a.is_empty()).collect()
}

impl EmailAlarm {
    /// Mails `body` (HTML) to each of `recipients`; like upstream, every address is tried and
    /// any failure is reported. `what` names the alarm in the log.
    pub(crate) async fn send(
        &self,
        recipients: BTreeSet<&str>,
        subject: &str,
        body: &str,
        what: &str,
    ) -> Result<(), AlarmError> {
        let mut failure = None;
        for to in recipients {
            let sent = async {
                let to = to.parse().map_err(|e| AlarmError::Email(format!("to {to:?}: {e}")))?;
                let message = Message::builder()
                    .from(self.from.clone())
                    .to(to)
                    .subject(subject)
                    .header(ContentType::TEXT_HTML)
                    .body(body.to_owned())
                    .map_err(|e| AlarmError::Email(e.to_string()))?;
                self.transport.send(message).await.map_err(|e| AlarmError::Email(e.to_string()))?;
                Ok::<(), AlarmError>(())
            }
            .await;
            if let Err(e) = sent {
                // Upstream tries every address and reports failure if any failed.
                tracing::error!(alarm = what, to, error = %e, "alarm mail not sent");
                failure = Some(e);
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

/// The i18n labels of the mail.
struct Labels {
    subject: &'static str,
    detail: &'static str,
    group: &'static str,
    id: &'static str,
    desc: &'static str,
    alarm_title: &'static str,
    alarm_content: &'static str,
    alarm_type: &'static str,
}

impl Labels {
    fn of(lang: MessageLang) -> Self {
        match lang {
            MessageLang::Zh => Self {
                subject: "任务调度中心监控报警",
                detail: "监控告警明细",
                group: "执行器",
                id: "任务ID",
                desc: "任务描述",
                alarm_title: "告警类型",
                alarm_content: "告警内容",
                alarm_type: "调度失败",
            },
            MessageLang::En => Self {
                subject: "Task Scheduling Center monitor alarm",
                detail: "Monitor alarm details",
                group: "Executor",
                id: "Job ID",
                desc: "Job description",
                alarm_title: "Alarm type",
                alarm_content: "Alarm content",
                alarm_type: "Trigger fail",
            },
        }
    }
}

/// Upstream's `alarmContent` and HTML table. Every field comes from users, executors or guests
/// (job and group names, trigger and handle messages), so each is HTML-escaped (upstream
/// inserts them raw); only the `<br>` line breaks of the messages stay markup, as in the UI.
fn mail_body(event: &JobEvent, l: &Labels) -> String {
    let log = &event.log;
    let text = |value: &str| html_escape::encode_text(value).into_owned();
    let lines = |value: Option<&str>| text(value.unwrap_or("null")).replace("&lt;br&gt;", "<br>");
    let mut content = format!("Alarm Job LogId={}", log.id);
    if log.trigger_code != 200 {
        content.push_str(&format!("<br>TriggerMsg=<br>{}", lines(log.trigger_msg.as_deref())));
    }
    if log.handle_code > 0 && log.handle_code != 200 {
        content.push_str(&format!("<br>HandleCode={}", lines(log.handle_msg.as_deref())));
    }
    let group = text(event.group.as_ref().map_or("null", |g| g.group.title.as_str()));
    format!(
        "<h5>{detail}：</span><table border=\"1\" cellpadding=\"3\" style=\"border-collapse:collapse; width:80%;\" >\n\
         \x20  <thead style=\"font-weight: bold;color: #ffffff;background-color: #ff8c00;\" >      <tr>\n\
         \x20        <td width=\"20%\" >{group_l}</td>\n\
         \x20        <td width=\"10%\" >{id_l}</td>\n\
         \x20        <td width=\"20%\" >{desc_l}</td>\n\
         \x20        <td width=\"10%\" >{title_l}</td>\n\
         \x20        <td width=\"40%\" >{content_l}</td>\n\
         \x20     </tr>\n   </thead>\n   <tbody>\n      <tr>\n\
         \x20        <td>{group}</td>\n\
         \x20        <td>{id}</td>\n\
         \x20        <td>{desc}</td>\n\
         \x20        <td>{alarm_type}</td>\n\
         \x20        <td>{content}</td>\n\
         \x20     </tr>\n   </tbody>\n</table>",
        detail = l.detail,
        group_l = l.group,
        id_l = l.id,
        desc_l = l.desc,
        title_l = l.alarm_title,
        content_l = l.alarm_content,
        id = event.job.id,
        desc = text(&event.job.job.job_desc),
        alarm_type = l.alarm_type,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Group, GroupId, GroupRow, Job, JobId, JobRow, LogId, LogRow};

    /// A failed run whose every text field carries markup, as a job author, an executor or a
    /// guest could put there.
    fn hostile_event() -> JobEvent {
        use crate::domain::Priority;
        let job = Job {
            job_group: GroupId(1),
            job_desc: "<img src=x onerror=alert(1)> nightly".to_owned(),
            add_time: None,
            update_time: None,
            author: None,
            alarm_email: Some("ops@example.invalid".to_owned()),
            schedule_type: "NONE".into(),
            schedule_conf: None,
            misfire_strategy: "DO_NOTHING".into(),
            executor_route_strategy: Some("FIRST".into()),
            executor_handler: Some("h".to_owned()),
            executor_param: None,
            executor_block_strategy: Some("SERIAL_EXECUTION".into()),
            executor_timeout: 0,
            executor_fail_retry_count: 0,
            glue_type: "BEAN".into(),
            glue_source: None,
            glue_remark: None,
            glue_updatetime: None,
            child_jobid: None,
            trigger_status: 0,
            trigger_last_time: 0,
            trigger_next_time: 0,
        };
        let group = Group {
            app_name: "app".to_owned(),
            title: "R&D <b>team</b>".to_owned(),
            address_type: 0,
            address_list: None,
            update_time: None,
        };
        let log = LogRow {
            id: LogId(42),
            job_group: GroupId(1),
            job_id: JobId(7),
            executor_address: None,
            executor_handler: None,
            executor_param: None,
            executor_sharding_param: None,
            executor_fail_retry_count: 0,
            trigger_time: None,
            trigger_code: 500,
            trigger_msg: Some("address：<a href=\"http://evil\">x</a><br>code：500".to_owned()),
            handle_time: None,
            handle_code: 500,
            handle_msg: Some("<script>steal()</script><br>exit 1".to_owned()),
            alarm_status: 0,
        };
        JobEvent {
            job: JobRow {
                id: JobId(7),
                job,
                time_zone: None,
                priority: Priority::Normal,
                delivery: Default::default(),
            },
            group: Some(GroupRow { id: GroupId(1), group, max_running: None }),
            log,
        }
    }

    #[test]
    fn every_field_is_escaped_and_only_line_breaks_stay_markup() {
        let body = mail_body(&hostile_event(), &Labels::of(MessageLang::En));
        for raw in ["<img", "<b>", "<script>", "<a href", "R&D"] {
            assert!(!body.contains(raw), "{raw} left raw in {body}");
        }
        for escaped in [
            "&lt;img src=x onerror=alert(1)&gt; nightly",
            "R&amp;D &lt;b&gt;team&lt;/b&gt;",
            "&lt;script&gt;steal()&lt;/script&gt;<br>exit 1",
            "address：&lt;a href=\"http://evil\"&gt;x&lt;/a&gt;<br>code：500",
        ] {
            assert!(body.contains(escaped), "{escaped} missing from {body}");
        }
        assert!(body.contains("<td>Alarm Job LogId=42<br>TriggerMsg=<br>"), "{body}");
    }
}
