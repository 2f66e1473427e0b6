"""The Kafka test broker and Spark's Kafka connector: build.sh resolves them, cluster.py runs the broker."""
