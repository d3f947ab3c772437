-- jobwheel addition: an index for the pre-read's due-jobs query (`WHERE trigger_status = 1 AND
-- trigger_next_time <= ?`, engine/schedule.rs). Upstream has none, so every pre-read -- one a
-- second -- reads the whole of xxl_job_info: nothing at a thousand jobs, a scan that grows
-- with the table at a million (docs/benchmarks.md, "A million jobs"). The index costs each
-- trigger one index entry moved with the job's next fire time.

CREATE INDEX i_job_due ON xxl_job_info (trigger_next_time) WHERE trigger_status = 1;
