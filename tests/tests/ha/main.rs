//! Multi-admin high availability and durability with real `jobwheel-admin` processes:
//! `failover` — two admins on one PostgreSQL / MariaDB database, the active scheduler killed
//! repeatedly under load, every scheduled trigger fired exactly once; `durability` — results
//! finished while the admin is down (and across an executor restart) are all recorded;
//! `callback_storm` — an admin SIGKILLed while it holds unstored callbacks loses none.

mod callback_storm;
mod durability;
mod failover;
mod support;
