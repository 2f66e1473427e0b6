"""``python -m jobcluster.controller``: the FlinkJob operator (see ``main.py``)."""

from jobcluster.controller.main import operator

if __name__ == "__main__":
    operator(prog_name="python -m jobcluster.controller")
