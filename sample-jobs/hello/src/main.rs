//! The smallest useful job: logs its parameter and ids, and reports a greeting.

use jobwheel_guest_sdk::{log, report};

jobwheel_guest_sdk::main!(|ctx| {
    let name = if ctx.param().is_empty() { "world" } else { ctx.param() };
    log!("hello, {name}! (job {}, log {})", ctx.job_id(), ctx.log_id());
    report(&format!("said hello to {name}"));
});
