//! Processes this executor's slice of `0..N` (N = the parameter, default 100) when triggered
//! with sharding broadcast, so N items are split across all shards without overlap.

use jobwheel_guest_sdk::{log, report};

jobwheel_guest_sdk::main!(|ctx| {
    let n: u64 = match ctx.param().trim() {
        "" => 100,
        text => text.parse().map_err(|_| format!("parameter {text:?} is not a number of items"))?,
    };
    let shard = ctx.shard();
    let items = shard.slice(n);
    log!("shard {}/{} takes items {}..{} of {n}", shard.index, shard.total, items.start, items.end);
    let (count, sum) = items.clone().fold((0u64, 0u64), |(count, sum), item| (count + 1, sum + item));
    report(&format!(
        "shard {}/{}: processed {count} items {}..{} (sum {sum})",
        shard.index, shard.total, items.start, items.end
    ));
    Ok::<(), String>(())
});
