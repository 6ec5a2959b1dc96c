"""Real servers the tests and benchmarks start in processes of their own: a Spark Connect server
(connect_server), an HDFS mini cluster (dfs_cluster), an S3-compatible server (s3_server) and
txstate's own `serve` (txstate_serve).
Imported as `servers.<module>` with tests/ on sys.path."""
