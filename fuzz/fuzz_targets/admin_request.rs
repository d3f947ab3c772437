//! The admin's decoding of executor calls (`AdminRequest::parse`: registry, registryRemove,
//! callback): never panics, accepted registrations are within the table's limits, and what it
//! accepts survives a serialize/parse round trip.
#![no_main]

use jobwheel_protocol::request::{MAX_REGISTRY_GROUP_CHARS, MAX_REGISTRY_KEY_VALUE_CHARS};
use jobwheel_protocol::{AdminRequest, AdminRequestError};
use libfuzzer_sys::fuzz_target;

const URIS: [&str; 4] = ["registry", "registryRemove", "callback", "nope"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let uri = URIS[usize::from(selector) % URIS.len()];
    let request = match AdminRequest::parse(uri, body) {
        Ok(request) => request,
        Err(error @ AdminRequestError::UnknownUri(_)) => {
            assert_eq!(error.message(), "invalid request, uri-mapping(nope) not found.");
            return;
        }
        Err(error) => {
            assert!(!error.message().is_empty());
            return;
        }
    };
    let json = match &request {
        AdminRequest::Registry(p) | AdminRequest::RegistryRemove(p) => {
            for field in [&p.registry_group, &p.registry_key, &p.registry_value] {
                assert!(!field.trim().is_empty());
            }
            assert!(p.registry_group.chars().count() <= MAX_REGISTRY_GROUP_CHARS);
            assert!(p.registry_key.chars().count() <= MAX_REGISTRY_KEY_VALUE_CHARS);
            assert!(p.registry_value.chars().count() <= MAX_REGISTRY_KEY_VALUE_CHARS);
            serde_json::to_vec(p)
        }
        AdminRequest::Callback(items) => serde_json::to_vec(items),
    }
    .expect("a decoded request serializes");
    assert_eq!(AdminRequest::parse(uri, &json).as_ref(), Ok(&request), "round trip of {uri}");
});
