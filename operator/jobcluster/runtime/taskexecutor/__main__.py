"""``python -m jobcluster.runtime.taskexecutor``: see runner.py."""

from jobcluster.runtime.taskexecutor.runner import main

if __name__ == "__main__":
    main()
