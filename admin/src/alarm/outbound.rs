//! Where alarm requests may go (review N7 and L2): a channel's URL is set by an administrator —
//! a role that single sign-on can grant to a whole group at the identity provider — and the
//! admin posts to it from its own network position, so the URL is policed like a Wasm job's
//! outbound request rather than trusted.
//!
//! - Only public addresses (the IANA special-purpose registries, as `net_policy` classifies them
//!   for Wasm and `httpJobHandler`), unless the operator allows a private network with
//!   `--alarm-allow-private` (a flag, not a setting of the UI: the operator's word, not an
//!   administrator's).
//! - The name is resolved once, checked, and the connection pinned to the checked address, so a
//!   second lookup cannot answer differently (DNS rebinding).
//! - No proxy from the environment (a proxy would resolve the name itself, around the check), no
//!   redirect followed, and the reply read only up to [`MAX_REPLY_BYTES`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ip_network::IpNetwork;
use jobwheel_protocol::net_policy::non_public_class;

/// Most bytes of a reply read: the delivery log keeps 2 000 characters of it, and a hostile
/// receiver must not stream gigabytes into the admin.
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// The private networks alarm requests may reach besides public addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlarmNetworks(Vec<IpNetwork>);

impl AlarmNetworks {
    /// Parses `--alarm-allow-private` (`CIDR,…`).
    ///
    /// # Errors
    /// The first entry that is neither an address nor a network.
    pub fn parse(list: &str) -> Result<Self, String> {
        crate::trusted_proxies::parse_networks(list).map(Self)
    }

    /// Whether `ip` may be reached: public, or inside an allowed network.
    fn allows(&self, ip: IpAddr) -> Result<(), String> {
        let ip = ip.to_canonical();
        match non_public_class(ip) {
            None => Ok(()),
            Some(_) if self.0.iter().any(|n| n.contains(ip)) => Ok(()),
            Some(class) => Err(format!(
                "refused: the channel's host resolves to {ip}, a {class} address; alarm requests go to public \
                 addresses only unless the admin is started with --alarm-allow-private naming its network"
            )),
        }
    }

    /// A client for one request to `url`: its host resolved and checked, the connection pinned
    /// to the checked address, no proxy, no redirect. The error says why, without the URL (it
    /// may carry a robot's token).
    pub async fn client_for(&self, url: &str, timeout: Duration) -> Result<reqwest::Client, String> {
        let parsed =
            reqwest::Url::parse(url).map_err(|_| "the channel's URL is not a valid URL".to_owned())?;
        let host = parsed.host_str().ok_or("the channel's URL has no host")?.to_owned();
        let port = parsed.port_or_known_default().ok_or("the channel's URL has no port")?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|e| format!("cannot resolve the channel's host {host}: {e}"))?
                .collect(),
        };
        // Every address the name has must pass: the connection could otherwise land on any.
        for addr in &addrs {
            self.allows(addr.ip())?;
        }
        let first =
            *addrs.first().ok_or_else(|| format!("the channel's host {host} resolved to no address"))?;
        reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .resolve(bare, first)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    }
}

/// The reply's first [`MAX_REPLY_BYTES`] as text, and whether more was left unread.
pub async fn read_capped(mut response: reqwest::Response) -> (String, bool) {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_REPLY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return (String::from_utf8_lossy(&body).into_owned(), true);
        }
        body.extend_from_slice(&chunk);
    }
    (String::from_utf8_lossy(&body).into_owned(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_pass_private_ones_only_when_allowed() {
        let none = AlarmNetworks::default();
        assert!(none.allows("93.184.216.34".parse().unwrap()).is_ok());
        for private in ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "::ffff:127.0.0.1", "fd00::1"] {
            let refused = none.allows(private.parse().unwrap()).unwrap_err();
            assert!(refused.contains("--alarm-allow-private"), "{private}: {refused}");
        }
        let loopback = AlarmNetworks::parse("127.0.0.0/8, 10.0.0.1").unwrap();
        assert!(loopback.allows("127.0.0.1".parse().unwrap()).is_ok());
        assert!(loopback.allows("10.0.0.1".parse().unwrap()).is_ok());
        assert!(loopback.allows("10.0.0.2".parse().unwrap()).is_err());
    }
}
