-- jobwheel addition: admins that share the scheduling work (docs/engine.md, "Shared scheduling").
-- Jobs fall into 32 partitions by id (id % 32); an admin pre-reads only the partitions it
-- leases, and takes a lease row FOR UPDATE SKIP LOCKED for the whole pre-read, so two admins never
-- pre-read the same job at once. jobwheel_scheduler lists the admins seen scheduling, so each can
-- compute its fair share; a dead admin stops renewing and its partitions go to the others.
-- The count of partitions is fixed by these rows (PARTITIONS in engine/share.rs).

CREATE TABLE jobwheel_schedule_lease (
  part INTEGER NOT NULL PRIMARY KEY,
  owner VARCHAR(100) DEFAULT NULL,
  lease_until_ms BIGINT NOT NULL DEFAULT 0
);
INSERT INTO jobwheel_schedule_lease (part) VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11), (12), (13), (14), (15), (16), (17), (18), (19), (20), (21), (22), (23), (24), (25), (26), (27), (28), (29), (30), (31);

CREATE TABLE jobwheel_scheduler (
  node VARCHAR(100) NOT NULL PRIMARY KEY,
  seen_ms BIGINT NOT NULL
);
