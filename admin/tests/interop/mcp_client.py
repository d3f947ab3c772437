"""The official Python MCP client (PyPI `mcp`) against a running jobwheel admin (docs/mcp.md).

Usage: mcp_client.py URL READ_TOKEN RUN_TOKEN WRITE_TOKEN JOB_ID GROUP_ID INSTANCE_ID
(INSTANCE_ID: a workflow instance waiting at its approval node `gate`)
Prints one JSON object with what each step saw; the Rust test (admin/tests/all/http/mgmt/mcp.rs)
judges it.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def with_session(url, token, steps):
    headers = {"Authorization": f"Bearer {token}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await steps(session)


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "text", None) is not None)


async def call(session, name, args):
    result = await session.call_tool(name, args)
    return {"isError": bool(result.isError), "text": text(result)}


async def main():
    url, read_token, run_token, write_token, job_id, group_id, instance_id = sys.argv[1:8]
    job_id, group_id, instance_id = int(job_id), int(group_id), int(instance_id)
    gate = {"id": instance_id, "node": "gate", "approve": True, "comment": "an agent agrees"}
    # The job runs daily at 03:00: three whole past days hold three of its times.
    day = 86_400_000
    midnight = int(time.time() * 1000) // day * day
    backfill = {"jobId": job_id, "from": midnight - 4 * day, "to": midnight - day - 1, "parallelism": 3}
    out = {}
    new_job = {
        "jobGroup": group_id, "jobDesc": "made by an agent", "author": "mcp",
        "scheduleType": "CRON", "scheduleConf": "0 0 3 * * ?", "glueType": "BEAN",
        "executorHandler": "echo", "executorRouteStrategy": "FIRST",
        "misfireStrategy": "DO_NOTHING", "executorBlockStrategy": "SERIAL_EXECUTION",
    }

    async def as_reader(s):
        tools = await s.list_tools()
        out["tools"] = sorted(t.name for t in tools.tools)
        out["readCreate"] = await call(s, "create_job", {"job": new_job, "dryRun": True})
        out["readTrigger"] = await call(s, "trigger_job", {"id": job_id})
        out["search"] = await call(s, "search_jobs", {"query": "mcp echo"})
        out["explain"] = await call(s, "explain_schedule", {"id": job_id, "count": 3})
        out["readDecide"] = await call(s, "decide_workflow_approval", gate)
        out["readBackfill"] = await call(s, "start_backfill", backfill)
        out["readReplay"] = await call(s, "replay_run", {"runId": 1})
        out["readWhatIf"] = await call(s, "what_if_version", {"jobId": job_id, "version": 1})
        # A reader sees what waits for approval (the job's: nothing here).
        out["approvals"] = await call(s, "list_approvals", {"jobId": job_id, "pending": True})

    async def as_writer(s):
        out["dryRun"] = await call(s, "create_job", {"job": new_job, "dryRun": True})
        bad = dict(new_job, scheduleConf="not a cron")
        out["dryRunBad"] = await call(s, "create_job", {"job": bad, "dryRun": True})
        out["update"] = await call(s, "update_job", {"id": job_id, "changes": {"jobDesc": "mcp echo, renamed"}})
        out["decideBadNode"] = await call(s, "decide_workflow_approval", {**gate, "node": "../../jobs/1"})
        out["decide"] = await call(s, "decide_workflow_approval", gate)

    async def as_runner(s):
        out["runUpdate"] = await call(s, "update_job", {"id": job_id, "changes": {"author": "x"}})
        out["runDecide"] = await call(s, "decide_workflow_approval", {**gate, "approve": False})
        # A run token runs the job as its writer set it up: no parameter of its own (review N3).
        out["runParam"] = await call(s, "trigger_job", {"id": job_id, "param": "sh -c 'touch /tmp/x'"})
        out["trigger"] = await call(s, "trigger_job", {"id": job_id})
        for _ in range(100):
            runs = await call(s, "list_runs", {"jobId": job_id})
            items = json.loads(runs["text"])["items"] if not runs["isError"] else []
            done = [r for r in items if r.get("handleCode") == 200]
            if done:
                break
            await asyncio.sleep(0.2)
        out["runs"] = runs
        log_id = done[0]["id"] if done else items[0]["id"]
        first = await call(s, "read_run_log", {"runId": log_id})
        out["log"] = first
        if not first["isError"]:
            next_line = json.loads(first["text"])["nextLine"]
            out["logAgain"] = await call(s, "read_run_log", {"runId": log_id, "fromLine": next_line})
        # A BEAN run has no flight record to replay; the refusal says so.
        out["replayBean"] = await call(s, "replay_run", {"runId": log_id})
        # A BEAN job has no module versions to try.
        out["whatIfBean"] = await call(s, "what_if_version", {"jobId": job_id, "version": 1, "runs": 2})
        # The executor ships its lines (--job-logs both): the admin's copy is searched.
        for _ in range(100):
            found = await call(s, "search_job_logs", {"jobId": job_id, "text": "ECHO"})
            if not found["isError"] and json.loads(found["text"])["matches"]:
                break
            await asyncio.sleep(0.2)
        out["logSearch"] = found
        out["report"] = await call(s, "lateness_report", {})
        out["dashboard"] = await call(s, "dashboard", {})
        # A backfill over three past days, run by the real executor, followed to its end.
        started = await call(s, "start_backfill", backfill)
        out["backfill"] = started
        if not started["isError"]:
            backfill_id = json.loads(started["text"])["id"]
            for _ in range(150):
                progress = await call(s, "get_backfill", {"id": backfill_id})
                if not progress["isError"] and json.loads(progress["text"])["status"] != "RUNNING":
                    break
                await asyncio.sleep(0.2)
            out["backfillDone"] = progress

    await with_session(url, read_token, as_reader)
    await with_session(url, write_token, as_writer)
    await with_session(url, run_token, as_runner)
    print(json.dumps(out))


asyncio.run(main())
