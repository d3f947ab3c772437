//! CONSISTENT_HASH against vectors computed independently by
//! `tests/vectors/consistent_hash.py` (Python `hashlib`), so that a shared misunderstanding
//! of upstream's algorithm would have to be made twice, in two languages.

use jobwheel_admin::routing::{ExecutorRouteStrategy, Probe, ProbeResult, Router, hash_job, ring_hash};

const VECTORS: &str = include_str!("../vectors/consistent_hash.tsv");

struct NoProbe;

#[async_trait::async_trait]
impl Probe for NoProbe {
    async fn beat(&self, _address: &str) -> ProbeResult {
        ProbeResult::failed("consistent hash never probes")
    }

    async fn idle_beat(&self, _address: &str, _job_id: i32) -> ProbeResult {
        ProbeResult::failed("consistent hash never probes")
    }
}

fn rows(kind: &str) -> impl Iterator<Item = Vec<&'static str>> + '_ {
    VECTORS.lines().map(|line| line.split('\t').collect::<Vec<_>>()).filter(move |fields| fields[0] == kind)
}

#[test]
fn ring_hash_matches_python() {
    let mut checked = 0;
    for fields in rows("hash") {
        let expected: u32 = fields[2].parse().expect("vector hash is a u32");
        assert_eq!(ring_hash(fields[1]), expected, "hash of {:?}", fields[1]);
        checked += 1;
    }
    assert_eq!(checked, 9);
}

#[test]
fn picks_match_python() {
    let mut checked = 0;
    for fields in rows("pick") {
        let job_id: i32 = fields[1].parse().expect("vector job id is an i32");
        let addresses: Vec<String> = fields[2].split(',').map(str::to_owned).collect();
        let index = hash_job(job_id, &addresses).expect("non-empty list");
        assert_eq!(addresses[index], fields[3], "job {job_id} over {addresses:?}");
        checked += 1;
    }
    assert_eq!(checked, 5 * 46);
}

#[tokio::test]
async fn router_uses_the_same_ring() {
    let router = Router::default();
    for fields in rows("pick").take(120) {
        let job_id: i32 = fields[1].parse().expect("vector job id is an i32");
        let addresses: Vec<String> = fields[2].split(',').map(str::to_owned).collect();
        let route = router
            .route(ExecutorRouteStrategy::ConsistentHash, job_id, &addresses, &NoProbe)
            .await
            .expect("routes");
        assert_eq!(route.address, fields[3]);
        assert_eq!(route.msg, None);
    }
}

#[test]
fn a_job_keeps_its_address_when_another_address_joins_elsewhere() {
    // The point of the ring: most jobs stay put when the list grows.
    let before: Vec<String> = (1..=4).map(|i| format!("http://10.0.0.{i}:9999/")).collect();
    let mut after = before.clone();
    after.push("http://10.0.0.5:9999/".to_owned());
    let moved = (0..1000)
        .filter(|&job| {
            let old = &before[hash_job(job, &before).expect("non-empty")];
            let new = &after[hash_job(job, &after).expect("non-empty")];
            old != new && new != "http://10.0.0.5:9999/"
        })
        .count();
    assert_eq!(moved, 0, "jobs only move to the new address");
}
