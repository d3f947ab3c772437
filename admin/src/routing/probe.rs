//! FAILOVER and BUSYOVER: probe executors in list order and take the first that answers 200.
//!
//! The router does not know the HTTP client. The admin's executor client implements [`Probe`]
//! (`/beat` and `/idleBeat`); tests use a fake. The message accumulated over the probes is
//! upstream's text byte for byte, because it ends up in `xxl_job_log.trigger_msg`.

use async_trait::async_trait;
use jobwheel_protocol::envelope::{FAIL_CODE, SUCCESS_CODE};

use crate::lang::MessageLang;

/// The `code`/`msg` of an executor's reply to `/beat` or `/idleBeat`.
///
/// A transport failure is a result too: upstream turns the exception into
/// `code = 500, msg = exception.toString()`, so an implementation should return
/// `ProbeResult::failed(error text)` rather than hide the address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    /// The envelope's `code`; only 200 counts as success.
    pub code: i32,
    /// The envelope's `msg`; `None` is rendered as `null`, as Java's `StringBuffer` does.
    pub msg: Option<String>,
}

impl ProbeResult {
    /// A 200 reply without message (what executors send for `/beat`).
    pub fn ok() -> Self {
        Self { code: SUCCESS_CODE, msg: None }
    }

    /// A 500 with a message (an executor's refusal or a transport error).
    pub fn failed(msg: impl Into<String>) -> Self {
        Self { code: FAIL_CODE, msg: Some(msg.into()) }
    }

    fn is_success(&self) -> bool {
        self.code == SUCCESS_CODE
    }
}

/// Liveness and idleness checks against one executor address.
#[async_trait]
pub trait Probe: Send + Sync {
    /// `POST {address}/beat` (upstream: 3 s timeout).
    async fn beat(&self, address: &str) -> ProbeResult;

    /// `POST {address}/idleBeat` with `{"jobId": job_id}`.
    async fn idle_beat(&self, address: &str, job_id: i32) -> ProbeResult;
}

/// Which probe a loop sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeKind {
    /// FAILOVER: `/beat`, label `jobconf_beat`.
    Beat,
    /// BUSYOVER: `/idleBeat`, label `jobconf_idleBeat`.
    IdleBeat,
}

impl ProbeKind {
    fn label(self, lang: MessageLang) -> &'static str {
        match (self, lang) {
            (Self::Beat, MessageLang::Zh) => "心跳检测",
            (Self::Beat, MessageLang::En) => "Heartbeats",
            (Self::IdleBeat, MessageLang::Zh) => "空闲检测",
            (Self::IdleBeat, MessageLang::En) => "Idle check",
        }
    }
}

/// Outcome of a probe loop: the chosen index (if any) and the accumulated message.
#[derive(Debug)]
pub(crate) struct ProbeOutcome {
    pub(crate) chosen: Option<usize>,
    pub(crate) msg: String,
}

/// Probes `addresses` in order and stops at the first 200.
///
/// Each probe appends (blocks separated by `<br><br>`)
/// `"{label}：<br>address：{address}<br>code：{code}<br>msg：{msg}"`.
pub(crate) async fn probe_in_order(
    kind: ProbeKind,
    lang: MessageLang,
    job_id: i32,
    addresses: &[String],
    probe: &dyn Probe,
) -> ProbeOutcome {
    let mut msg = String::new();
    for (index, address) in addresses.iter().enumerate() {
        let result = match kind {
            ProbeKind::Beat => probe.beat(address).await,
            ProbeKind::IdleBeat => probe.idle_beat(address, job_id).await,
        };
        if !msg.is_empty() {
            msg.push_str("<br><br>");
        }
        msg.push_str(kind.label(lang));
        msg.push_str("：<br>address：");
        msg.push_str(address);
        msg.push_str("<br>code：");
        msg.push_str(&result.code.to_string());
        msg.push_str("<br>msg：");
        msg.push_str(result.msg.as_deref().unwrap_or("null"));
        if result.is_success() {
            return ProbeOutcome { chosen: Some(index), msg };
        }
    }
    ProbeOutcome { chosen: None, msg }
}
