"""A module next to like_spark_submit.py: importable because a script's own directory is on sys.path."""

NAME = "sibling_helper"
