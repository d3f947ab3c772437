// jobwheel guest SDK for JavaScript components (componentize-js): the run's inputs, its result
// message and, for a workflow node, the instance's context and the node's output.
//
// Everything here is the plain ABI of docs/guest-abi.md (environment variables and marker lines
// on stdout). Import it from your job by a relative path; componentize-js loads imported modules
// only from below the directory it runs in, so run it from one that holds both files:
//
//   componentize-js --wit wit --world-name jobwheel:job/job -o job.wasm jobs/job.js
import { getEnvironment } from "wasi:cli/environment@0.2.12";

export const RESULT_MARKER = "::jobwheel-result::";
export const OUTPUT_MARKER = "::jobwheel-output::";
export const MAX_OUTPUT_BYTES = 64 * 1024;
// Bytes of output per marker line: well under the runtime's line limit (8 KiB by default).
const PIECE = 4000;

/** The run's environment: the JOBWHEEL_* inputs plus the job's variables and secrets. */
export function env() {
  return Object.fromEntries(getEnvironment());
}

/** The job parameter (xxl-job executorParams), "" when none was given. */
export function param() {
  return env().JOBWHEEL_PARAM ?? "";
}

/**
 * The fire's key: the same when the same fire is delivered again (a job's scheduled second and
 * shard, or one workflow node run), different for a retry, a manual run or any other fire of
 * its own. Key side effects on it to do them once (docs/engine.md, "The per-fire key").
 */
export function fireKey() {
  const vars = env();
  return vars.JOBWHEEL_FIRE_KEY ?? `log:${vars.JOBWHEEL_LOG_ID ?? "0"}`;
}

/** When the fire was scheduled for, epoch ms (0 outside jobwheel). */
export function scheduledTime() {
  return Number(env().JOBWHEEL_SCHEDULED_TIME ?? "0");
}

/** The workflow instance's context when this run is a workflow node, else null. */
export function workflowContext() {
  const text = env().JOBWHEEL_WORKFLOW_CONTEXT;
  return text === undefined ? null : JSON.parse(text);
}

/**
 * The item this run is for when it is one item of a workflow map node (any JSON value), else
 * undefined. An item's run gets no context.
 */
export function workflowItem() {
  const text = env().JOBWHEEL_WORKFLOW_ITEM;
  return text === undefined ? undefined : JSON.parse(text);
}

/** Sets this run's workflow output (anything JSON.stringify takes); call it once. */
export function setOutput(value) {
  // ASCII-only JSON: a piece of it is never a split character.
  const text = JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"),
  );
  for (let start = 0; start < text.length; start += PIECE) {
    console.log(OUTPUT_MARKER + text.slice(start, start + PIECE));
  }
}

/** Adds a line to the run's result message (the trigger's handle message). */
export function report(message) {
  for (const line of String(message).split("\n")) {
    console.log(RESULT_MARKER + line);
  }
}
