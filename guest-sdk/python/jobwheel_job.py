"""jobwheel guest SDK for Python components (componentize-py): the run's inputs, its result
message and, for a workflow node, the instance's context and the node's output.

Everything here is the plain ABI of docs/guest-abi.md (environment variables and marker lines on
stdout), so a job that does not import this module can do the same by hand. Build a job with
this directory on the module path:

    componentize-py -d wit -w jobwheel:job/job componentize -p . -p guest-sdk/python app -o app.wasm
"""

import json
from typing import Any

from wit_world.imports import environment

RESULT_MARKER = "::jobwheel-result::"
OUTPUT_MARKER = "::jobwheel-output::"
MAX_OUTPUT_BYTES = 64 * 1024
# Bytes of output per marker line: well under the runtime's line limit (8 KiB by default).
_PIECE = 4000


def env() -> dict[str, str]:
    """The run's environment: the JOBWHEEL_* inputs plus the job's variables and secrets."""
    return dict(environment.get_environment())


def param() -> str:
    """The job parameter (xxl-job executorParams), "" when none was given."""
    return env().get("JOBWHEEL_PARAM", "")


def fire_key() -> str:
    """The fire's key: the same when the same fire is delivered again (a job's scheduled second
    and shard, or one workflow node run), different for a retry, a manual run or any other fire
    of its own. Key side effects on it to do them once (docs/engine.md, "The per-fire key")."""
    vars = env()
    return vars.get("JOBWHEEL_FIRE_KEY") or f"log:{vars.get('JOBWHEEL_LOG_ID', '0')}"


def scheduled_time() -> int:
    """When the fire was scheduled for, epoch ms (the trigger time of a fire no schedule made;
    0 outside jobwheel)."""
    return int(env().get("JOBWHEEL_SCHEDULED_TIME", "0"))


def workflow_context() -> dict[str, Any] | None:
    """The workflow instance's context when this run is a workflow node: the start input and each
    finished node's output under the node's name. None outside a workflow."""
    text = env().get("JOBWHEEL_WORKFLOW_CONTEXT")
    return None if text is None else json.loads(text)


def workflow_item() -> Any:
    """The item this run is for when it is one item of a workflow map node (one element of the
    array the node maps over, any JSON value); None otherwise. An item's run gets no context."""
    text = env().get("JOBWHEEL_WORKFLOW_ITEM")
    return None if text is None else json.loads(text)


def set_output(value: Any) -> None:
    """Sets this run's workflow output (anything json.dumps takes). When the run succeeds it is
    merged into the context under the node's name and handed to the nodes after it. At most
    MAX_OUTPUT_BYTES of JSON, or the run fails. Call it once."""
    # ASCII-only JSON: a piece of it is never a split character.
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=True)
    for start in range(0, len(text), _PIECE):
        print(f"{OUTPUT_MARKER}{text[start:start + _PIECE]}")


def report(message: str) -> None:
    """Adds a line to the run's result message (the trigger's handle message)."""
    for line in message.splitlines() or [""]:
        print(f"{RESULT_MARKER}{line}")
