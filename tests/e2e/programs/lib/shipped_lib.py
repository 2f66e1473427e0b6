"""A module shipped with ``--py-files``: imported at the top of the program and inside the executors."""


def double(x: int) -> int:
    return 2 * x
