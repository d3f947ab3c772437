//! `--trusted-proxies`: which peers may tell the admin the client's address in
//! `X-Forwarded-For`, and how that address is read.
//!
//! Behind a reverse proxy every request comes from the proxy, so a throttle keyed on the peer
//! address throttles everybody at once (or, with a per-address limit, nobody). The header is only
//! believed from a configured proxy: anybody else could write any address into it. The list is
//! read from the right (the hop nearest to us) past every trusted address, like nginx's
//! `real_ip_recursive on`, so a client cannot hide behind an address it wrote itself.

use std::net::IpAddr;
use std::str::FromStr;

use axum::http::HeaderMap;
use ip_network::IpNetwork;

/// The header that proxies append the address of their own peer to.
const FORWARDED_FOR: &str = "x-forwarded-for";

/// Parses `CIDR,…` (a bare address means that address alone): the syntax of every flag that
/// names networks (`--trusted-proxies`, `--alarm-allow-private`).
///
/// # Errors
/// The first entry that is neither an address nor a network, with the reason.
pub fn parse_networks(list: &str) -> Result<Vec<IpNetwork>, String> {
    let mut networks = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let network = match IpAddr::from_str(entry) {
            Ok(ip) => IpNetwork::from(ip),
            Err(_) => IpNetwork::from_str(entry).map_err(|e| format!("{entry:?}: {e}"))?,
        };
        networks.push(network);
    }
    Ok(networks)
}

/// Networks whose requests may name the client in `X-Forwarded-For`. Empty: nobody.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNetwork>);

impl TrustedProxies {
    /// Parses `CIDR,…` (a bare address means that address alone).
    ///
    /// # Errors
    /// The first entry that is neither an address nor a network, with the reason.
    pub fn parse(list: &str) -> Result<Self, String> {
        parse_networks(list).map(Self)
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|network| network.contains(ip))
    }

    /// The client's address: `peer` itself unless `peer` is a trusted proxy; then the nearest
    /// address in `X-Forwarded-For` that is not a trusted proxy (or the farthest one, if all
    /// are). An entry that is not an address ends the walk at the hop before it, which is the
    /// last one a trusted proxy vouched for.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return peer;
        }
        // Several header lines count as one list, in order (RFC 9110 §5.3).
        let hops: Vec<&str> = headers
            .get_all(FORWARDED_FOR)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .collect();
        let mut client = peer;
        for hop in hops.into_iter().rev() {
            let Ok(ip) = IpAddr::from_str(hop) else { break };
            client = ip.to_canonical();
            if !self.trusts(client) {
                break;
            }
        }
        client
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(FORWARDED_FOR, HeaderValue::from_str(value).expect("valid"));
        }
        headers
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn lists_parse_with_bare_addresses_and_refuse_junk_by_name() {
        let proxies = TrustedProxies::parse(" 10.0.0.0/8, 192.168.1.7 ,::1").expect("valid");
        assert!(
            proxies.trusts(ip("10.1.2.3")) && proxies.trusts(ip("192.168.1.7")) && proxies.trusts(ip("::1"))
        );
        assert!(!proxies.trusts(ip("192.168.1.8")));
        assert!(TrustedProxies::parse("").expect("empty").is_empty());
        let error = TrustedProxies::parse("10.0.0.0/8,proxy.local").expect_err("junk");
        assert!(error.starts_with("\"proxy.local\""), "{error}");
        assert!(TrustedProxies::parse("10.0.0.1/8").is_err(), "host bits set");
    }

    #[test]
    fn the_header_is_only_believed_from_a_trusted_proxy() {
        let proxies = TrustedProxies::parse("10.0.0.0/8").expect("valid");
        let forged = headers(&["203.0.113.9"]);
        assert_eq!(proxies.client(ip("198.51.100.1"), &forged), ip("198.51.100.1"), "not a proxy");
        assert_eq!(TrustedProxies::default().client(ip("10.0.0.2"), &forged), ip("10.0.0.2"));
        assert_eq!(proxies.client(ip("10.0.0.2"), &forged), ip("203.0.113.9"));
        assert_eq!(proxies.client(ip("10.0.0.2"), &HeaderMap::new()), ip("10.0.0.2"), "no header");
    }

    #[test]
    fn the_walk_stops_at_the_first_untrusted_hop_from_the_right() {
        let proxies = TrustedProxies::parse("10.0.0.0/8").expect("valid");
        // The client wrote 1.1.1.1 itself; 203.0.113.9 is what our outer proxy saw.
        let chain = headers(&["1.1.1.1, 203.0.113.9", "10.0.0.3"]);
        assert_eq!(proxies.client(ip("10.0.0.2"), &chain), ip("203.0.113.9"));
        // All trusted: the farthest.
        assert_eq!(proxies.client(ip("10.0.0.2"), &headers(&["10.0.0.9, 10.0.0.3"])), ip("10.0.0.9"));
        // Junk ends the walk at the last vouched-for hop.
        assert_eq!(proxies.client(ip("10.0.0.2"), &headers(&["1.1.1.1, junk, 10.0.0.3"])), ip("10.0.0.3"));
        // An IPv4-mapped peer counts as its IPv4 address.
        assert_eq!(proxies.client(ip("::ffff:10.0.0.2"), &headers(&["203.0.113.9"])), ip("203.0.113.9"));
    }
}
