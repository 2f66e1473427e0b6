"""The node agent: one Node, a pod worker per pod bound to it, and an orderly stop.

Why: this is where the parts meet. It registers the Node and starts the three
background loops (Lease heartbeat, orphan reaper, pod watch), keeps the map
from pod UID to PodWorker that the watch feeds, hands out pod IPs, and on stop
kills every pod process (the pods stay in the API: the cluster is going away).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import psutil

from tests.infra.k8s.node_agent.addresses import DEFAULT_POD_CIDR, PodAddresses
from tests.infra.k8s.node_agent.apiserver import ApiServer
from tests.infra.k8s.node_agent.pod_watch import watch_pods
from tests.infra.k8s.node_agent.pod_worker import PodWorker
from tests.infra.k8s.node_agent.processes import ProcessTable, become_child_subreaper, kill_processes
from tests.infra.k8s.node_agent.registration import NodeRegistration, machine_capacity

log = logging.getLogger("node-agent")


class NodeAgent:
    def __init__(
        self,
        kubeconfig: str,
        node_name: str,
        work_dir: Path,
        cpu: str | None = None,
        memory: str | None = None,
        max_pods: int = 110,
        pod_cidr: str = DEFAULT_POD_CIDR,
    ) -> None:
        self.node_name = node_name
        self.addresses = PodAddresses(pod_cidr)
        self.work_dir = work_dir
        self.stopping = threading.Event()
        self.procs = ProcessTable()
        self.workers: dict[str, PodWorker] = {}
        self.workers_lock = threading.Lock()
        self.apiserver = ApiServer(kubeconfig)
        self.capacity = machine_capacity(work_dir, cpu, memory, max_pods)
        self.allocatable = dict(self.capacity)
        self.registration = NodeRegistration(self.apiserver, node_name, self.capacity, self.allocatable, self.stopping)

    def allocate_ip(self, uid: str) -> str:
        return self.addresses.allocate(uid)

    def worker_done(self, worker: PodWorker) -> None:
        with self.workers_lock:
            if self.workers.get(worker.uid) is worker:
                del self.workers[worker.uid]
        self.addresses.release(worker.uid)

    # -- pods
    def handle(self, event_type: str, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        with self.workers_lock:
            worker = self.workers.get(uid)
            if event_type == "DELETED":
                if worker:
                    worker.removed()
                return
            if worker is None:
                if self.stopping.is_set():
                    return
                worker = PodWorker(self, pod)
                self.workers[uid] = worker
                worker.start()
            else:
                worker.update(pod)

    def relisted(self, seen: set[str]) -> None:
        """After a fresh listing: the pods not in it are gone."""
        with self.workers_lock:
            vanished = [w for uid, w in self.workers.items() if uid not in seen]
        for w in vanished:
            w.removed()

    def watch_loop(self) -> None:
        watch_pods(self.apiserver.core, self.node_name, self.stopping, self.handle, self.relisted)

    def heartbeat_loop(self) -> None:
        self.registration.heartbeat_loop()

    def reaper_loop(self) -> None:
        while not self.stopping.wait(1.0):
            self.procs.reap_orphans()

    # -- lifecycle
    def run(self) -> None:
        become_child_subreaper()
        self.registration.register()
        for target in (self.heartbeat_loop, self.reaper_loop, self.watch_loop):
            threading.Thread(target=target, name=target.__name__, daemon=True).start()
        self.stopping.wait()
        self.shutdown()

    def shutdown(self) -> None:
        """Kill every pod process (pods stay in the API: the cluster is going away)."""
        self.stopping.set()
        with self.workers_lock:
            workers = list(self.workers.values())
        for w in workers:
            w.wake.set()
        deadline = time.monotonic() + 15
        for w in workers:
            w.join(timeout=max(0.1, deadline - time.monotonic()))
        try:
            leftovers = psutil.Process().children(recursive=True)
        except psutil.Error:
            leftovers = []
        kill_processes(leftovers, grace=2)
        log.info("node agent stopped")
