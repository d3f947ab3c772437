"""http-check in Python (componentize-py): GET the URL in variable CHECK_URL with the bearer
token in secret CHECK_TOKEN and report the status; a non-2xx status or a refused request fails
the run. The same job as sample-jobs/http-check (Rust) and ../js/app.js.

Build: componentize-py -d ../../../wit -w jobwheel:job/job componentize -p . app -o http-check.wasm
"""

import sys
from urllib.parse import urlsplit

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import environment, outgoing_handler, streams
from wit_world.imports import wasi_http_types as http


def get(url: str, token: str | None) -> tuple[int, bytes]:
    """One GET through wasi:http; raises Err with the host's error code if it is refused."""
    parts = urlsplit(url)
    headers = [("accept", b"*/*")]
    if token:
        headers.append(("authorization", f"Bearer {token}".encode()))
    request = http.OutgoingRequest(http.Fields.from_list(headers))
    request.set_scheme(http.Scheme_Https() if parts.scheme == "https" else http.Scheme_Http())
    request.set_authority(parts.netloc)
    request.set_path_with_query((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    pending = outgoing_handler.handle(request, None)
    pending.subscribe().block()
    outcome = pending.get().value  # Ok(response) or Err(error code)
    if isinstance(outcome, Err):
        raise outcome
    response = outcome.value
    body = b""
    incoming = response.consume()
    with incoming.stream() as stream:  # the stream must go before its body
        while True:
            try:
                body += stream.blocking_read(64 * 1024)
            except Err as end:
                if isinstance(end.value, streams.StreamError_Closed):
                    break
                raise
    return response.status(), body


class Run(exports.Run):
    def run(self) -> None:
        env = dict(environment.get_environment())
        url = env.get("CHECK_URL")
        if not url:
            print("set the variable CHECK_URL", file=sys.stderr)
            raise Err(None)
        try:
            status, body = get(url, env.get("CHECK_TOKEN"))
        except Err as refused:
            print(f"GET {url} failed: {refused.value!r}", file=sys.stderr)
            raise Err(None)
        print(f"GET {url} -> {status} ({len(body)} bytes)")
        if not 200 <= status < 300:
            print(f"{url} answered {status}", file=sys.stderr)
            raise Err(None)
        print(f"::jobwheel-result::status={status}")
