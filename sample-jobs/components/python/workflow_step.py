"""workflow-step in Python (componentize-py): a workflow node that adds up the rows the node named
in the parameter (default "extract") output, and outputs {"sum": ..., "of": <node>, "fire": <its
fire key>} for the nodes after it; as one item of a map node, {"item": <item>, "by": "python",
"fire": <its fire key>}. Uses the Python guest SDK (guest-sdk/python/jobwheel_job.py).

Build: componentize-py -d ../../../wit -w jobwheel:job/job componentize -p . -p ../../../guest-sdk/python \
    workflow_step -o workflow-step.wasm
"""

import sys

import jobwheel_job as job
from componentize_py_types import Err
from wit_world import exports


class Run(exports.Run):
    def run(self) -> None:
        item = job.workflow_item()
        if item is not None:
            job.set_output({"item": item, "by": "python", "fire": job.fire_key()})
            job.report(f"item {item}")
            return
        context = job.workflow_context()
        if context is None:
            print("not a workflow node: no workflow context", file=sys.stderr)
            raise Err(None)
        source = job.param() or "extract"
        rows = (context.get(source) or {}).get("rows")
        if not isinstance(rows, list):
            print(f"the context has no rows from {source!r}", file=sys.stderr)
            raise Err(None)
        total = sum(rows)
        print(f"{len(rows)} rows from {source}, sum {total}")
        job.set_output({"sum": total, "of": source, "fire": job.fire_key()})
        job.report(f"sum {total}")
