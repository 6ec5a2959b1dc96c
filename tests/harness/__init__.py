"""What the tests, jobs, soak and benchmarks share: the streaming harness (sessions, input files,
checkpoint listings, output comparison), the local-cluster helpers (running a job script, finding
and killing executors), the counting stream of the interactive-query tests, and the state TTL
reference model. Imported as `harness.<module>` with tests/ on sys.path (conftest.py, each job
script and bench/bench_common.py put it there)."""
