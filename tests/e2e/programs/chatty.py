"""A program that prints a lot: numbered lines before it waits for a file ``go``, many more after.

Used to see an attached client follow the program's stdout across the
cluster's rotated ``driver.out`` files. It needs no SparkContext: what it
prints is the point. The lines are what :func:`chatty_lines` gives, so a test
knows every byte of the stream.
"""

import argparse
import time
from pathlib import Path


def chatty_lines(phase: str, count: int) -> list[str]:
    return [f"{phase} line {i:06d} of {count}\n" for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=int, required=True, help="lines printed before waiting for the go file")
    parser.add_argument("--after", type=int, required=True, help="lines printed once the go file exists")
    parser.add_argument("--go", type=Path, required=True)
    args = parser.parse_args()
    for line in chatty_lines("before", args.before):
        print(line, end="")
    while not args.go.exists():
        time.sleep(0.1)
    for line in chatty_lines("after", args.after):
        print(line, end="")


if __name__ == "__main__":
    main()
