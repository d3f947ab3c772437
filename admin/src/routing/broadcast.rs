//! SHARDING_BROADCAST has no router: the trigger sends one request per address, each with
//! its shard index. These helpers reproduce upstream's `JobTrigger.trigger` decisions.

/// One trigger of a (possibly broadcast) job: shard `index` of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// `broadcastIndex` sent to the executor.
    pub index: i32,
    /// `broadcastTotal` sent to the executor.
    pub total: i32,
}

impl Shard {
    /// Upstream's value for non-broadcast triggers: `{0, 1}`.
    pub const SINGLE: Shard = Shard { index: 0, total: 1 };

    /// The `executor_sharding_param` log column for a broadcast shard: `"index/total"`.
    /// (Non-broadcast triggers store NULL there.)
    pub fn log_param(self) -> String {
        format!("{}/{}", self.index, self.total)
    }
}

/// Parses an `executor_sharding_param` handed back by a retry: `"a/b"` with both parts
/// integers (`Integer.valueOf`, so `+1` and `-1` are accepted); anything else is ignored.
///
/// Java's `split("/")` drops trailing empty parts, so `"1/2/"` still counts as two parts.
pub fn parse_sharding_param(param: &str) -> Option<Shard> {
    let mut parts: Vec<&str> = param.split('/').collect();
    while parts.last().is_some_and(|part| part.is_empty()) {
        parts.pop();
    }
    match parts.as_slice() {
        [index, total] => Some(Shard { index: index.parse().ok()?, total: total.parse().ok()? }),
        _ => None,
    }
}

/// The shards one trigger of a job fans out to.
///
/// A SHARDING_BROADCAST job with a non-empty address list and no sharding param gets one
/// shard per address (`i/size`). Everything else — other strategies, an empty list (which
/// then fails with "address empty"), or a retry carrying `"i/total"` — is a single trigger
/// with the parsed pair or `{0, 1}`.
pub fn plan_shards(is_broadcast: bool, address_count: usize, retry_param: Option<&str>) -> Vec<Shard> {
    let parsed = retry_param.and_then(parse_sharding_param);
    match (is_broadcast, address_count, parsed) {
        (true, count, None) if count > 0 => {
            let total = i32::try_from(count).unwrap_or(i32::MAX);
            (0..total).map(|index| Shard { index, total }).collect()
        }
        (_, _, shard) => vec![shard.unwrap_or(Shard::SINGLE)],
    }
}

/// The address a broadcast shard is sent to: `list[index]`, or `list[0]` when the index is
/// stale (a retry after the group shrank). `None` for an empty list.
///
/// Upstream would throw on a negative index (`List.get(-1)`); we send those to `list[0]` too.
pub fn shard_address(addresses: &[String], index: i32) -> Option<&str> {
    let chosen = usize::try_from(index).ok().and_then(|i| addresses.get(i));
    chosen.or_else(|| addresses.first()).map(String::as_str)
}
