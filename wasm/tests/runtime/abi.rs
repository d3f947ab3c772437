//! The guest SDK repeats the ABI names (it cannot depend on wasmtime); they must agree.

use jobwheel_guest_sdk::abi as guest;
use jobwheel_wasm::abi as host;

#[test]
fn guest_sdk_and_runtime_agree_on_the_abi() {
    assert_eq!(guest::ARGV0, host::ARGV0);
    assert_eq!(guest::ENV_PARAM, host::ENV_PARAM);
    assert_eq!(guest::ENV_JOB_ID, host::ENV_JOB_ID);
    assert_eq!(guest::ENV_LOG_ID, host::ENV_LOG_ID);
    assert_eq!(guest::ENV_SHARD_INDEX, host::ENV_SHARD_INDEX);
    assert_eq!(guest::ENV_SHARD_TOTAL, host::ENV_SHARD_TOTAL);
    assert_eq!(guest::RESULT_MARKER, host::RESULT_MARKER);
}
