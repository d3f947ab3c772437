//! The network-policy syntax (`protocol/src/net_policy.rs`) a job's grant and the executor's
//! `--wasm-http-allow` are written in: any list of entries parses or is refused with a message
//! naming an entry, and a parsed policy answers every origin and address question without a
//! panic. Address classes are checked on the way: an IPv6 address that carries an IPv4 one is
//! never more public than that IPv4 address.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use jobwheel_protocol::net_policy::{NetPolicy, non_public_class};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // 16 bytes of address, 2 of port, 1 of flags; the rest is the policy, one entry per line.
    let Some((address, rest)) = data.split_first_chunk::<16>() else { return };
    let Some((port, rest)) = rest.split_first_chunk::<2>() else { return };
    let Some((&flags, text)) = rest.split_first() else { return };
    let Ok(text) = std::str::from_utf8(text) else { return };
    let entries: Vec<&str> = text.lines().collect();
    let v6 = Ipv6Addr::from(*address);
    let v4 = Ipv4Addr::new(address[12], address[13], address[14], address[15]);

    match NetPolicy::parse(&entries) {
        Ok(policy) => {
            let host = entries.first().copied().unwrap_or_default();
            let _ = policy.allows_origin(flags & 1 == 1, host, u16::from_le_bytes(*port));
            let _ = policy.grants_address(IpAddr::V6(v6));
            let _ = policy.grants_address(IpAddr::V4(v4));
        }
        Err(error) => assert!(!error.to_string().is_empty(), "a refusal says why"),
    }

    // NAT64 and 6to4 forms of a non-public IPv4 address are not public either.
    if non_public_class(IpAddr::V4(v4)).is_some() {
        let [a, b, c, d] = v4.octets();
        let nat64 = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]));
        let six_to_four = Ipv6Addr::new(0x2002, u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]), 0, 0, 0, 0, 1);
        assert!(non_public_class(IpAddr::V6(nat64)).is_some(), "{nat64} carries {v4}");
        assert!(non_public_class(IpAddr::V6(six_to_four)).is_some(), "{six_to_four} carries {v4}");
    }
});
