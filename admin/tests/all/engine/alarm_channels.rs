//! Alarm channels through the engine with controlled time (docs/alarms.md), on every database:
//! each vendor's format and signature checked by a local stand-in (`alarm_vendors.rs`), the
//! job's own channels winning over its group's, retries with backoff, folding of a storm into
//! one message with its count, the "should be done within" alarm raised once, and recovery.

use std::sync::Arc;

use jobwheel_admin::alarm::{ChannelSecret, ChannelSettings, EventKind, UpstreamAlarms};
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, EngineConfig, EngineServices, TriggerRequest, TriggerType};
use jobwheel_admin::lang::MessageLang;
use jobwheel_admin::routing::Router;
use jobwheel_admin::sealing::SecretBox;
use jobwheel_admin::store::{
    ChannelId, ChannelSwitch, DeliveryFilter, DeliveryStatus, GroupId, JobId, NewChannel, Page, RouteRow,
    Store, route_scope,
};

use super::alarm_vendors::{DINGTALK_SECRET, FEISHU_SECRET, HOOK_KEY, Vendors};
use crate::engine::completion::callback;
use crate::engine::support::{Db, FakeExecutor, T0, Zero, group, job, logs};

struct Setup {
    store: Arc<dyn Store>,
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
    vendors: Vendors,
    secrets: Arc<SecretBox>,
}

impl Setup {
    async fn channel(
        &self,
        name: &str,
        kind: &str,
        url: &str,
        key: Option<&str>,
        settings: ChannelSettings,
        events: &[EventKind],
    ) -> anyhow::Result<ChannelId> {
        let secret = ChannelSecret { url: self.vendors.url(url), signing_key: key.map(str::to_owned) };
        let sealed = self.secrets.seal_channel(name, &serde_json::to_string(&secret)?);
        let channel = NewChannel {
            name: name.to_owned(),
            kind: kind.to_owned(),
            config: serde_json::to_string(&settings)?,
            sealed,
            events: events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(","),
            fold_secs: 300,
            enabled: ChannelSwitch::On,
            update_ms: T0,
        };
        Ok(self.store.add_channel(&channel).await?.expect("a new name"))
    }

    async fn route(
        &self,
        scope: &str,
        target: i64,
        channels: &[ChannelId],
        within: i32,
    ) -> anyhow::Result<()> {
        let channels = channels.iter().map(|c| c.0.to_string()).collect::<Vec<_>>().join(",");
        let route =
            RouteRow { scope: scope.to_owned(), target_id: target, channels, done_within_secs: within };
        Ok(self.store.set_route(&route).await?)
    }

    async fn job(&self, g: GroupId, name: &str) -> anyhow::Result<JobId> {
        let mut j = job(g, 0);
        j.trigger_status = 0;
        j.job_desc = name.to_owned();
        Ok(self.store.add_job(&j).await?)
    }

    /// Triggers `job` at `at` and, with `code`, stores its result then.
    async fn run(&self, job: JobId, at: i64, code: Option<i32>) -> anyhow::Result<()> {
        self.clock.set(at);
        self.engine.triggers().trigger(TriggerRequest::new(job, TriggerType::Manual)).await?;
        self.engine.triggers().wait_idle().await;
        if let Some(code) = code {
            let newest = logs(&*self.store, job).await?.last().map(|l| l.id).expect("a log");
            self.engine
                .completion()
                .on_callbacks(vec![callback(newest, code, "boom <b>at</b> step 3")])
                .await?;
        }
        Ok(())
    }

    /// The deliveries of `channel`, oldest first: (status, attempts, folded, event kind).
    async fn deliveries(
        &self,
        channel: ChannelId,
    ) -> anyhow::Result<Vec<(DeliveryStatus, i32, i32, String)>> {
        let filter = DeliveryFilter { channel: Some(channel), ..DeliveryFilter::default() };
        let mut rows = self.store.page_deliveries(&filter, Page { offset: 0, limit: 100 }).await?.rows;
        rows.reverse();
        Ok(rows
            .into_iter()
            .map(|r| (r.delivery.status, r.delivery.attempts, r.delivery.folded, r.kind))
            .collect())
    }
}

async fn run_on(db: &Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    let clock = Arc::new(ManualClock::new(T0));
    let secrets = Arc::new(SecretBox::from_hex(&SecretBox::generate_key())?);
    let router = Router::new(clock.clone(), Arc::new(Zero), MessageLang::En);
    let mut config = EngineConfig::new("10.0.0.1");
    config.time_zone = chrono_tz::UTC;
    config.lang = MessageLang::En;
    // The vendors' stand-ins listen on loopback, which alarm requests may not reach by default.
    config.alarm_networks = jobwheel_admin::alarm::AlarmNetworks::parse("127.0.0.0/8").expect("networks");
    let services =
        EngineServices { clock: clock.clone(), secrets: Some(secrets.clone()), ..EngineServices::new() };
    let fake = Arc::new(FakeExecutor::default());
    let engine = Engine::new(store.clone(), fake, router, UpstreamAlarms::default(), config, services);
    let s = Setup { store: store.clone(), engine, clock, vendors: Vendors::start().await?, secrets };
    let desk = s.engine.alarms().clone();

    let none = ChannelSettings::default;
    let dt = s
        .channel(
            "dt",
            "dingtalk",
            "/robot/send?access_token=tok-dt",
            Some(DINGTALK_SECRET),
            none(),
            &EventKind::DEFAULT,
        )
        .await?;
    let fs = s
        .channel(
            "fs",
            "feishu",
            "/open-apis/bot/v2/hook/fs-token",
            Some(FEISHU_SECRET),
            none(),
            &EventKind::DEFAULT,
        )
        .await?;
    let wc = s
        .channel("wc", "wecom", "/cgi-bin/webhook/send?key=tok-wc", None, none(), &EventKind::DEFAULT)
        .await?;
    let sl = s.channel("sl", "slack", "/services/T000/B000/XXXX", None, none(), &EventKind::DEFAULT).await?;
    let template = ChannelSettings {
        template: Some(r#"{"job": {{ jobId }}, "kind": "{{ kind }}", "folded": {{ folded }}, "msg": {{ message|tojson }}}"#.to_owned()),
        ..ChannelSettings::default()
    };
    let mut with_recovery = EventKind::DEFAULT.to_vec();
    with_recovery.push(EventKind::Recovered);
    let hook = s.channel("hook", "webhook", "/hook", Some(HOOK_KEY), template, &with_recovery).await?;
    let bad = s
        .channel(
            "bad",
            "dingtalk",
            "/robot/send?access_token=tok-dt",
            Some("SECwrong"),
            none(),
            &EventKind::DEFAULT,
        )
        .await?;

    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    // Descriptions written by group members, aimed at the channel's readers (review N9).
    let a = s.job(g, "job-a ![x](https://evil.example/pixel)").await?;
    let b = s.job(g, "job-b <!channel> <https://evil.example|re-login>").await?;
    let c = s.job(g, "job-c").await?;
    let d = s.job(g, "job-d").await?;
    s.route(route_scope::GROUP, i64::from(g.0), &[sl], 0).await?;
    s.route(route_scope::JOB, i64::from(a.0), &[dt, fs, wc, hook], 0).await?;
    s.route(route_scope::JOB, i64::from(c.0), &[hook], 60).await?;
    s.route(route_scope::JOB, i64::from(d.0), &[bad], 0).await?;

    // A fails, B (no channels of its own: the group's) fails, D's channel has the wrong key.
    for job in [a, b, d] {
        s.run(job, T0 + 1_000, Some(500)).await?;
    }
    s.engine.failures().handle_failures(T0 + 2_000).await?;
    let done = desk.deliver_due(T0 + 2_000).await?;
    assert_eq!(done.len(), 6, "A on four channels, B on Slack, D on its bad one: {done:?}");
    for (channel, path) in [
        (dt, "/robot/send"),
        (fs, "/open-apis/bot/v2/hook/fs-token"),
        (wc, "/cgi-bin/webhook/send"),
        (hook, "/hook"),
    ] {
        assert_eq!(
            s.deliveries(channel).await?,
            [(DeliveryStatus::Sent, 1, 0, "FAILED".to_owned())],
            "{path}"
        );
    }
    let slack = s.vendors.seen("/services/T000/B000/XXXX");
    assert_eq!(slack.len(), 1, "the job's own channels win: A is not told on the group's Slack");
    assert!(slack[0].raw.contains("job-b") && !slack[0].raw.contains("job-a"), "{}", slack[0].raw);
    assert!(
        slack[0].raw.contains("&lt;!channel&gt;") && !slack[0].raw.contains("<!channel>"),
        "a user's mention stays text on Slack: {}",
        slack[0].raw
    );
    assert!(!slack[0].raw.contains("<https://evil.example|"), "no link: {}", slack[0].raw);
    let dingtalk = s.vendors.seen("/robot/send");
    let dingtalk_text = dingtalk
        .iter()
        .filter_map(|seen| seen.body["markdown"]["text"].as_str())
        .find(|text| text.contains("job-a"))
        .unwrap_or_default()
        .to_owned();
    assert!(
        dingtalk_text.contains(r"\!\[x\]\(https://evil.example/pixel\)"),
        "a user's image stays text on DingTalk: {dingtalk_text}"
    );
    let wecom = &s.vendors.seen("/cgi-bin/webhook/send")[0];
    assert!(
        !wecom.body["markdown"]["content"].as_str().unwrap_or_default().contains("![x]("),
        "nor on WeCom: {:?}",
        wecom.body
    );
    assert!(
        wecom.body["markdown"]["content"].as_str().unwrap_or_default().contains("boom at step 3"),
        "HTML stripped: {:?}",
        wecom.body
    );
    let hooked = &s.vendors.seen("/hook")[0];
    assert_eq!(hooked.body["job"], a.0, "the template was rendered: {}", hooked.raw);
    assert_eq!(hooked.body["kind"], "FAILED");
    assert_eq!(hooked.body["msg"], "boom at step 3");

    // Retries: the refused DingTalk message waits 10 s, then 30 s, …
    assert_eq!(s.deliveries(bad).await?, [(DeliveryStatus::Pending, 1, 0, "FAILED".to_owned())]);
    assert!(desk.deliver_due(T0 + 11_999).await?.is_empty(), "before its 10 s backoff");
    desk.deliver_due(T0 + 12_000).await?;
    assert_eq!(s.deliveries(bad).await?, [(DeliveryStatus::Pending, 2, 0, "FAILED".to_owned())]);
    assert!(desk.deliver_due(T0 + 41_999).await?.is_empty(), "before its 30 s backoff");
    desk.deliver_due(T0 + 42_000).await?;
    assert_eq!(s.deliveries(bad).await?[0].1, 3, "third attempt");

    // A storm on A: three failures inside the 300 s window become one message due when the
    // window opens, counting the two folded into it.
    for at in [T0 + 20_000, T0 + 21_000, T0 + 22_000] {
        s.run(a, at, Some(500)).await?;
    }
    s.engine.failures().handle_failures(T0 + 23_000).await?;
    let hook_rows = s.deliveries(hook).await?;
    assert_eq!(hook_rows.len(), 2, "one message of its own: {hook_rows:?}");
    assert_eq!(hook_rows[1], (DeliveryStatus::Pending, 0, 2, "FAILED".to_owned()));
    desk.deliver_due(T0 + 301_999).await?;
    assert_eq!(s.vendors.seen("/hook").len(), 1, "nothing more inside the window");
    desk.deliver_due(T0 + 302_000).await?;
    let hooks = s.vendors.seen("/hook");
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[1].body["folded"], 2, "{}", hooks[1].raw);
    assert_eq!(
        s.vendors.seen("/robot/send").iter().filter(|x| x.accepted).count(),
        2,
        "DingTalk: one per window too"
    );

    // A retry that then goes through.
    s.run(a, T0 + 700_000, Some(500)).await?;
    s.engine.failures().handle_failures(T0 + 700_500).await?;
    s.vendors.force_next("/hook", 500, "upstream busy");
    desk.deliver_due(T0 + 701_000).await?;
    desk.deliver_due(T0 + 711_000).await?;
    let last = s.deliveries(hook).await?.pop().expect("a delivery");
    assert_eq!((last.0, last.1), (DeliveryStatus::Sent, 2), "sent on the second attempt");

    // C should be done within 60 s: its run from T0 + 1 s is overdue at T0 + 61 s, told once.
    s.run(c, T0 + 1_000, None).await?;
    assert_eq!(desk.overdue_runs(T0 + 60_999).await?, 0);
    assert_eq!(desk.overdue_runs(T0 + 61_000).await?, 1);
    assert_eq!(desk.overdue_runs(T0 + 90_000).await?, 0, "an overdue run is told once");
    let overdue: Vec<_> = s.deliveries(hook).await?.into_iter().filter(|r| r.3 == "OVERDUE").collect();
    assert_eq!(overdue.len(), 1);

    // Recovery: A succeeds after its failures; only the channel that asked for it hears.
    s.run(a, T0 + 800_000, Some(200)).await?;
    assert_eq!(desk.recoveries(T0 + 800_500).await?, 1);
    assert_eq!(desk.recoveries(T0 + 801_000).await?, 0, "told once");
    desk.deliver_due(T0 + 801_000).await?;
    let recovered: Vec<_> =
        s.vendors.seen("/hook").into_iter().filter(|x| x.body["kind"] == "RECOVERED").collect();
    assert_eq!(recovered.len(), 1);
    assert!(s.deliveries(dt).await?.iter().all(|r| r.3 != "RECOVERED"), "recovery is opt-in");

    // The robot's token is in its URL, which never reaches the delivery log.
    let all = store.page_deliveries(&DeliveryFilter::default(), Page { offset: 0, limit: 500 }).await?;
    for row in all.rows {
        let d = row.delivery;
        assert!(!d.request.contains("tok-") && !d.answer.contains("tok-"), "{d:?}");
    }

    // Retention: what was sent or given up goes, a delivery still waiting (with its event) stays.
    assert!(store.purge_alarms(T0 + 10_000_000).await? > 0);
    let left = store.page_deliveries(&DeliveryFilter::default(), Page { offset: 0, limit: 500 }).await?;
    assert!(!left.rows.is_empty(), "the retry still waiting is kept");
    assert!(left.rows.iter().all(|r| r.delivery.status == DeliveryStatus::Pending), "{:?}", left.rows);
    Ok(())
}

#[tokio::test]
async fn channels_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), run_on).await
}

#[tokio::test]
async fn channels_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, run_on).await
}

#[tokio::test]
async fn channels_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, run_on).await
}
