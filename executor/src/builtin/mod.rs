//! Built-in BEAN handlers shipped with the `jobwheel-executor` daemon, mirroring upstream's
//! sample handlers: `demoJobHandler`, `shardingJobHandler`, `httpJobHandler`, and with
//! `--enable-script-glue` `commandJobHandler`.

mod command;
mod demo;
mod http;

pub use http::HttpPolicy;

use crate::handler::Handlers;

/// Registers every built-in handler; `commands` (`--enable-script-glue`) adds
/// `commandJobHandler`, which runs command lines.
pub fn register(handlers: &mut Handlers, http_policy: HttpPolicy, commands: bool) {
    handlers.register("demoJobHandler", demo::demo);
    handlers.register("shardingJobHandler", demo::sharding);
    handlers.register("httpJobHandler", http::HttpJobHandler::new(http_policy));
    if commands {
        handlers.register("commandJobHandler", command::command);
    }
}
