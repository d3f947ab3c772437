//! LEAST_FREQUENTLY_USED, including upstream's tie-breaking.
//!
//! `ExecutorRouteLFU` keeps, per job, a `HashMap<address, count>`; it seeds each new (or
//! overgrown) address with `random(size)`, drops vanished ones, stable-sorts the entries by
//! count and takes the first. Ties are therefore broken by `HashMap` iteration order, which is
//! deterministic: bucket index `(h ^ h >>> 16) & (capacity - 1)` of Java's `String.hashCode`,
//! then insertion order inside a bucket. We model exactly that (capacity starts at 16 and
//! doubles when the size exceeds 3/4 of it; it never shrinks), so a tie goes to the same
//! address as upstream. Not modelled: a bucket turning into a tree, which needs 8 addresses
//! in one bucket of a table of at least 64 slots.

use super::addresses::java_string_hash;
use super::cache::{COUNT_RESET_ABOVE, DailyMap};
use crate::clock::RandomSource;

/// One job's `HashMap<String, Integer>` as far as its iteration order goes.
#[derive(Debug)]
pub(crate) struct LfuCounts {
    /// In insertion order; a re-`put` of a present key keeps its place.
    entries: Vec<LfuEntry>,
    /// Table size; 0 until the first put (Java allocates lazily).
    capacity: usize,
}

#[derive(Debug)]
struct LfuEntry {
    address: String,
    count: u32,
}

impl LfuCounts {
    fn new() -> Self {
        Self { entries: Vec::new(), capacity: 0 }
    }

    fn put(&mut self, address: &str, count: u32) {
        if let Some(entry) = self.entries.iter_mut().find(|entry| entry.address == address) {
            entry.count = count;
            return;
        }
        if self.capacity == 0 {
            self.capacity = 16;
        }
        self.entries.push(LfuEntry { address: address.to_owned(), count });
        // `if (++size > threshold) resize()`, threshold = capacity * 0.75.
        if self.entries.len() > self.capacity / 4 * 3 {
            self.capacity *= 2;
        }
    }

    fn bucket(&self, address: &str) -> usize {
        let h = java_string_hash(address) as u32;
        ((h ^ (h >> 16)) as usize) & (self.capacity - 1)
    }

    /// Entry indexes in `HashMap` iteration order.
    fn iteration_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        // Stable: insertion order survives inside a bucket.
        order.sort_by_key(|&i| self.bucket(&self.entries[i].address));
        order
    }
}

/// LEAST_FREQUENTLY_USED state for every job.
#[derive(Debug)]
pub(crate) struct LfuTable(DailyMap<LfuCounts>);

impl LfuTable {
    pub(crate) fn new() -> Self {
        Self(DailyMap::new())
    }

    /// Returns the index into `addresses` of the least used address and counts the use.
    pub(crate) fn pick(
        &mut self,
        job_id: i32,
        addresses: &[String],
        now_ms: i64,
        random: &dyn RandomSource,
    ) -> Option<usize> {
        self.0.expire(now_ms);
        let counts = self.0.jobs.entry(job_id).or_insert_with(LfuCounts::new);
        let size = u32::try_from(addresses.len()).unwrap_or(u32::MAX);
        for address in addresses {
            let known = counts.entries.iter().find(|entry| entry.address == *address);
            if known.is_none_or(|entry| entry.count > COUNT_RESET_ABOVE) {
                counts.put(address, random.next_below(size));
            }
        }
        counts.entries.retain(|entry| addresses.contains(&entry.address));
        // `Collections.sort` by count is stable, so the first minimum in iteration order wins.
        let least = counts.iteration_order().into_iter().min_by_key(|&i| counts.entries[i].count)?;
        let entry = &mut counts.entries[least];
        entry.count += 1;
        addresses.iter().position(|address| *address == entry.address)
    }
}
