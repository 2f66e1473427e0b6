"""The Hadoop (HDFS + YARN) test cluster: build.sh resolves it, cluster.py runs it, secure_cluster.py runs it Kerberized."""
