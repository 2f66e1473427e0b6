"""``python -m jobcluster``: the same as the ``jobcluster`` command."""

from jobcluster.cli.main import main

main()
