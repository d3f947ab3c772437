//! Always fails with a message, to show how errors reach the job log and the trigger result.

use jobwheel_guest_sdk::log;

jobwheel_guest_sdk::main!(|ctx| {
    log!("about to fail on purpose");
    Err(format!("failing on purpose (param: {:?})", ctx.param()))
});
