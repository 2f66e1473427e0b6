"""Submitting an ApplicationMaster with staged files, all or nothing.

The sequence of Flink's ``YarnClusterDescriptor.startAppMaster``: create the
application, stage its files under ``.jobcluster/<application id>/``,
submit the ApplicationMaster container with them as LocalResources, and
follow the ApplicationReport until the caller's condition (for a job
cluster: RUNNING, with the REST address registered). If anything fails on
the way, or the user interrupts, the application is killed and the staging
directory removed before the error propagates (Flink's
``DeploymentFailureHook``), so a failed deployment leaves nothing running
and nothing staged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.errors import StagingError, YarnClientError
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory
from jobcluster.backends.yarn.validation import YarnClusterResources
from jobcluster.backends.yarn.yarn_client import ApplicationMasterSpec, ApplicationReport, NewApplication, follow_reports


class ResourceManagerClient(Protocol):
    """What a client does with the ResourceManager: Hadoop RPC's ``yarn_client.YarnClient`` or the REST API's
    ``rm_rest.ResourceManagerRest``; each raises YarnClientError."""

    resourcemanager_address: str

    def create_application(self) -> NewApplication: ...

    def cluster_resources(self, maximum: ContainerResource) -> YarnClusterResources: ...

    def submit(self, application: NewApplication, spec: ApplicationMasterSpec) -> None: ...

    def report(self, application_id: str) -> ApplicationReport: ...

    def kill(self, application_id: str) -> None: ...

    def applications(self, application_types: Iterable[str], states: Iterable[str] = ...) -> list[ApplicationReport]: ...

    def close(self) -> None: ...


SpecBuilder = Callable[[NewApplication, StagingDirectory], ApplicationMasterSpec]
"""Stages the application's files into the directory and returns the ApplicationMaster to submit."""


@dataclass(frozen=True)
class SubmittedApplication:
    """An application that reached the caller's condition, and its staging directory (still there)."""

    report: ApplicationReport
    staging: StagingDirectory


def is_deployed(report: ApplicationReport) -> bool:
    """Flink's end of deployment: RUNNING (the ApplicationMaster registered), or already FINISHED
    (a quick job; its own final status tells how it went). FAILED or KILLED before that is an error."""
    return report.state in ("RUNNING", "FINISHED")


def submit_application_master(
    client: ResourceManagerClient,
    paths: HdfsPaths,
    staging_directory: str | None,
    build: SpecBuilder,
    until: Callable[[ApplicationReport], bool] = is_deployed,
    on_change: Callable[[ApplicationReport], None] | None = None,
    timeout: float | None = None,
) -> SubmittedApplication:
    """Create, stage, submit and follow an application until ``until(report)``.

    Raises:
        YarnClientError, StagingError, or whatever ``build`` raises: after the application was killed
            and its staging directory removed (a failure of that cleanup is added as a note).
    """
    application = client.create_application()
    staging: StagingDirectory | None = None
    submitted = False
    try:
        staging = StagingDirectory.create(paths, staging_directory, application.application_id)
        spec = build(application, staging)
        submitted = True  # from here on the ResourceManager may know it, even if submit() raises
        client.submit(application, spec)
        report = follow_reports(lambda: client.report(application.application_id), until, on_change, timeout)
    except BaseException as error:
        _clean_up(client, application.application_id if submitted else None, staging, error)
        raise
    return SubmittedApplication(report, staging)


def _clean_up(client: ResourceManagerClient, application_id: str | None, staging: StagingDirectory | None, error: BaseException) -> None:
    """Kill the submitted application (harmless if it has ended) and remove its files."""
    if application_id is not None:
        try:
            client.kill(application_id)
        except YarnClientError as kill_error:
            error.add_note(f"and the YARN application {application_id} could not be killed: {kill_error}")
    if staging is not None:
        try:
            staging.remove()
        except StagingError as remove_error:
            error.add_note(f"and its staging directory was not removed: {remove_error}")
