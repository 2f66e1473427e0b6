"""What the JobMaster tells the driver agent, through the program's environment.

The settings travel as one JSON variable; the agent's secret (a fresh one per
attempt, never the cluster's) in another, which the agent takes out of the
environment before the program starts, so the program's own children never see it.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from dataclasses import asdict, dataclass

ENV_SETTINGS = "JOBCLUSTER_DRIVER_AGENT"
ENV_SECRET = "JOBCLUSTER_DRIVER_AGENT_SECRET"
#: The agent's endpoint id in its RpcService.
AGENT_ENDPOINT = "driver-agent"
#: The program's exit code when it failed in a way a restart cannot change (a restore that would drop a savepoint's
#: query): the JobMaster does not restart it (sysexits' EX_CONFIG).
EXIT_NOT_RESTARTABLE = 78
#: The address the agent binds: the JobMaster runs it as its child, in the same container.
AGENT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class AgentSettings:
    """The agent's port (on :data:`AGENT_HOST`), the job, its checkpoint root and what to restore.

    ``checkpoint_root``: ``<execution.checkpointing.dir>/<job-id>`` (a path or a Hadoop URI), None when no
    checkpoint directory is configured; ``restore_path``: the savepoint to start from (``-s``), with
    ``allow_non_restored_state`` (``--allowNonRestoredState``); ``lease_holder``: the JobMaster's name in the leases
    on checkpoint locations (each attempt of its program takes over its own at once; empty: the attempt's own);
    ``parallelism``: the job's, which its savepoints record (None: not said).
    """

    port: int
    job_id: str
    job_name: str
    checkpoint_root: str | None
    restore_path: str | None = None
    allow_non_restored_state: bool = False
    lease_holder: str = ""
    parallelism: int | None = None

    @property
    def address(self) -> str:
        return f"http://{AGENT_HOST}:{self.port}"

    def environment(self, secret: str) -> dict[str, str]:
        """The program's environment variables that carry these settings and the agent's ``secret``."""
        return {ENV_SETTINGS: json.dumps(asdict(self)), ENV_SECRET: secret}

    @classmethod
    def take_from(cls, env: MutableMapping[str, str]) -> tuple[AgentSettings, str]:
        """``(settings, secret)`` read from ``env`` and removed from it; KeyError/ValueError when not there or malformed."""
        settings = cls(**json.loads(env.pop(ENV_SETTINGS)))
        return settings, env.pop(ENV_SECRET)
