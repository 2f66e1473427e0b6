"""Apache Flink's own client (CLI and RestClusterClient) run against a jobcluster REST API.

Why: jobcluster promises that the tools Flink users already have work against
its job clusters, so tests run Flink's real ``CliFrontend`` and
``RestClusterClient`` (Flink 1.20, resolved by ``build.sh`` from Maven
Central) rather than checking bodies against what we believe Flink reads.

``RestClientProbe.java`` (next to this file) reads one thing through
``RestClusterClient`` and prints it as ``key value`` lines; it is compiled once
per :class:`FlinkClient`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
PROBE_SOURCE = HERE / "RestClientProbe.java"
CLI_MAIN = "org.apache.flink.client.cli.CliFrontend"


def build_classpath(timeout: float = 900.0) -> str:
    """Run build.sh (a no-op once the cache is complete) and return Flink's client classpath."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1]).read_text().strip()


class FlinkClient:
    """Flink's client on ``classpath``, with an empty Flink configuration directory of its own."""

    def __init__(self, classpath: str) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="flink-client-")
        root = Path(self._tmp.name)
        self.conf_dir = root / "conf"
        self.conf_dir.mkdir()
        (self.conf_dir / "config.yaml").write_text("")  # Flink's CLI requires a configuration file; defaults suffice
        self._classes = root / "classes"
        subprocess.run(["javac", "-cp", classpath, "-d", str(self._classes), str(PROBE_SOURCE)], check=True, timeout=120)
        self.classpath = classpath

    def close(self) -> None:
        self._tmp.cleanup()

    def cli(self, rest_url: str, action: str, *args: str, token: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """``flink <action> -m HOST:PORT <args>``; with ``token``, Flink sends it through ``FLINK_REST_CLIENT_HEADERS``."""
        address = urlsplit(rest_url).netloc
        env = {**os.environ, "FLINK_CONF_DIR": str(self.conf_dir)}
        env.pop("FLINK_REST_CLIENT_HEADERS", None)
        if token is not None:
            env["FLINK_REST_CLIENT_HEADERS"] = f"Authorization:Bearer {token}"
        command = ["java", "-cp", self.classpath, CLI_MAIN, action, "-m", address, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)

    def probe(self, rest_url: str, what: str, job_id: str | None = None, timeout: float = 120) -> dict[str, str]:
        """What ``RestClusterClient`` reads (``status``, ``details``, ``result``, ``overview``, ``config``) as a dict.

        Raises AssertionError with Flink's output when the client fails (e.g. cannot deserialize a body).
        """
        url = urlsplit(rest_url)
        command = ["java", "-cp", f"{self._classes}:{self.classpath}", "RestClientProbe", str(url.hostname), str(url.port), what]
        done = subprocess.run([*command, *([job_id] if job_id else [])], capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"Flink's RestClusterClient failed to read {what}:\n{done.stdout}\n{done.stderr[-4000:]}"
        return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
