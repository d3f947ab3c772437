//! Upstream's `trigger_msg` HTML (`XxlJobTrigger.processTrigger`, docs/upstream.md §5.3):
//! what the log page shows under "trigger result".

use super::i18n::{block_title, separator, texts};
use crate::domain::TriggerType;
use crate::lang::MessageLang;
use crate::routing::{ExecutorRouteStrategy, Shard};

/// Everything one shard's trigger message mentions.
pub(crate) struct TriggerMsg<'a> {
    pub(crate) lang: MessageLang,
    pub(crate) trigger_type: TriggerType,
    pub(crate) admin_address: &'a str,
    /// The group's `address_type` for this trigger (1 when the caller overrode the list).
    pub(crate) address_type: i16,
    /// `None` renders as `null`, like Java's `group.getRegistryList()` on an empty list.
    pub(crate) addresses: &'a [String],
    /// The job's strategy as the trigger parsed it; when it is not one, its stored name is
    /// shown as it is (`route_strategy_name`, `null` if empty).
    pub(crate) route_strategy: Option<ExecutorRouteStrategy>,
    pub(crate) route_strategy_name: Option<&'a str>,
    /// `Some` for SHARDING_BROADCAST: appended as `(i/total)`.
    pub(crate) shard: Option<Shard>,
    pub(crate) block_strategy: Option<&'a str>,
    pub(crate) timeout: i32,
    pub(crate) fail_retry_count: i32,
    /// The router's message (FAILOVER/BUSYOVER probe log, or the "address empty" text).
    pub(crate) route_msg: Option<&'a str>,
    /// The `/run` result message (`触发调度：<br>address：…`), if `/run` was called.
    pub(crate) run_msg: Option<&'a str>,
}

impl TriggerMsg<'_> {
    /// The HTML, label by label as upstream builds it.
    pub(crate) fn render(&self) -> String {
        let t = texts(self.lang);
        let registry_type = if self.address_type == 0 { t.address_type_auto } else { t.address_type_manual };
        let registry_list = if self.addresses.is_empty() {
            "null".to_owned()
        } else {
            format!("[{}]", self.addresses.join(", "))
        };
        let route_title = match self.route_strategy {
            Some(strategy) if self.lang == MessageLang::En => strategy.title_en(),
            Some(strategy) => strategy.title_zh(),
            None => self.route_strategy_name.unwrap_or("null"),
        };
        let mut msg = format!("{}：{}", t.trigger_type, self.trigger_type.title(self.lang));
        msg.push_str(&format!("<br>{}：{}", t.admin_address, self.admin_address));
        msg.push_str(&format!("<br>{}：{registry_type}", t.registry_type));
        msg.push_str(&format!("<br>{}：{registry_list}", t.registry_address));
        msg.push_str(&format!("<br>{}：{route_title}", t.route_strategy));
        if let Some(shard) = self.shard {
            msg.push_str(&format!("({})", shard.log_param()));
        }
        msg.push_str(&format!("<br>{}：{}", t.block_strategy, block_title(self.block_strategy, self.lang)));
        msg.push_str(&format!("<br>{}：{}", t.timeout, self.timeout));
        msg.push_str(&format!("<br>{}：{}", t.fail_retry_count, self.fail_retry_count));
        msg.push_str(&separator(t.trigger_run));
        if let Some(route_msg) = self.route_msg {
            msg.push_str(route_msg);
            msg.push_str("<br><br>");
        }
        if let Some(run_msg) = self.run_msg {
            msg.push_str(run_msg);
        }
        msg
    }
}

/// Upstream's rewrite of the `/run` reply: `触发调度：<br>address：…<br>code：…<br>msg：…`.
pub(crate) fn run_result_msg(lang: MessageLang, address: &str, code: i32, msg: Option<&str>) -> String {
    format!(
        "{}：<br>address：{address}<br>code：{code}<br>msg：{}",
        texts(lang).trigger_run,
        msg.unwrap_or("null")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_upstreams_labels_and_separator() {
        let addresses = vec!["http://a:9999/".to_owned(), "http://b:9999/".to_owned()];
        let run = run_result_msg(MessageLang::Zh, "http://a:9999/", 200, None);
        let msg = TriggerMsg {
            lang: MessageLang::Zh,
            trigger_type: TriggerType::Cron,
            admin_address: "10.0.0.1",
            address_type: 0,
            addresses: &addresses,
            route_strategy: Some(ExecutorRouteStrategy::First),
            route_strategy_name: Some("FIRST"),
            shard: None,
            block_strategy: Some("SERIAL_EXECUTION"),
            timeout: 0,
            fail_retry_count: 2,
            route_msg: None,
            run_msg: Some(&run),
        }
        .render();
        assert_eq!(
            msg,
            "触发类型：Cron触发<br>调度机器：10.0.0.1<br>执行器-注册方式：自动注册\
             <br>执行器-地址列表：[http://a:9999/, http://b:9999/]<br>路由策略：第一个\
             <br>阻塞处理策略：单机串行<br>任务超时时间：0<br>失败重试次数：2\
             <br><br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>触发调度<<<<<<<<<<< </span><br>\
             触发调度：<br>address：http://a:9999/<br>code：200<br>msg：null"
        );
    }
}
