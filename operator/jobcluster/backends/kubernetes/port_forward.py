"""A local port that reaches a pod's port through the API server (``pods/portforward``), as ``kubectl port-forward`` does.

Why: a client off the pod network (a laptop; a CI runner outside the cluster)
cannot reach the JobManager pod's IP, but it can reach the API server, which
forwards a stream to any port of a pod for users with ``create`` on
``pods/portforward``.  The official client speaks that protocol (one websocket
per connection, ``kubernetes.stream.portforward``); this module puts a
listening socket on 127.0.0.1 in front of it, so the REST client needs nothing
but a URL.

Each accepted connection opens its own forward and is piped by a thread of its
own; a connection idle for ``IDLE_TIMEOUT`` seconds is closed (the HTTP client
reconnects).  ``close()`` stops accepting and ends the open connections.

``routes_to`` tells whether an address can be reached from here at all: a
refused connection means the network routes (the pod answered, nothing
listens yet), a timeout or an unreachable network means it does not.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import threading
from typing import Any

import kubernetes
from kubernetes.stream import portforward

log = logging.getLogger(__name__)

#: Seconds for the API server to open a forward (the websocket handshake).
CONNECT_TIMEOUT = 10.0
#: Seconds a forwarded connection may stay idle before it is closed.
IDLE_TIMEOUT = 120.0
#: Seconds ``routes_to`` waits for a TCP handshake.
ROUTE_PROBE_TIMEOUT = 3.0
_UNROUTED = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ETIMEDOUT}


def routes_to(host: str, port: int, timeout: float = ROUTE_PROBE_TIMEOUT) -> bool:
    """Whether a TCP connection to ``host:port`` gets an answer (accepted or refused) within ``timeout`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except ConnectionRefusedError:
        return True
    except TimeoutError:
        return False
    except OSError as exc:
        return exc.errno not in _UNROUTED


class PodPortForward:
    """``http://127.0.0.1:<local port>`` forwarding to ``<pod>:<port>`` in ``namespace`` through the API server.

    Raises (from ``start``): OSError when no local port can be opened.  A
    forward the API server refuses (no permission, pod gone) closes that one
    connection; the reason is logged.
    """

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str, pod: str, port: int) -> None:
        self.namespace, self.pod, self.port = namespace, pod, port
        self._core = kubernetes.client.CoreV1Api(api)
        self._listener: socket.socket | None = None
        self._closed = threading.Event()
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._listener is None:
            raise RuntimeError("the port-forward is not started")
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def start(self) -> PodPortForward:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.5)  # to notice close()
        self._thread = threading.Thread(target=self._accept, name=f"port-forward {self.namespace}/{self.pod}:{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            for conn in list(self._connections):
                conn.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            conn.setblocking(True)
            with self._lock:
                self._connections.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name=f"port-forward connection to {self.pod}", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        forward: Any = None
        try:
            forward = portforward(
                self._core.connect_get_namespaced_pod_portforward,
                self.pod,
                self.namespace,
                ports=str(self.port),
                _request_timeout=CONNECT_TIMEOUT,
            )
            remote = forward.socket(self.port)
            remote.setblocking(True)
            _pipe(conn, remote)
            error = forward.error(self.port)
            if error:
                log.warning("port-forward to %s/%s:%d: %s", self.namespace, self.pod, self.port, error)
        except (kubernetes.client.ApiException, OSError, ValueError) as exc:
            log.warning("cannot forward to %s/%s:%d through the API server: %s", self.namespace, self.pod, self.port, exc)
        finally:
            if forward is not None:
                forward.close()
            conn.close()
            with self._lock:
                self._connections.discard(conn)


def _pipe(a: Any, b: Any) -> None:
    """Copy bytes both ways until one side ends or both are idle for IDLE_TIMEOUT seconds."""
    with selectors.DefaultSelector() as selector:
        selector.register(a, selectors.EVENT_READ, b)
        selector.register(b, selectors.EVENT_READ, a)
        while True:
            ready = selector.select(timeout=IDLE_TIMEOUT)
            if not ready:
                return
            for key, _ in ready:
                data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                if not data:
                    return
                key.data.sendall(data)
