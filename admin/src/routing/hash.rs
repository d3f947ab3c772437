//! CONSISTENT_HASH: upstream's MD5 ring with 100 virtual nodes per address.
//!
//! `ExecutorRouteConsistentHash` (since v2.2.0): every address `a` puts 100 ring keys
//! `hash("SHARD-{a}-NODE-{i}")` into a `TreeMap<Long, String>`, a later put overwriting an
//! equal key; the job lands on the first key `>= hash(jobId as decimal string)`, wrapping to
//! the smallest key. `hash` is MD5 of the UTF-8 bytes with digest bytes 0..3 read
//! little-endian as an unsigned 32-bit number. The ring is rebuilt on every trigger; so is ours
//! (100 × n MD5s is a few microseconds per address and keeps the router stateless).

use std::collections::BTreeMap;

use md5::{Digest, Md5};

/// Virtual nodes per address (`VIRTUAL_NODE_NUM`; it was 5 before upstream v2.2.0).
pub const VIRTUAL_NODE_NUM: usize = 100;

/// Upstream's ring hash: MD5(`key` as UTF-8), bytes 0..3 little-endian, unsigned.
pub fn ring_hash(key: &str) -> u32 {
    let digest = Md5::digest(key.as_bytes());
    u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// The ring for `addresses`: key → index into `addresses`.
///
/// Insertion follows upstream's loop order so that a colliding key keeps the address put last.
pub fn build_ring(addresses: &[String]) -> BTreeMap<u32, usize> {
    let mut ring = BTreeMap::new();
    for (index, address) in addresses.iter().enumerate() {
        for node in 0..VIRTUAL_NODE_NUM {
            ring.insert(ring_hash(&format!("SHARD-{address}-NODE-{node}")), index);
        }
    }
    ring
}

/// The index into `addresses` that upstream's consistent hash picks for `job_id`, or `None`
/// for an empty list.
pub fn hash_job(job_id: i32, addresses: &[String]) -> Option<usize> {
    let ring = build_ring(addresses);
    let job_hash = ring_hash(&job_id.to_string());
    ring.range(job_hash..).next().or_else(|| ring.iter().next()).map(|(_, &index)| index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_list_has_no_pick() {
        assert_eq!(hash_job(1, &[]), None);
    }

    #[test]
    fn hash_reads_the_first_four_digest_bytes_little_endian() {
        // MD5("") = d41d8cd98f00b204e9800998ecf8427e → bytes d4 1d 8c d9 → 0xd98c1dd4.
        assert_eq!(ring_hash(""), 0xd98c_1dd4);
    }
}
