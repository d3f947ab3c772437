//! [`AdminCore`]: what the HTTP edge asks of the rest of the admin.
//!
//! The executor-facing API validates, stores registrations and answers; everything with
//! consequences beyond one row — applying a job result (child jobs, alarms, FIX_DELAY) and
//! making a new executor routable — belongs to the scheduling engine. This trait is the seam,
//! so the edge can be tested with a recording fake and the engine can be developed on its own.

use async_trait::async_trait;
use jobwheel_protocol::HandleCallbackParam;

/// The admin's reaction to executor API calls.
///
/// Implementations handle and log their own errors: both calls happen after (callbacks) or
/// independently of (registry) what the executor is told, as in upstream.
#[async_trait]
pub trait AdminCore: Send + Sync + 'static {
    /// Applies executor callbacks: store each result with upstream's repeat guard
    /// (`handle_code > 0` → ignored), then whatever completing a log implies (child jobs etc.).
    ///
    /// Called from a bounded background queue after the HTTP reply was sent, like upstream's
    /// callback pool; batches are never dropped, and several batches may be in flight at once.
    async fn on_callbacks(&self, items: Vec<HandleCallbackParam>);

    /// The registry rows of `app_name` changed (an executor appeared or deregistered): make the
    /// address list of its automatically registered group(s) current now, instead of at the
    /// next 30 s registry pass.
    ///
    /// Called after the registry row was written and before the executor gets its reply.
    /// Heartbeats from an executor this admin has seen within the last 90 s do not call it.
    async fn refresh_group(&self, app_name: &str);

    /// Stops whatever the core runs in the background. Called once at shutdown, after every
    /// acknowledged callback was handed to [`AdminCore::on_callbacks`].
    async fn shutdown(&self) {}
}
