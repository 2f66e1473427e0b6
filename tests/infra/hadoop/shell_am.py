"""A minimal YARN ApplicationMaster: register, run one command, unregister.

Why: YARN only reports an application FINISHED/SUCCEEDED when its
ApplicationMaster registers with the ResourceManager and unregisters with
that final status. An AM container that just runs a shell command and exits
ends FAILED ("AM container exited without unregistering"). This AM runs the
command in between, through the same py4j gateway (AMRMClient from pyspark's
Hadoop client jars) that jobcluster's YARN backend uses, so it also proves
that gateway works inside a container.

Final status: SUCCEEDED if the command exits 0, else FAILED (the exit code in
the diagnostics). The AM exits with the command's exit status.

Runs inside a YARN container, which provides:
  HADOOP_CONF_DIR              set by the submitter: where the RM scheduler is
  HADOOP_TOKEN_FILE_LOCATION   set by the NodeManager: the AMRM token
  LOG_DIRS                     set by the NodeManager: the container's log dirs

Usage (as the AM command of a ContainerLaunchContext)::

    python shell_am.py [--timeout SECONDS] -- /bin/sh -c 'echo ok > /tmp/marker'
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from jobcluster.backends.yarn.gateway import JvmGateway


def run(command: list[str], timeout: float) -> tuple[int, str]:
    try:
        rc = subprocess.run(command, stdin=subprocess.DEVNULL, timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        return 124, f"command timed out after {timeout:.0f} s: {command}"
    except OSError as e:
        return 127, f"command could not be started: {e}"
    return rc, f"command exited with code {rc}: {command}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds the command may run")
    parser.add_argument("command", nargs="+", help="the command, after --")
    args = parser.parse_args(argv)

    conf_dir = os.environ.get("HADOOP_CONF_DIR")
    if not conf_dir:
        print("shell_am: HADOOP_CONF_DIR is not set", file=sys.stderr)
        return 2
    log_dir = Path((os.environ.get("LOG_DIRS") or ".").split(",")[0])

    with JvmGateway(conf_dir, log_file=log_dir / "gateway.log") as gw:
        jvm = gw.jvm
        final = jvm.org.apache.hadoop.yarn.api.records.FinalApplicationStatus
        amrm = jvm.org.apache.hadoop.yarn.client.api.AMRMClient.createAMRMClient()
        amrm.init(jvm.org.apache.hadoop.yarn.conf.YarnConfiguration())
        amrm.start()
        try:
            amrm.registerApplicationMaster("127.0.0.1", 0, "")
            print("shell_am: registered; running", args.command, flush=True)
            rc, diagnostics = run(args.command, args.timeout)
            print("shell_am:", diagnostics, flush=True)
            amrm.unregisterApplicationMaster(final.SUCCEEDED if rc == 0 else final.FAILED, diagnostics, None)
            print("shell_am: unregistered", flush=True)
        finally:
            amrm.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
