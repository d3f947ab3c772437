#!/usr/bin/env python3
"""Independent reference for upstream xxl-job's CONSISTENT_HASH router.

Re-implements ExecutorRouteConsistentHash (xxl-job >= 2.2.0) with Python's hashlib, without
looking at the Rust code, and writes the vectors that admin/tests/all/routing_hash.rs checks:

    python3 admin/tests/vectors/consistent_hash.py > admin/tests/vectors/consistent_hash.tsv

Algorithm (upstream-xxl-job.md section 4):
  hash(key) = MD5(key as UTF-8), digest bytes 0..3 read little-endian, unsigned 32-bit.
  ring: for each address in list order, for i in 0..99: ring[hash("SHARD-{address}-NODE-{i}")]
        = address (a later put overwrites an equal key).
  pick: first ring key >= hash(str(job_id)), wrapping to the smallest key.

Output lines (tab-separated):
  hash  <key>  <u32>
  pick  <job_id>  <comma-joined address list>  <chosen address>
"""

import bisect
import hashlib

VIRTUAL_NODE_NUM = 100


def ring_hash(key: str) -> int:
    digest = hashlib.md5(key.encode("utf-8")).digest()
    return int.from_bytes(digest[0:4], "little")


def pick(job_id: int, addresses: list[str]) -> str:
    ring: dict[int, str] = {}
    for address in addresses:
        for i in range(VIRTUAL_NODE_NUM):
            ring[ring_hash(f"SHARD-{address}-NODE-{i}")] = address
    keys = sorted(ring)
    at = bisect.bisect_left(keys, ring_hash(str(job_id)))
    return ring[keys[at % len(keys)]]


ADDRESS_SETS = [
    ["http://127.0.0.1:9999/"],
    ["http://10.0.0.1:9999/", "http://10.0.0.2:9999/"],
    ["http://10.0.0.5:9999/", "http://10.0.0.6:9999/", "http://10.0.0.7:9999/"],
    [
        "http://192.168.1.10:9999/",
        "http://192.168.1.11:9999/",
        "http://192.168.1.12:9999/",
        "http://192.168.1.13:9999/",
        "http://192.168.1.14:9999/",
    ],
    ["http://exec-a.local:8081/xxl-job/", "http://exec-b.local:8081/xxl-job/", "10.1.1.1:9999"],
]

JOB_IDS = list(range(0, 40)) + [100, 1000, 12345, 99999, 1000000, 2147483647]

HASH_KEYS = [
    "",
    "0",
    "1",
    "42",
    "2147483647",
    "SHARD-http://10.0.0.5:9999/-NODE-0",
    "SHARD-http://10.0.0.5:9999/-NODE-7",
    "SHARD-http://10.0.0.5:9999/-NODE-99",
    "SHARD-http://执行器:9999/-NODE-1",
]


def main() -> None:
    for key in HASH_KEYS:
        print(f"hash\t{key}\t{ring_hash(key)}")
    for addresses in ADDRESS_SETS:
        for job_id in JOB_IDS:
            print(f"pick\t{job_id}\t{','.join(addresses)}\t{pick(job_id, addresses)}")


if __name__ == "__main__":
    main()
