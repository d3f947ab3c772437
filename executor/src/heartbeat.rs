//! Registry heartbeat: registers the executor with the admins every 30 s and deregisters it
//! once on graceful shutdown (upstream `ExecutorRegistryThread`).

use std::time::Duration;

use jobwheel_protocol::admin_api::paths;
use jobwheel_protocol::{REGISTRY_GROUP_EXECUTOR, RegistryParam};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::admin_client::AdminClient;

/// Runs until `shutdown`, then sends one `registryRemove`. Registers immediately at start so a
/// new executor is routable without waiting for the first interval.
pub(crate) async fn run(
    client: AdminClient,
    app_name: String,
    address: String,
    interval: Duration,
    shutdown: CancellationToken,
) {
    let param = RegistryParam {
        registry_group: REGISTRY_GROUP_EXECUTOR.to_owned(),
        registry_key: app_name,
        registry_value: address,
    };
    let span = tracing::info_span!("registry", app = %param.registry_key, address = %param.registry_value);
    async move {
        let mut registered = false;
        loop {
            match client.post(paths::REGISTRY, &param).await {
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
            Ok(()) => tracing::info!("deregistered from admin"),
            Err(e) => tracing::warn!(error = %e, "registryRemove failed"),
        }
    }
    .instrument(span)
    .await;
}
