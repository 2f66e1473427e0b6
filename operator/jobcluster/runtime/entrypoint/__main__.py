"""``python -m jobcluster.runtime.entrypoint``: start a job cluster from the environment (see cluster_dir.py)."""

from jobcluster.runtime.entrypoint.bootstrap import main

if __name__ == "__main__":
    main()
