//! jobwheel admin: scheduler, web UI and JSON API.
//!
//! Not implemented yet: this crate only reserves its place in the workspace and proves the admin
//! can depend on the wire types without the executor's runtime. See ROADMAP in README.md.
#![forbid(unsafe_code)]

pub use jobwheel_protocol as protocol;
