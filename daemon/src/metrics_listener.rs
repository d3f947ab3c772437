//! `--metrics-listen`: a second listener, on an address of its own, that serves only
//! `/metrics` and asks for no credentials, so a Prometheus server can scrape a daemon without
//! holding its access token. Both daemons offer it, with the same flag and the same rules.

use std::net::SocketAddr;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// The bound `--metrics-listen` socket, waiting for its router.
#[derive(Debug)]
pub struct MetricsListener(TcpListener);

impl MetricsListener {
    /// Binds `address` if one is given. Bound at start, before anything else runs, so an
    /// address already taken fails the start instead of leaving metrics silently missing.
    pub async fn bind(address: Option<SocketAddr>) -> anyhow::Result<Option<Self>> {
        let Some(address) = address else { return Ok(None) };
        let listener = TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen on {address} (--metrics-listen)"))?;
        Ok(Some(Self(listener)))
    }

    /// Serves `router` (the daemon's `/metrics` alone) until `stop` is cancelled. It holds no
    /// state worth waiting for, so nothing joins the task.
    pub fn serve(self, router: axum::Router, stop: CancellationToken) -> anyhow::Result<()> {
        let address = self.0.local_addr().context("metrics listener has no local address")?;
        tracing::info!(%address, "serving /metrics without credentials (--metrics-listen)");
        tokio::spawn(
            axum::serve(self.0, router)
                .with_graceful_shutdown(stop.cancelled_owned())
                .into_future()
                .in_current_span(),
        );
        Ok(())
    }
}
