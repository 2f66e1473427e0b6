"""The kubernetes-application target: a job cluster as a JobManager Deployment and TaskManager pods.

Work in progress: the target stays listed as planned in ``backends/registry.py``
until its descriptor and driver exist.  What is here is pure: options parsed into
parameters objects, and the ``build_*`` functions that turn them into manifests
(plain dicts, as the API server takes them); nothing here calls the API server.
"""
