//! Allocates 1 MiB blocks (touching every page) until the runtime's memory limit refuses
//! more; the allocation failure aborts the run, which the runtime reports as out of memory.

use jobwheel_guest_sdk::log;

jobwheel_guest_sdk::main!(|_ctx| {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    for held in 1u64.. {
        blocks.push(vec![0xa5; 1 << 20]);
        if held % 8 == 0 {
            log!("holding {held} MiB");
        }
    }
});
