// workflow-step in JavaScript (componentize-js): a workflow node that counts the rows the node
// named in the parameter (default "extract") output, and outputs {"count": ..., "of": <node>,
// "fire": <its fire key>} for the nodes after it; as one item of a map node, {"item": <item>,
// "by": "js", "fire": <its fire key>}. Uses the JavaScript guest SDK (guest-sdk/js/jobwheel-job.js).
//
// Build (from the repository's root, so the SDK's file is below it):
//   npx componentize-js --wit wit --world-name jobwheel:job/job -o workflow-step.wasm sample-jobs/components/js/workflow-step.js
import { fireKey, param, report, setOutput, workflowContext, workflowItem } from "../../../guest-sdk/js/jobwheel-job.js";

export const run = {
  async run() {
    const item = workflowItem();
    if (item !== undefined) {
      setOutput({ item, by: "js", fire: fireKey() });
      report(`item ${JSON.stringify(item)}`);
      return;
    }
    const context = workflowContext();
    if (context === null) {
      console.error("not a workflow node: no workflow context");
      throw new Error("no workflow context");
    }
    const source = param() || "extract";
    const rows = context[source]?.rows;
    if (!Array.isArray(rows)) {
      console.error(`the context has no rows from ${source}`);
      throw new Error("no rows");
    }
    console.log(`${rows.length} rows from ${source}`);
    setOutput({ count: rows.length, of: source, fire: fireKey() });
    report(`count ${rows.length}`);
  },
};
