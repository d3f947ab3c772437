//! Multi-admin high availability and durability with real `jobwheel-admin` processes:
//! `failover` — two admins on one PostgreSQL / MariaDB database, the active scheduler killed
//! repeatedly under load, every scheduled trigger fired exactly once; `durability` — results
//! finished while the admin is down (and across an executor restart) are all recorded;
//! `callback_storm` — an admin SIGKILLed while it holds unstored callbacks loses none;
//! `exactly_once` — an exactly-once fire in doubt after its admin's death is resent to its
//! executor and runs once, on all three databases.

mod callback_storm;
mod durability;
mod exactly_once;
mod failover;
mod support;
