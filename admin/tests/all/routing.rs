//! Each routing strategy's choices pinned with an injected clock, scripted random draws and a
//! fake probe (docs/upstream.md §4).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use jobwheel_admin::clock::{ManualClock, RandomSource};
use jobwheel_admin::lang::MessageLang;
use jobwheel_admin::routing::{
    CACHE_VALID_MS, ExecutorRouteStrategy as S, Probe, ProbeResult, RouteError, Router, Shard,
    parse_sharding_param, plan_shards, shard_address, sort_addresses,
};

/// Hands out scripted values and records each bound asked for.
#[derive(Default)]
struct Script {
    values: Mutex<VecDeque<u32>>,
    bounds: Mutex<Vec<u32>>,
}

impl Script {
    fn new(values: &[u32]) -> Arc<Self> {
        Arc::new(Self { values: Mutex::new(values.iter().copied().collect()), ..Self::default() })
    }

    fn bounds(&self) -> Vec<u32> {
        self.bounds.lock().expect("test lock").clone()
    }
}

impl RandomSource for Script {
    fn next_below(&self, bound: u32) -> u32 {
        self.bounds.lock().expect("test lock").push(bound);
        let value = self.values.lock().expect("test lock").pop_front().expect("script has a value");
        assert!(value < bound, "scripted {value} is not below {bound}");
        value
    }
}

/// Answers from a table (default 200) and records what was asked.
#[derive(Default)]
struct FakeProbe {
    answers: HashMap<String, ProbeResult>,
    calls: Mutex<Vec<String>>,
}

impl FakeProbe {
    fn with(answers: &[(&str, ProbeResult)]) -> Self {
        let answers = answers.iter().map(|(a, r)| ((*a).to_owned(), r.clone())).collect();
        Self { answers, calls: Mutex::default() }
    }

    fn answer(&self, call: String, address: &str) -> ProbeResult {
        self.calls.lock().expect("test lock").push(call);
        self.answers.get(address).cloned().unwrap_or_else(ProbeResult::ok)
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().expect("test lock").clone()
    }
}

#[async_trait::async_trait]
impl Probe for FakeProbe {
    async fn beat(&self, address: &str) -> ProbeResult {
        self.answer(format!("beat {address}"), address)
    }

    async fn idle_beat(&self, address: &str, job_id: i32) -> ProbeResult {
        self.answer(format!("idleBeat {address} {job_id}"), address)
    }
}

fn addrs(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn router(clock: &Arc<ManualClock>, random: &Arc<Script>) -> Router {
    Router::new(clock.clone(), random.clone(), MessageLang::Zh)
}

async fn picks(router: &Router, strategy: S, job: i32, list: &[String], n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(router.route(strategy, job, list, &FakeProbe::default()).await.expect("routes").address);
    }
    out
}

#[test]
fn strategy_names_titles_and_order() {
    let names: Vec<_> = S::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "FIRST",
            "LAST",
            "ROUND",
            "RANDOM",
            "CONSISTENT_HASH",
            "LEAST_FREQUENTLY_USED",
            "LEAST_RECENTLY_USED",
            "FAILOVER",
            "BUSYOVER",
            "SHARDING_BROADCAST"
        ]
    );
    for strategy in S::ALL {
        assert_eq!(strategy.name().parse::<S>(), Ok(strategy));
    }
    assert!("round".parse::<S>().is_err(), "names are case-sensitive like Enum.valueOf");
    assert_eq!(S::LeastRecentlyUsed.title_en(), "Least Recently Used");
    assert_eq!(S::ConsistentHash.title_zh(), "一致性HASH");
    assert_eq!(S::ShardingBroadcast.title_zh(), "分片广播");
    assert!(!S::ShardingBroadcast.has_router());
}

#[tokio::test]
async fn first_last_random() {
    let clock = Arc::new(ManualClock::new(0));
    let random = Script::new(&[2, 0, 1]);
    let router = router(&clock, &random);
    let list = addrs(&["a", "b", "c"]);
    assert_eq!(picks(&router, S::First, 1, &list, 2).await, ["a", "a"]);
    assert_eq!(picks(&router, S::Last, 1, &list, 2).await, ["c", "c"]);
    assert_eq!(picks(&router, S::Random, 1, &list, 3).await, ["c", "a", "b"]);
    assert_eq!(random.bounds(), [3, 3, 3]);
}

#[tokio::test]
async fn round_starts_at_a_random_count_then_increments_per_job() {
    let clock = Arc::new(ManualClock::new(1_000));
    // Job 1 starts at 97, job 2 at 4.
    let random = Script::new(&[97, 4]);
    let router = router(&clock, &random);
    let list = addrs(&["a", "b", "c"]);
    // 97 % 3 = 1 → b, then 98 → c, 99 → a, 100 → b.
    assert_eq!(picks(&router, S::Round, 1, &list, 4).await, ["b", "c", "a", "b"]);
    // Job 2 has its own counter: 4 → b, 5 → c.
    assert_eq!(picks(&router, S::Round, 2, &list, 2).await, ["b", "c"]);
    // The list may change between triggers; the counter does not care: 101 % 2 = 1.
    assert_eq!(picks(&router, S::Round, 1, &addrs(&["x", "y"]), 1).await, ["y"]);
    assert_eq!(random.bounds(), [100, 100]);
}

#[tokio::test]
async fn round_cache_is_dropped_after_24_hours_without_sleeping() {
    let clock = Arc::new(ManualClock::new(5_000));
    let random = Script::new(&[0, 50]);
    let router = router(&clock, &random);
    let list = addrs(&["a", "b", "c", "d"]);
    assert_eq!(picks(&router, S::Round, 7, &list, 2).await, ["a", "b"]);
    // Exactly at the deadline the cache is still valid (`now > validUntil` clears).
    clock.set(5_000 + CACHE_VALID_MS);
    assert_eq!(picks(&router, S::Round, 7, &list, 1).await, ["c"]);
    clock.advance(1);
    // Cleared: a fresh random start, 50 % 4 = 2.
    assert_eq!(picks(&router, S::Round, 7, &list, 1).await, ["c"]);
    assert_eq!(random.bounds().len(), 2);
}

#[tokio::test]
async fn round_counter_over_a_million_restarts() {
    let clock = Arc::new(ManualClock::new(0));
    let random = Script::new(&[99, 3]);
    let router = router(&clock, &random);
    let list = addrs(&["a", "b"]);
    // Drive the counter from 99 up to 1_000_001, the first value above the limit.
    for _ in 99..=1_000_001 {
        router.route(S::Round, 1, &list, &FakeProbe::default()).await.expect("routes");
    }
    // 1_000_001 > 1_000_000 → the next call restarts at random(100) = 3 → b.
    assert_eq!(picks(&router, S::Round, 1, &list, 1).await, ["b"]);
    assert_eq!(random.bounds(), [100, 100]);
}

#[tokio::test]
async fn lfu_seeds_randomly_and_takes_the_least_count() {
    let clock = Arc::new(ManualClock::new(0));
    // Seeds for a, b, c: 2, 0, 1.
    let random = Script::new(&[2, 0, 1]);
    let router = router(&clock, &random);
    let list = addrs(&["a", "b", "c"]);
    // counts a2 b0 c1 → b (b1) → b or c tie at 1 → ...
    let got = picks(&router, S::LeastFrequentlyUsed, 1, &list, 6).await;
    // b0→b; then b1,c1 tie: HashMap order of "a","b","c" is by hash ("a"=97,"b"=98,"c"=99,
    // buckets 1,2,3 of 16) → b first; then c1 → c; then a2,b2,c2 → a; b; c.
    assert_eq!(got, ["b", "b", "c", "a", "b", "c"]);
    assert_eq!(random.bounds(), [3, 3, 3]);
}

#[tokio::test]
async fn lfu_ties_follow_java_hashmap_order_not_list_order() {
    let clock = Arc::new(ManualClock::new(0));
    let random = Script::new(&[0, 0]);
    let router = router(&clock, &random);
    // Worked out with Java's String.hashCode: "http://10.0.0.1:9999/" = 2544127661 (bucket 9
    // of 16), "http://10.0.0.2:9999/" = 3431631342 (bucket 4). Both start at 0, so upstream's
    // HashMap order puts .2 first although the list has .1 first.
    let list = addrs(&["http://10.0.0.1:9999/", "http://10.0.0.2:9999/"]);
    assert_eq!(
        picks(&router, S::LeastFrequentlyUsed, 1, &list, 3).await,
        ["http://10.0.0.2:9999/", "http://10.0.0.1:9999/", "http://10.0.0.2:9999/"]
    );
}

#[tokio::test]
async fn lfu_forgets_vanished_addresses_and_seeds_new_ones() {
    let clock = Arc::new(ManualClock::new(0));
    let random = Script::new(&[0, 1, 0]);
    let router = router(&clock, &random);
    assert_eq!(picks(&router, S::LeastFrequentlyUsed, 1, &addrs(&["a", "b"]), 1).await, ["a"]);
    // a=1, b=1; "b" vanishes, "c" joins with seed 0 → c.
    assert_eq!(picks(&router, S::LeastFrequentlyUsed, 1, &addrs(&["a", "c"]), 1).await, ["c"]);
    assert_eq!(random.bounds(), [2, 2, 2]);
}

#[tokio::test]
async fn lru_cycles_in_list_order_and_puts_new_addresses_last() {
    let clock = Arc::new(ManualClock::new(0));
    let random = Script::new(&[]);
    let router = router(&clock, &random);
    let list = addrs(&["a", "b", "c"]);
    assert_eq!(picks(&router, S::LeastRecentlyUsed, 1, &list, 4).await, ["a", "b", "c", "a"]);
    // Order now b, c, a; "d" joins at the young end, "c" leaves.
    let changed = addrs(&["a", "b", "d"]);
    assert_eq!(picks(&router, S::LeastRecentlyUsed, 1, &changed, 4).await, ["b", "a", "d", "b"]);
    // Another job has its own order.
    assert_eq!(picks(&router, S::LeastRecentlyUsed, 2, &list, 1).await, ["a"]);
    // After 24 h + 1 ms everything starts over.
    clock.advance(CACHE_VALID_MS + 1);
    assert_eq!(picks(&router, S::LeastRecentlyUsed, 1, &changed, 1).await, ["a"]);
}

#[tokio::test]
async fn failover_skips_a_dead_executor_and_reports_every_probe() {
    let clock = Arc::new(ManualClock::new(0));
    let router = router(&clock, &Script::new(&[]));
    let list = addrs(&["http://a:9999/", "http://b:9999/", "http://c:9999/"]);
    let probe = FakeProbe::with(&[(
        "http://a:9999/",
        ProbeResult::failed("xxl-job remoting error(Connection refused), for url : http://a:9999/beat"),
    )]);
    let route = router.route(S::Failover, 3, &list, &probe).await.expect("b is alive");
    assert_eq!(route.address, "http://b:9999/");
    assert_eq!(
        route.msg.as_deref(),
        Some(
            "心跳检测：<br>address：http://a:9999/<br>code：500<br>msg：xxl-job remoting \
             error(Connection refused), for url : http://a:9999/beat<br><br>心跳检测：<br>\
             address：http://b:9999/<br>code：200<br>msg：null"
        )
    );
    assert_eq!(probe.calls(), ["beat http://a:9999/", "beat http://b:9999/"]);
}

#[tokio::test]
async fn failover_with_every_executor_down_fails_with_the_probe_log() {
    let clock = Arc::new(ManualClock::new(0));
    let router = Router::new(clock, Script::new(&[]), MessageLang::En);
    let list = addrs(&["a", "b"]);
    let probe =
        FakeProbe::with(&[("a", ProbeResult::failed("down")), ("b", ProbeResult { code: 502, msg: None })]);
    let err = router.route(S::Failover, 1, &list, &probe).await.expect_err("all down");
    assert_eq!(
        err,
        RouteError::AllProbesFailed {
            msg: "Heartbeats：<br>address：a<br>code：500<br>msg：down<br><br>Heartbeats：<br>\
                  address：b<br>code：502<br>msg：null"
                .to_owned()
        }
    );
}

#[tokio::test]
async fn busyover_asks_idle_beat_with_the_job_id() {
    let clock = Arc::new(ManualClock::new(0));
    let router = router(&clock, &Script::new(&[]));
    let list = addrs(&["a", "b"]);
    let probe = FakeProbe::with(&[("a", ProbeResult::failed("job thread is running or has trigger queue."))]);
    let route = router.route(S::Busyover, 42, &list, &probe).await.expect("b is idle");
    assert_eq!(route.address, "b");
    assert_eq!(
        route.msg.as_deref(),
        Some(
            "空闲检测：<br>address：a<br>code：500<br>msg：job thread is running or has trigger \
             queue.<br><br>空闲检测：<br>address：b<br>code：200<br>msg：null"
        )
    );
    assert_eq!(probe.calls(), ["idleBeat a 42", "idleBeat b 42"]);
}

#[tokio::test]
async fn empty_list_and_broadcast_have_no_route() {
    let router = Router::default();
    let probe = FakeProbe::default();
    for strategy in S::ALL {
        assert_eq!(router.route(strategy, 1, &[], &probe).await, Err(RouteError::NoAddresses));
    }
    let list = addrs(&["a"]);
    assert_eq!(router.route(S::ShardingBroadcast, 1, &list, &probe).await, Err(RouteError::Broadcast));
    assert!(probe.calls().is_empty());
}

#[test]
fn broadcast_shards_and_stale_retry_indexes() {
    let list = addrs(&["a", "b", "c"]);
    let shards = plan_shards(true, list.len(), None);
    assert_eq!(
        shards,
        [Shard { index: 0, total: 3 }, Shard { index: 1, total: 3 }, Shard { index: 2, total: 3 }]
    );
    let sent: Vec<_> = shards.iter().map(|s| (s.log_param(), shard_address(&list, s.index))).collect();
    assert_eq!(
        sent,
        [("0/3".to_owned(), Some("a")), ("1/3".to_owned(), Some("b")), ("2/3".to_owned(), Some("c"))]
    );
    // A retry re-runs only its shard, against the current list; a stale index goes to list[0].
    assert_eq!(plan_shards(true, 2, Some("2/3")), [Shard { index: 2, total: 3 }]);
    assert_eq!(shard_address(&list[..2], 2), Some("a"));
    assert_eq!(shard_address(&list, -1), Some("a"));
    assert_eq!(shard_address(&[], 0), None);
    // An empty group: one 0/1 trigger, which then fails for lack of an address.
    assert_eq!(plan_shards(true, 0, None), [Shard::SINGLE]);
    // Other strategies: one trigger, 0/1 unless a retry brings its own pair.
    assert_eq!(plan_shards(false, 3, None), [Shard::SINGLE]);
    assert_eq!(plan_shards(false, 3, Some("1/2")), [Shard { index: 1, total: 2 }]);
    // Junk is ignored like upstream's isNumeric check.
    assert_eq!(plan_shards(true, 1, Some("x/2")), [Shard { index: 0, total: 1 }]);
}

#[test]
fn sharding_param_parses_like_java() {
    assert_eq!(parse_sharding_param("1/3"), Some(Shard { index: 1, total: 3 }));
    assert_eq!(parse_sharding_param("+1/3/"), Some(Shard { index: 1, total: 3 }));
    assert_eq!(parse_sharding_param("1/3/4"), None);
    assert_eq!(parse_sharding_param("1"), None);
    assert_eq!(parse_sharding_param(""), None);
    assert_eq!(parse_sharding_param("1 /3"), None);
}

#[test]
fn addresses_sort_like_collections_sort() {
    let mut list =
        addrs(&["http://10.0.0.10:9999/", "http://10.0.0.9:9999/", "http://10.0.0.1:9999/", "HTTP://z/"]);
    sort_addresses(&mut list);
    // Plain string order, not numeric: ':' (0x3A) sorts after '0', so ".10:" precedes ".1:".
    assert_eq!(
        list,
        ["HTTP://z/", "http://10.0.0.10:9999/", "http://10.0.0.1:9999/", "http://10.0.0.9:9999/"]
    );
}
