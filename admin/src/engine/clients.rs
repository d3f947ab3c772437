//! [`ExecutorClients`]: the executor client each group's calls go through — with the group's
//! own access token and xxl-job 3.5's protocol if it has a token, else the global one.
//!
//! One value shared by every role that calls executors (the trigger path's `/run`, kills, the
//! rolling log, `/status`, `/outstanding`, `/wasmPrepare`), so they agree on which token a
//! group's executors expect.

use std::sync::Arc;

use crate::credentials::GroupTokens;
use crate::executor_client::ExecutorApi;
use crate::store::GroupId;

/// The global client and the per-group tokens.
pub(crate) struct ExecutorClients {
    global: Arc<dyn ExecutorApi>,
    group_tokens: Option<Arc<GroupTokens>>,
}

impl ExecutorClients {
    pub(crate) fn new(global: Arc<dyn ExecutorApi>, group_tokens: Option<Arc<GroupTokens>>) -> Self {
        Self { global, group_tokens }
    }

    /// The client for group `group`'s executors. A token that cannot be read now (database
    /// error) falls back to the global client; the executor's refusal then shows in the
    /// trigger message.
    pub(crate) async fn for_group(&self, group: GroupId) -> Arc<dyn ExecutorApi> {
        let Some(tokens) = &self.group_tokens else { return Arc::clone(&self.global) };
        match tokens.by_group(group).await {
            Ok(Some(credential)) => {
                self.global.for_group(&credential).unwrap_or_else(|| Arc::clone(&self.global))
            }
            Ok(None) => Arc::clone(&self.global),
            Err(error) => {
                tracing::warn!(group = group.0, %error, "cannot read the group's access token; using the global one");
                Arc::clone(&self.global)
            }
        }
    }
}
