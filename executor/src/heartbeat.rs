//! Registry heartbeat: registers the executor with the admins every 30 s and deregisters it
//! once on graceful shutdown (upstream `ExecutorRegistryThread`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use jobwheel_protocol::admin_api::paths;
use jobwheel_protocol::{REGISTRY_GROUP_EXECUTOR, RegistryParam};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::admin_client::AdminClient;

/// What the heartbeat registers, and how often.
pub(crate) struct Beat {
    /// The AppName.
    pub(crate) app_name: String,
    /// The address registered.
    pub(crate) address: String,
    /// This process's incarnation.
    pub(crate) incarnation: String,
    /// Between beats.
    pub(crate) interval: Duration,
    /// Dial-out: how many admins' sockets are open. While none is, no beat goes out — the
    /// first one waits for a socket — so an admin never routes to an address it cannot reach.
    pub(crate) reachable: Option<Arc<AtomicUsize>>,
}

/// How often a beat that waits for a socket looks again.
const REACHABLE_POLL: Duration = Duration::from_millis(50);

/// Runs until `shutdown`, then sends one `registryRemove`. Registers immediately at start (a
/// dial-out executor as soon as a socket is open) so a new executor is routable without waiting
/// for the first interval. `registered` follows the outcome of the last beat (`/readyz`).
pub(crate) async fn run(
    client: AdminClient,
    beat: Beat,
    registered_flag: Arc<AtomicBool>,
    shutdown: CancellationToken,
) {
    let param = RegistryParam {
        registry_group: REGISTRY_GROUP_EXECUTOR.to_owned(),
        registry_key: beat.app_name,
        registry_value: beat.address,
        incarnation: Some(beat.incarnation),
    };
    let interval = beat.interval;
    let reachable = beat.reachable;
    let span = tracing::info_span!("registry", app = %param.registry_key, address = %param.registry_value);
    async move {
        let mut registered = false;
        loop {
            if let Some(open) = &reachable {
                let waited = tokio::time::Instant::now();
                while open.load(Ordering::Relaxed) == 0 && waited.elapsed() < interval {
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(REACHABLE_POLL) => {}
                    }
                }
                if shutdown.is_cancelled() {
                    break;
                }
                if open.load(Ordering::Relaxed) == 0 {
                    // Still no socket: no beat; the registration ages out as a dead one's does.
                    registered_flag.store(false, Ordering::Relaxed);
                    registered = false;
                    continue;
                }
            }
            let beat = client.post(paths::REGISTRY, &param).await;
            registered_flag.store(beat.is_ok(), Ordering::Relaxed);
            match beat {
                Ok(()) if !registered => {
                    tracing::info!("registered with admin");
                    registered = true;
                }
                Ok(()) => tracing::debug!("registry beat ok"),
                Err(e) => {
                    tracing::warn!(error = %e, "registry beat failed");
                    registered = false;
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(interval) => {}
            }
        }
        match client.post(paths::REGISTRY_REMOVE, &param).await {
            Ok(()) => {
                registered_flag.store(false, Ordering::Relaxed);
                tracing::info!("deregistered from admin");
            }
            Err(e) => tracing::warn!(error = %e, "registryRemove failed"),
        }
    }
    .instrument(span)
    .await;
}
