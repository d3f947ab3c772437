//! The network policy of a Wasm job: which origins a component may call through `wasi:http`,
//! and which non-public addresses those origins may resolve to.
//!
//! The syntax is part of the admin↔executor contract (the admin validates what a user saves, the
//! executor enforces what a trigger carries), so it lives here and both sides parse it the same
//! way. One entry per line:
//!
//! - an origin, `scheme://host[:port]`: `https://api.example.com`, `http://10.0.0.5:8080`,
//!   `https://*.example.com` (any subdomain, not the bare domain), `http://127.0.0.1:*` (any
//!   port). Without a scheme (`api.example.com`, `*.example.com`) an entry means `https` on 443.
//!   An origin whose host is an IP literal also grants that address;
//! - an address grant, `IP` or `IP/prefix` (`10.0.0.0/8`, `fd00::/8`): a name-matched origin
//!   may resolve to an address in it although the address is not public.
//!
//! A resolved address must be globally reachable (IANA special-purpose registries, via the
//! `ip_network` crate) and not multicast, unless an address grant covers it. That refuses
//! loopback, private, link-local (cloud metadata at 169.254.169.254 included), shared, reserved
//! and documentation ranges by default — and a DNS name cannot smuggle one in.

use std::fmt;
use std::net::IpAddr;

use ip_network::IpNetwork;

/// A parsed policy. The empty policy allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetPolicy {
    origins: Vec<OriginRule>,
    addresses: Vec<IpNetwork>,
}

/// A policy entry that does not parse, with the reason in words for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "network policy entry `{}`: {}", self.entry, self.reason)
    }
}

impl std::error::Error for PolicyError {}

#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginRule {
    https: bool,
    host: HostRule,
    /// `None` = any port.
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostRule {
    /// Lower-case DNS name, matched exactly.
    Name(String),
    /// `*.example.com`, stored as `.example.com`.
    Suffix(String),
    Ip(IpAddr),
}

impl NetPolicy {
    /// Parses entries; blank entries and `#` comments are skipped.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<NetPolicy, PolicyError> {
        let mut policy = NetPolicy::default();
        for raw in entries {
            let entry = raw.as_ref().trim();
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let error = |reason: &str| PolicyError { entry: entry.to_owned(), reason: reason.to_owned() };
            if let Some(network) = parse_network(entry).map_err(|reason| error(&reason))? {
                policy.addresses.push(network);
                continue;
            }
            let rule = parse_origin(entry).map_err(|reason| error(&reason))?;
            if let HostRule::Ip(ip) = rule.host {
                policy.addresses.push(IpNetwork::from(ip));
            }
            policy.origins.push(rule);
        }
        Ok(policy)
    }

    /// Whether nothing at all is allowed.
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
    }

    /// Whether a request to `scheme://host:port` matches an origin. `host` is compared
    /// case-insensitively; IPv6 literals come without brackets.
    pub fn allows_origin(&self, https: bool, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.origins.iter().any(|rule| {
            rule.https == https
                && rule.port.is_none_or(|p| p == port)
                && match &rule.host {
                    HostRule::Name(name) => *name == host,
                    HostRule::Suffix(suffix) => host.len() > suffix.len() && host.ends_with(suffix.as_str()),
                    HostRule::Ip(allowed) => ip.is_some_and(|ip| ip.to_canonical() == *allowed),
                }
        })
    }

    /// Whether an address grant covers `ip`.
    pub fn grants_address(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.addresses.iter().any(|network| network.contains(ip))
    }
}

/// Why an address is not public, for denial messages; `None` when it is public.
pub fn non_public_class(ip: IpAddr) -> Option<&'static str> {
    let ip = ip.to_canonical();
    if ip.is_multicast() {
        return Some("a multicast address");
    }
    if IpNetwork::from(ip).is_global() {
        return None;
    }
    Some(match ip {
        IpAddr::V4(v4) if v4.octets() == [169, 254, 169, 254] => "the cloud metadata address",
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_unspecified() => "the unspecified address",
        IpAddr::V4(v4) if v4.is_private() => "a private address",
        IpAddr::V4(v4) if v4.is_link_local() => "a link-local address",
        IpAddr::V6(v6) if v6.is_unique_local() => "a private (unique local) address",
        IpAddr::V6(v6) if v6.is_unicast_link_local() => "a link-local address",
        _ => "not a globally reachable address",
    })
}

/// `Ok(None)` when the entry is not an address grant at all (an origin, then).
fn parse_network(entry: &str) -> Result<Option<IpNetwork>, String> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Ok(Some(IpNetwork::from(ip.to_canonical())));
    }
    match entry.split_once('/') {
        Some((address, _)) if address.parse::<IpAddr>().is_ok() => entry
            .parse::<IpNetwork>()
            .map(Some)
            // A security list should not silently widen `10.0.0.1/8` to `10.0.0.0/8`.
            .map_err(|_| {
                "not a network: the prefix length is out of range or address bits are set beyond it"
                    .to_owned()
            }),
        _ => Ok(None),
    }
}

fn parse_origin(entry: &str) -> Result<OriginRule, String> {
    let (https, rest) = match entry.split_once("://") {
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "https" => (true, rest),
            "http" => (false, rest),
            other => return Err(format!("scheme `{other}` is not allowed; use http or https")),
        },
        None => (true, entry),
    };
    if rest.contains(['/', '?', '#', '@']) {
        return Err("write an origin only (scheme://host[:port]), without path, query or user".to_owned());
    }
    let (host, port) = split_host_port(rest)?;
    let port = match port {
        None => Some(if https { 443 } else { 80 }),
        Some("*") => None,
        Some(text) => match text.parse::<u16>() {
            Ok(port) if port > 0 => Some(port),
            _ => return Err(format!("`{text}` is not a port (1-65535 or *)")),
        },
    };
    let host = host.to_ascii_lowercase();
    let host = if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        HostRule::Ip(ip.to_canonical())
    } else if let Some(domain) = host.strip_prefix("*.") {
        check_name(domain)?;
        HostRule::Suffix(format!(".{domain}"))
    } else {
        check_name(&host)?;
        HostRule::Name(host)
    };
    Ok(OriginRule { https, host, port })
}

fn split_host_port(rest: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(after) = rest.strip_prefix('[') {
        let (inside, tail) = after.split_once(']').ok_or("unclosed `[` in an IPv6 address")?;
        return match tail.strip_prefix(':') {
            Some(port) => Ok((inside, Some(port))),
            None if tail.is_empty() => Ok((inside, None)),
            None => Err(format!("unexpected `{tail}` after the address")),
        };
    }
    Ok(match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    })
}

fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
        });
    if valid { Ok(()) } else { Err(format!("`{name}` is not a host name, IP address or *.domain")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(entries: &[&str]) -> NetPolicy {
        NetPolicy::parse(entries).unwrap()
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let p = policy(&[
            "https://api.example.com",
            "http://10.0.0.5:8080",
            "*.example.org",
            "http://127.0.0.1:*",
        ]);
        assert!(p.allows_origin(true, "API.example.com", 443));
        assert!(!p.allows_origin(false, "api.example.com", 443), "scheme must match");
        assert!(!p.allows_origin(true, "api.example.com", 8443), "port must match");
        assert!(p.allows_origin(false, "10.0.0.5", 8080));
        assert!(p.allows_origin(true, "a.b.example.org", 443));
        assert!(!p.allows_origin(true, "example.org", 443), "a wildcard is subdomains only");
        assert!(!p.allows_origin(true, "evilexample.org", 443));
        assert!(p.allows_origin(false, "127.0.0.1", 9));
        assert!(!p.allows_origin(false, "localhost", 9));
    }

    #[test]
    fn ip_origins_and_cidrs_grant_addresses() {
        let p = policy(&["http://10.0.0.5:8080", "192.168.0.0/16", "::1"]);
        assert!(p.grants_address("10.0.0.5".parse().unwrap()));
        assert!(!p.grants_address("10.0.0.6".parse().unwrap()));
        assert!(p.grants_address("192.168.4.4".parse().unwrap()));
        assert!(p.grants_address("::ffff:10.0.0.5".parse().unwrap()), "mapped addresses are canonical");
        assert!(p.grants_address("::1".parse().unwrap()));
        assert!(!p.allows_origin(false, "192.168.4.4", 80), "an address grant is not an origin");
    }

    #[test]
    fn classes_of_non_public_addresses() {
        for (ip, class) in [
            ("127.0.0.1", "a loopback address"),
            ("169.254.169.254", "the cloud metadata address"),
            ("10.1.2.3", "a private address"),
            ("169.254.1.1", "a link-local address"),
            ("224.0.0.1", "a multicast address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("fd00::1", "a private (unique local) address"),
            ("100.64.0.1", "not a globally reachable address"),
            ("0.0.0.0", "the unspecified address"),
        ] {
            assert_eq!(non_public_class(ip.parse().unwrap()), Some(class), "{ip}");
        }
        for ip in ["1.1.1.1", "2606:4700::1111"] {
            assert_eq!(non_public_class(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn bad_entries_say_why() {
        for (entry, reason) in [
            ("ftp://example.com", "scheme `ftp`"),
            ("https://example.com/path", "origin only"),
            ("https://user@example.com", "origin only"),
            ("https://example.com:0", "not a port"),
            ("https://exa mple.com", "not a host name"),
            ("https://*.", "not a host name"),
            ("10.0.0.0/33", "not a network"),
            ("10.0.0.1/8", "not a network"),
        ] {
            let error = NetPolicy::parse(&[entry]).unwrap_err();
            assert!(error.to_string().contains(reason), "{entry}: {error}");
        }
        assert!(NetPolicy::parse(&["", "  # comment"]).unwrap().is_empty());
    }
}
