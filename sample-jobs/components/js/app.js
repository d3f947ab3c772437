// http-check in JavaScript (componentize-js): GET the URL in variable CHECK_URL with the bearer
// token in secret CHECK_TOKEN and report the status; a non-2xx status or a refused request
// fails the run. The same job as sample-jobs/http-check (Rust) and ../python/app.py.
//
// Build: npx componentize-js --wit ../../../wit --world-name jobwheel:job/job -o http-check.wasm app.js
import { getEnvironment } from "wasi:cli/environment@0.2.12";

export const run = {
  // A rejected promise makes wasi:cli/run return its error: exit code 1.
  async run() {
    const env = Object.fromEntries(getEnvironment());
    const url = env.CHECK_URL;
    if (!url) {
      console.error("set the variable CHECK_URL");
      throw new Error("no CHECK_URL");
    }
    const headers = env.CHECK_TOKEN ? { authorization: `Bearer ${env.CHECK_TOKEN}` } : {};
    let response;
    try {
      response = await fetch(url, { headers });
    } catch (error) {
      console.error(`GET ${url} failed: ${error}`);
      throw error;
    }
    const body = await response.text();
    console.log(`GET ${url} -> ${response.status} (${body.length} bytes)`);
    if (!response.ok) {
      console.error(`${url} answered ${response.status}`);
      throw new Error(`status ${response.status}`);
    }
    console.log(`::jobwheel-result::status=${response.status}`);
  },
};
