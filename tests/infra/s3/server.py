"""An S3-compatible server for the object-storage tests: moto's server (tests/infra/s3/build.sh), in memory.

One per test session, started only when a test asks for it (the ``s3_server``
fixture). ``endpoint`` is what Hadoop's S3A connector is pointed at
(``fs.s3a.endpoint``, with path-style access); any access key is accepted.
Bound to one address: 127.0.0.1 for this machine's processes, or the address
pods reach the host on for the Kubernetes tests.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import requests

from tests.infra.hadoop import processes

HERE = Path(__file__).resolve().parent
ACCESS_KEY = "jobcluster-test"
SECRET_KEY = "jobcluster-test-secret"
REGION = "us-east-1"
START_TIMEOUT = 60.0  # seconds for the server to answer


class S3ServerError(RuntimeError):
    """The server could not be built or started; the message carries the end of its log."""


def build() -> Path:
    """The ``moto_server`` executable, installed by build.sh when the cache lacks it."""
    done = subprocess.run(["bash", str(HERE / "build.sh")], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise S3ServerError(f"tests/infra/s3/build.sh failed:\n{done.stderr[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


class S3Server:
    """moto's S3 server on ``host``; ``start()``, ``create_bucket()``, ``stop()`` (or ``with``)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.base = Path(tempfile.mkdtemp(prefix="jobcluster-s3-"))
        self.port = 0
        self._proc: subprocess.Popen | None = None
        # moto refuses anonymous reads of objects (S3's default private ACL) and checks no signature: the test's
        # own requests name the access key in an unsigned Authorization header
        self.http = requests.Session()
        self.http.headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20260101/{REGION}/s3/aws4_request, SignedHeaders=host, Signature=0"
        )

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def hadoop_options(self) -> dict[str, str]:
        """The S3A settings a job needs for this server (``-D KEY=VALUE``); the keys go by the environment."""
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.endpoint.region": REGION,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        }

    @staticmethod
    def credentials_env() -> dict[str, str]:
        """The credentials as S3A's default chain reads them from the environment."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def start(self) -> S3Server:
        with socket.socket() as s:
            s.bind((self.host, 0))
            self.port = s.getsockname()[1]
        self._proc = processes.spawn(
            [str(build()), "-H", self.host, "-p", str(self.port)],
            env={"PATH": "/usr/bin:/bin"},
            log_path=self.base / "moto.log",
            cwd=self.base,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                requests.get(self.endpoint, timeout=2)
                return self
            except requests.ConnectionError:
                time.sleep(0.3)
        log = processes.tail(self.base / "moto.log")
        self.stop()
        raise S3ServerError(f"moto's S3 server did not answer on {self.endpoint}:\n{log}")

    def create_bucket(self, name: str) -> str:
        """Create bucket ``name``; returns ``s3a://name``."""
        response = self.http.put(f"{self.endpoint}/{name}", timeout=10)
        response.raise_for_status()
        return f"s3a://{name}"

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """The keys of ``bucket`` under ``prefix`` (one ListObjectsV2 page: the tests' buckets are small)."""
        response = self.http.get(f"{self.endpoint}/{bucket}", params={"list-type": "2", "prefix": prefix, "max-keys": "10000"}, timeout=10)
        response.raise_for_status()
        root = ElementTree.fromstring(response.content)
        return [el.text or "" for el in root.iter() if el.tag.endswith("}Key") or el.tag == "Key"]

    def put_text(self, bucket: str, key: str, text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.http.put(f"{self.endpoint}/{bucket}/{key}", data=data, timeout=10).raise_for_status()

    def read_text(self, bucket: str, key: str) -> str:
        response = self.http.get(f"{self.endpoint}/{bucket}/{key}", timeout=10)
        response.raise_for_status()
        return response.text

    def last_modified(self, bucket: str, key: str) -> str:
        """The object's Last-Modified header (HTTP date, second precision)."""
        response = self.http.head(f"{self.endpoint}/{bucket}/{key}", timeout=10)
        response.raise_for_status()
        return response.headers["Last-Modified"]

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            processes.terminate([proc], timeout=10)
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
