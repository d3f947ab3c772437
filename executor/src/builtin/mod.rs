//! Built-in BEAN handlers shipped with the `jobwheel-executor` daemon, mirroring upstream's
//! sample handlers: `demoJobHandler`, `shardingJobHandler` and `httpJobHandler`.

mod demo;
mod http;

pub use http::HttpPolicy;

use crate::handler::Handlers;

/// Registers every built-in handler.
pub fn register(handlers: &mut Handlers, http_policy: HttpPolicy) {
    handlers.register("demoJobHandler", demo::demo);
    handlers.register("shardingJobHandler", demo::sharding);
    handlers.register("httpJobHandler", http::HttpJobHandler::new(http_policy));
}
