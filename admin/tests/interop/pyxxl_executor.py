"""A pyxxl (third-party Python xxl-job executor, from PyPI) executor for jobwheel's interop tests.

Configuration comes from the environment so the Rust test that spawns it controls everything:
  PYXXL_ADMIN_URL   admin API base, e.g. http://127.0.0.1:8080/api/
  PYXXL_APP_NAME    executor group name
  PYXXL_PORT        port to listen on (127.0.0.1)
  PYXXL_TOKEN       access token
  PYXXL_LOG_DIR     directory for pyxxl's task logs

Handlers: `pyHello` (logs its parameter, succeeds), `pyFail` (raises), `pySleep` (sleeps for
the parameter's seconds; used to test kill).
"""

import asyncio
import os

from pyxxl import ExecutorConfig, PyxxlRunner
from pyxxl.ctx import g
from pyxxl.executor import JobHandler

handler = JobHandler()


@handler.register(name="pyHello")
async def py_hello() -> str:
    param = g.xxl_run_data.executorParams
    g.logger.info("pyxxl says hello to %s", param)
    return f"pyxxl hello {param}"


@handler.register(name="pyFail")
async def py_fail() -> None:
    g.logger.info("pyxxl is about to fail")
    raise RuntimeError("pyxxl failure on purpose")


@handler.register(name="pySleep")
async def py_sleep() -> str:
    seconds = float(g.xxl_run_data.executorParams or "60")
    g.logger.info("pyxxl sleeping %s s", seconds)
    await asyncio.sleep(seconds)
    return "woke up"


def main() -> None:
    port = int(os.environ["PYXXL_PORT"])
    config = ExecutorConfig(
        xxl_admin_baseurl=os.environ["PYXXL_ADMIN_URL"],
        executor_app_name=os.environ["PYXXL_APP_NAME"],
        access_token=os.environ["PYXXL_TOKEN"],
        executor_listen_host="127.0.0.1",
        executor_listen_port=port,
        executor_url=f"http://127.0.0.1:{port}",
        log_local_dir=os.environ.get("PYXXL_LOG_DIR", "logs"),
        dotenv_try=False,
    )
    PyxxlRunner(config, handler=handler).run_executor()


if __name__ == "__main__":
    main()
