//! Pre-compilation of a new Wasm module version: after an upload or rollback the engine tells
//! the executors of the job's group (`/wasmPrepare`) to fetch and compile the module now, so
//! the first trigger of the version does not wait for a cold compile (seconds for a Python or
//! JavaScript component). Best effort and in the background: an executor that is down, busy or
//! not jobwheel's (upstream executors answer "not found") simply compiles at the first trigger.

use std::sync::Arc;

use tokio_util::task::TaskTracker;

use super::clients::ExecutorClients;
use super::shard::wasm_module_ref;
use crate::store::{JobId, Store};

/// Announces job `job_id`'s current module to its group's executors.
pub(super) fn announce_module(
    store: Arc<dyn Store>,
    clients: Arc<ExecutorClients>,
    tracker: &TaskTracker,
    job_id: JobId,
) {
    let spawner = tracker.clone();
    tracker.spawn(async move {
        let job = match store.load_job(job_id).await {
            Ok(Some(job)) => job,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(job_id = job_id.0, %error, "cannot announce a wasm module: job not readable");
                return;
            }
        };
        let (module, group) =
            match (wasm_module_ref(&*store, job_id).await, store.load_group(job.job.job_group).await) {
                (Ok(Some(module)), Ok(Some(group))) => (module, group),
                (Err(error), _) => {
                    tracing::warn!(job_id = job_id.0, %error, "cannot announce a wasm module");
                    return;
                }
                _ => return,
            };
        let addresses = group.group.address_list.unwrap_or_default();
        let client = clients.for_group(group.id).await;
        // One task per executor: a slow one does not delay the others.
        for address in addresses.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let (client, module, address) = (Arc::clone(&client), module.clone(), address.to_owned());
            spawner.spawn(async move {
                let reply = client.prepare_wasm(&address, &module).await;
                tracing::debug!(address, digest = %module.digest, code = reply.code, "wasm module announced");
            });
        }
    });
}
