//! The admin's domain vocabulary that several layers share — the store keeps it, the engine
//! acts on it, metrics label by it, the HTTP edge shows and parses it — kept here so that none
//! of them imports another for it. A job's and a workflow's strategies and types are typed here,
//! and a stored job or workflow carries them as [`Named`] values (known, or kept as read).

mod delivery;
mod misfire;
mod named;
mod overflow;
mod priority;
mod route_strategy;
mod schedule_type;
mod trigger_type;

pub use delivery::DeliveryMode;
pub use jobwheel_protocol::{BlockStrategy, GlueType};
pub use misfire::{MisfireStrategy, UnknownMisfireStrategy};
pub use named::{KnownName, Named};
pub use overflow::Overflow;
pub use priority::Priority;
pub use route_strategy::{ExecutorRouteStrategy, UnknownRouteStrategy};
pub use schedule_type::{ScheduleType, UnknownScheduleType};
pub use trigger_type::TriggerType;

/// Each type's constants are its `ALL` and `name`.
macro_rules! known_names {
    ($($t:ident),* $(,)?) => {$(
        impl KnownName for $t {
            fn all() -> &'static [Self] {
                &$t::ALL
            }
            fn name(self) -> &'static str {
                $t::name(self)
            }
        }
    )*};
}

known_names!(ScheduleType, MisfireStrategy, ExecutorRouteStrategy, BlockStrategy, GlueType, Overflow);
