"""``python -m jobcluster.spark.driver_agent PROGRAM [ARGS...]``: run PROGRAM with the driver agent installed.

The program runs as ``python PROGRAM ARGS`` runs it: as ``__main__``, with
``sys.argv`` = [PROGRAM, ARGS...], its own directory first on ``sys.path``, its
exit code (``sys.exit``) as the process's, and an uncaught exception's
traceback on stderr from the program's own frames on (exit code 1; a restore
that would drop a savepoint's query, or a checkpoint another driver holds:
EXIT_NOT_RESTARTABLE).
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
import traceback

from jobcluster.spark.driver_agent.agent import DriverAgent, NonRestoredStateError
from jobcluster.spark.driver_agent.checkpoint_lease import CheckpointLeaseError
from jobcluster.spark.driver_agent.delegation_tokens import watch_token_file
from jobcluster.spark.driver_agent.endpoint import serve_in_thread
from jobcluster.spark.driver_agent.pyspark_hooks import install
from jobcluster.spark.driver_agent.settings import EXIT_NOT_RESTARTABLE, AgentSettings


def _program_traceback(exc: BaseException, program: str) -> None:
    """Print ``exc`` as the interpreter would for ``python PROGRAM``: without this module's and runpy's frames."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != program:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)  # no frame of the program (a SyntaxError in it): the error alone


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m jobcluster.spark.driver_agent PROGRAM [ARGS...]")
    settings, secret = AgentSettings.take_from(os.environ)
    agent = DriverAgent(settings)
    install(agent)
    serve_in_thread(agent, secret)
    tokens = watch_token_file()  # new Hadoop delegation tokens reach the running driver and its executors (YARN with a keytab)
    if tokens is not None:
        atexit.register(tokens.stop)
    atexit.register(agent.release_leases)  # after the hold below: a savepoint's copy still reads the checkpoints
    atexit.register(agent.after_await)  # a program that ends without waiting for its queries is held as well
    program = os.path.abspath(sys.argv[1])
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(program)
    try:
        runpy.run_path(program, run_name="__main__")
    except NonRestoredStateError as exc:  # not the program's fault, and a restart cannot help: the JobMaster does not restart
        _program_traceback(exc, program)
        sys.exit(EXIT_NOT_RESTARTABLE)
    except CheckpointLeaseError as exc:  # another driver writes the checkpoint: a restart would be refused too
        _program_traceback(exc, program)
        sys.exit(1 if exc.restartable else EXIT_NOT_RESTARTABLE)
    except Exception as exc:  # noqa: BLE001 - the program's own error: reported as Python reports it, exit code 1
        _program_traceback(exc, program)
        sys.exit(1)


main()
