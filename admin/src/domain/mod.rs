//! The admin's domain vocabulary that several layers share — the engine writes it, metrics
//! label by it, the HTTP edge shows it — kept here so that none of them imports another for it.

mod trigger_type;

pub use trigger_type::TriggerType;
