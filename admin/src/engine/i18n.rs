//! The user-visible texts the engine writes into `trigger_msg` and `handle_msg`, in upstream's
//! two main bundles (`message_zh_CN.properties`, upstream's default, and `message_en.properties`).
//!
//! These strings end up in log rows that users and upstream-trained operators read, so they
//! follow upstream's wording; the HTML around them (`<br>`, the cyan separators) is upstream's
//! byte for byte.

use crate::lang::MessageLang;

/// The labels of one language.
#[derive(Debug)]
pub(crate) struct Texts {
    pub(crate) trigger_type: &'static str,
    pub(crate) admin_address: &'static str,
    pub(crate) registry_type: &'static str,
    pub(crate) address_type_auto: &'static str,
    pub(crate) address_type_manual: &'static str,
    pub(crate) registry_address: &'static str,
    pub(crate) route_strategy: &'static str,
    pub(crate) block_strategy: &'static str,
    pub(crate) timeout: &'static str,
    pub(crate) fail_retry_count: &'static str,
    /// `jobconf_trigger_run`: the separator title and the `/run` result label.
    pub(crate) trigger_run: &'static str,
    /// `jobconf_trigger_address_empty`.
    pub(crate) address_empty: &'static str,
    /// `jobconf_trigger_child_run`.
    pub(crate) child_run: &'static str,
    /// `jobconf_callback_child_msg1` with `{i}`, `{n}`, `{id}`, `{result}`, `{msg}`.
    pub(crate) child_msg_ok: &'static str,
    /// `jobconf_callback_child_msg2` with `{i}`, `{n}`, `{id}`.
    pub(crate) child_msg_bad_id: &'static str,
    /// `system_success`.
    pub(crate) success: &'static str,
    /// `jobconf_trigger_type_retry` used as the retry separator's title.
    pub(crate) retry_run: &'static str,
    /// `joblog_lost_fail`.
    pub(crate) lost_fail: &'static str,
    /// jobwheel: a trigger whose admin stopped before the executor answered.
    pub(crate) trigger_stalled: &'static str,
    /// jobwheel: the separator title of an exactly-once fire resent after its admin stopped.
    pub(crate) trigger_resent: &'static str,
    /// jobwheel: an exactly-once fire whose result arrived though its admin stopped before
    /// storing what `/run` answered, with `{address}`.
    pub(crate) trigger_outcome_lost: &'static str,
    /// jobwheel: a run whose executor restarted (same address) and does not know it, with
    /// `{address}`.
    pub(crate) restart_lost: &'static str,
    /// jobwheel: fire times skipped by the misfire strategy, with `{count}`, `{late}` (seconds)
    /// and `{strategy}`.
    pub(crate) missed_fire: &'static str,
    /// `joblog_kill_log_byman`.
    pub(crate) killed_by_man: &'static str,
    /// `joblog_kill_log_limit`.
    pub(crate) kill_refused: &'static str,
}

const ZH: Texts = Texts {
    trigger_type: "触发类型",
    admin_address: "调度机器",
    registry_type: "执行器-注册方式",
    address_type_auto: "自动注册",
    address_type_manual: "手动录入",
    registry_address: "执行器-地址列表",
    route_strategy: "路由策略",
    block_strategy: "阻塞处理策略",
    timeout: "任务超时时间",
    fail_retry_count: "失败重试次数",
    trigger_run: "触发调度",
    address_empty: "调度失败：执行器地址为空",
    child_run: "触发子任务",
    child_msg_ok: "{i}/{n} [任务ID={id}], 触发{result}, 触发备注: {msg} <br>",
    child_msg_bad_id: "{i}/{n} [任务ID={id}], 触发失败, 触发备注: 任务ID格式错误 <br>",
    success: "成功",
    retry_run: "失败重试触发",
    lost_fail: "任务结果丢失，标记失败",
    trigger_stalled: "调度中断：调度中心在执行器响应前停止，任务可能未执行，标记失败",
    trigger_resent: "精确一次：调度中心停止后重新发送（同一日志ID与执行键）",
    trigger_outcome_lost: "精确一次：执行器 {address} 已回调结果，发送它的调度中心在保存调度结果前停止",
    restart_lost: "任务结果丢失，标记失败：执行器 {address} 已重启，新进程没有这次执行",
    missed_fire: "调度过期：{count} 次调度时间已过期 {late} 秒，按调度过期策略 {strategy} 忽略，未执行",
    killed_by_man: "人为操作，主动终止",
    kill_refused: "调度失败，无法终止日志",
};

const EN: Texts = Texts {
    trigger_type: "Trigger type",
    admin_address: "Trigger admin address",
    registry_type: "Executor registry type",
    address_type_auto: "Automatic registration",
    address_type_manual: "Manual registration",
    registry_address: "Executor registry address",
    route_strategy: "Route Strategy",
    block_strategy: "Block Strategy",
    timeout: "Job timeout period",
    fail_retry_count: "Fail Retry Count",
    trigger_run: "Trigger Job",
    address_empty: "Trigger Fail: executor address is empty",
    child_run: "Trigger child job",
    child_msg_ok: "{i}/{n} [Job ID={id}], Trigger {result}, Trigger msg: {msg} <br>",
    child_msg_bad_id: "{i}/{n} [Job ID={id}], Trigger Fail, Trigger msg: Job ID format error <br>",
    success: "Success",
    retry_run: "Fail retry trigger",
    lost_fail: "Job result lost, marked as failure",
    trigger_stalled: "Trigger interrupted: the admin stopped before the executor answered, so the run may not have happened; marked as failure",
    trigger_resent: "Exactly once: resent after its admin stopped (same log id and fire key)",
    trigger_outcome_lost: "Exactly once: the executor {address} reported the result; the admin that sent it stopped before storing its answer",
    restart_lost: "Job result lost, marked as failure: the executor at {address} restarted and its new process does not have this run",
    missed_fire: "Missed fire: {count} fire time(s) were {late} s late and skipped by the misfire strategy {strategy}; the job did not run",
    killed_by_man: "Manual operation, active termination",
    kill_refused: "Trigger fail, can not kill the job log",
};

/// The texts of `lang`.
pub(crate) fn texts(lang: MessageLang) -> &'static Texts {
    match lang {
        MessageLang::Zh => &ZH,
        MessageLang::En => &EN,
    }
}

/// Whether `trigger_msg` is the message of a missed-fire row (`missed.rs`), in either
/// language: the row stands for fire times skipped by the misfire strategy, not for a run.
pub fn is_missed_fire(trigger_msg: &str) -> bool {
    [&ZH, &EN].iter().any(|t| trigger_msg.starts_with(t.missed_fire.split('{').next().unwrap_or_default()))
}

/// Upstream's cyan section separator: `<br><br><span style="color:#00c0ef;" > >>>>>>>>>>>{title}<<<<<<<<<<< </span><br>`.
pub(crate) fn separator(title: &str) -> String {
    format!("<br><br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>{title}<<<<<<<<<<< </span><br>")
}

/// The block strategy's admin-side title (`jobconf_block_*`); unknown names are serial, as
/// upstream's `ExecutorBlockStrategyEnum.match(…, SERIAL_EXECUTION)`.
pub(crate) fn block_title(name: Option<&str>, lang: MessageLang) -> &'static str {
    match (name.unwrap_or_default(), lang) {
        ("DISCARD_LATER", MessageLang::Zh) => "丢弃后续调度",
        ("DISCARD_LATER", MessageLang::En) => "Discard Later",
        ("COVER_EARLY", MessageLang::Zh) => "覆盖之前调度",
        ("COVER_EARLY", MessageLang::En) => "Cover Early",
        (_, MessageLang::Zh) => "单机串行",
        (_, MessageLang::En) => "Serial execution",
    }
}
