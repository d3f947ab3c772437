//! Registry heartbeat: registers the executor with the admins every 30 s and deregisters it
//! once on graceful shutdown (upstream `ExecutorRegistryThread`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jobwheel_protocol::admin_api::paths;
use jobwheel_protocol::{REGISTRY_GROUP_EXECUTOR, RegistryParam};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::admin_client::AdminClient;

/// Runs until `shutdown`, then sends one `registryRemove`. Registers immediately at start so a
/// new executor is routable without waiting for the first interval. `registered` follows the
/// outcome of the last beat (`/readyz`).
pub(crate) async fn run(
    client: AdminClient,
    app_name: String,
    address: String,
    incarnation: String,
    interval: Duration,
    registered_flag: Arc<AtomicBool>,
    shutdown: CancellationToken,
) {
    let param = RegistryParam {
        registry_group: REGISTRY_GROUP_EXECUTOR.to_owned(),
        registry_key: app_name,
        registry_value: address,
        incarnation: Some(incarnation),
    };
    let span = tracing::info_span!("registry", app = %param.registry_key, address = %param.registry_value);
    async move {
        let mut registered = false;
        loop {
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
