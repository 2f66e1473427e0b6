"""Apache Flink's own client (CLI and RestClusterClient) run against a jobcluster REST API.

Why: jobcluster promises that the tools Flink users already have work against
its job clusters, so tests run Flink's real ``CliFrontend`` and
``RestClusterClient`` (each release of ``versions``: Flink 1.20 and 2.3, resolved
by ``build.sh`` from Maven Central) rather than checking bodies against what we
believe Flink reads.

``RestClientProbe.java`` (next to this file) reads things through
``RestClusterClient`` and prints them as ``key value`` lines; it is compiled
once per :class:`FlinkClient`, against that client's release.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
PROBE_SOURCE = HERE / "RestClientProbe.java"
CLI_MAIN = "org.apache.flink.client.cli.CliFrontend"
#: The Flink releases whose client is tested, oldest first (``versions``, which build.sh resolves too).
VERSIONS: tuple[str, ...] = tuple(
    line.strip() for line in (HERE / "versions").read_text().splitlines() if line.strip() and not line.startswith("#")
)
DEFAULT_VERSION = VERSIONS[0]
#: Each CLI command and probe is a short JVM: C1 only and the serial collector about halve its start (CPU and wall time).
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def build_classpath(version: str = DEFAULT_VERSION, timeout: float = 900.0) -> str:
    """Run build.sh for ``version`` (a no-op once its cache is complete) and return that Flink client's classpath."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT), version], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT} {version} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1]).read_text().strip()


class FlinkClient:
    """Flink's client on ``classpath`` (release ``version``), with an empty Flink configuration directory of its own."""

    def __init__(self, classpath: str, version: str = DEFAULT_VERSION) -> None:
        self.version = version
        self.major = int(version.split(".")[0])
        self._tmp = tempfile.TemporaryDirectory(prefix="flink-client-")
        root = Path(self._tmp.name)
        self.conf_dir = root / "conf"
        self.conf_dir.mkdir()
        (self.conf_dir / "config.yaml").write_text("")  # Flink's CLI requires a configuration file; defaults suffice
        self._classes = root / "classes"
        javac = ["javac", *(f"-J{option}" for option in JVM_OPTIONS), "-cp", classpath, "-d", str(self._classes)]
        subprocess.run([*javac, str(PROBE_SOURCE)], check=True, timeout=120)
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
        command = ["java", *JVM_OPTIONS, "-cp", self.classpath, CLI_MAIN, action, "-m", address, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)

    def probe(self, rest_url: str, what: str | Sequence[str], job_id: str | None = None, timeout: float = 120) -> dict[str, str]:
        """What ``RestClusterClient`` reads (``status``, ``details``, ``result``, ``overview``, ``config``,
        ``taskmanagers``; several in one JVM when ``what`` is a sequence) as one dict.

        Raises AssertionError with Flink's output when the client fails (e.g. cannot deserialize a body).
        """
        url = urlsplit(rest_url)
        what = ",".join([what] if isinstance(what, str) else what)
        classpath = f"{self._classes}:{self.classpath}"
        command = ["java", *JVM_OPTIONS, "-cp", classpath, "RestClientProbe", str(url.hostname), str(url.port), what]
        done = subprocess.run([*command, *([job_id] if job_id else [])], capture_output=True, text=True, timeout=timeout)
        failed = f"Flink {self.version}'s RestClusterClient failed to read {what}"
        assert done.returncode == 0, f"{failed}:\n{done.stdout}\n{done.stderr[-4000:]}"
        return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)

    def __repr__(self) -> str:
        return f"FlinkClient({self.version})"
