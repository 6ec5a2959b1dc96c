"""Scripts the tests and benchmarks run as subprocesses, each with a SparkContext (or a Spark Connect
client) of its own: `python tests/jobs/<name>_job.py ...`. Those that use the harness put tests/ on
sys.path themselves, so they run from any directory; the tests also import their shared pieces as
`jobs.<name>_job`."""
