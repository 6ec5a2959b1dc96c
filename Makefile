# txstate-spark: the commands users and CI run. Everything is installed on first use; `make` alone
# installs the newest line's venv (.venv) and nothing else. `make help` prints this list.
#   make demo                  build the jar and run a real streaming job on local Spark with our provider (DEMO_ARGS=--metrics)
#   make test                  every Spark line: the guide, sbt tests, Spark's conformance suite, pytest against real Spark
#   make test-unit             the Python unit tests alone (no JVM, no jar): about a second
#   make test-dfs              a real HDFS under the checkpoint: the Scala provider test and tests/test_hdfs.py
#   make test-s3               S3 (s3a against s3proxy on loopback) under the checkpoint; not part of make test
#   make test-lines            the Python tests on each older Spark line, and the upgrade path
#   make conformance           Spark's own state store conformance suite against our provider (part of make test)
#   make docs                  the user guide (MkDocs, docs/ and mkdocs.yml) into target/site, --strict (part of make test)
#   make jar                   the plugin jars alone, one per Spark line (spark-submit --jars, Databricks cluster library)
#   make wheel                 dist/txstate_spark-<version>-py3-none-any.whl, with every line's jar inside
#   make publish-local DIR=<dir>  every line's Maven artifacts (jar, POM, sources, javadoc, checksums) under DIR
#   make soak                  seeded executor/driver kills and restarts against a model (SOAK_KILLS, SOAK_SEED, SOAK_MINUTES)
#   make stress STRESS_SECONDS=<n>  the store layer's schedule-randomizing stress on the newest line (STRESS_SEED)
#   make storm                 three queries restarted at random moments with readers beside (STORM_RESTARTS, STORM_SEED)
#   make bench-<name>          one benchmark in full; bench-<name>-quick a short run, where it has one
#   make bench / bench-quick   the store, streaming and memory benchmarks and their plots
#   make clean                 delete what the build made (target/, dist/, the older lines' venvs)
#
# SPARK=<line> (3.5, 4.0, 4.1, 4.2, 4.3, or a row of project/spark-lines.tsv such as 3.5_2.13) narrows
# jar, demo, publish-local and conformance to one Spark line: `make jar SPARK=4.1`, `make demo SPARK=3.5`
# (3.5 is the Scala 2.12 build, the one pyspark ships). demo runs on the newest line by default.

SHELL := /bin/bash
VERSION := $(shell cat VERSION)
PYTHON ?= python3
VENV := .venv
SBT := build/sbt

# The Spark lines (rows of the table the sbt build reads too: 4.1, or 3.5_2.12 for a line built for
# two Scala versions), and those with a pyspark on PyPI to run the Python tests on.
LINES := $(shell awk '!/^\#/ && NF {print $$1}' project/spark-lines.tsv)
PYSPARK_LINES := $(shell awk '!/^\#/ && NF && $$4 != "-" {print $$1}' project/spark-lines.tsv)
NEWEST := $(lastword $(LINES))
OLDER_LINES := $(filter-out $(NEWEST),$(PYSPARK_LINES))
# SPARK=3.5 means the row of that line that pyspark ships (3.5_2.12).
SPARK_ROW := $(if $(SPARK),$(or $(filter $(SPARK),$(LINES)),$(firstword $(filter $(SPARK)_%,$(PYSPARK_LINES)))))
ifneq ($(SPARK),)
ifeq ($(SPARK_ROW),)
$(error SPARK=$(SPARK) is not a Spark line txstate-spark builds for; use one of: $(LINES))
endif
endif
LINE := $(or $(SPARK_ROW),$(NEWEST))
# A line's jar, sbt project and venv (.venv is the newest line's: the build compiles 4.3 against it).
jar_of = target/txstate-spark-$(firstword $(subst _, ,$(1)))_$(call scala_of,$(1))-$(VERSION).jar
sbt_project = spark$(subst .,,$(1))
venv_of = $(if $(filter $(1),$(NEWEST)),$(VENV),$(VENV)-$(1))
pyspark_of = $(shell awk '$$1 == "$(1)" {print $$4}' project/spark-lines.tsv)
# The Scala binary version a line's jar is built for (2.13 of 2.13.18), from the table.
scala_of = $(shell awk '$$1 == "$(1)" {split($$3, v, "."); print v[1] "." v[2]}' project/spark-lines.tsv)
JARS := $(foreach line,$(LINES),$(call jar_of,$(line)))
JAR := $(call jar_of,$(LINE))
JARS_BUILT := target/.jars-built
# The 4.3 test classpath with Hadoop's mini DFS cluster, for tests/servers/dfs_cluster.py
# (build.sbt, dfsClasspath).
DFS_CLASSPATH := target/dfs-classpath.txt
# The s3a connector's jars (for Spark) and s3proxy's (for the server), for tests/servers/s3_server.py
# (build.sbt, project s3).
S3_CLASSPATH := target/s3a-classpath.txt
VPY := $(call venv_of,$(LINE))/bin/python
WHEEL := dist/txstate_spark-$(VERSION)-py3-none-any.whl
# The settings' specification, read by both halves (the jar carries a copy the build makes).
SETTINGS_SPEC := python/txstate_spark/settings/settings.json
PY_SOURCES := $(shell find python -name '*.py' -not -path '*/build/*' 2>/dev/null) $(SETTINGS_SPEC)
SCALA_SOURCES := $(shell find jvm -name '*.scala' 2>/dev/null) build.sbt VERSION project/build.properties \
	project/SparkLines.scala project/LineProjects.scala project/spark-lines.tsv project/spark-lines-preview.tsv $(SETTINGS_SPEC)

export SPARK
export TXSTATE_SPARK_JAR := $(CURDIR)/$(JAR)
export PYTHONPATH := $(CURDIR)/python
export PYSPARK_PYTHON := $(CURDIR)/$(VPY)
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(VPY)

.PHONY: help publish-local demo demo-jar docs test test-jvm test-python test-soak-short test-lane-two jvm-all test-unit test-dfs test-s3 test-lines test-lines-full test-migration-full test-rescale-full conformance jar wheel venv venvs older-venvs bench bench-quick bench-plots clean \
	soak stress storm

# `make` alone installs the venv and nothing else.
.DEFAULT_GOAL := venv
venv: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt requirements-docs.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -r requirements-dev.txt -r requirements-docs.txt
	touch $@

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))
	@echo "benchmarks: $(sort $(BENCHES)) (quick runs: $(sort $(QUICK_BENCHES)))"

# A venv per older Spark line: that line's pyspark from PyPI and the same test tools, within that
# pyspark's constraints where it has some (tests/constraints/pyspark-<version>.txt).
$(VENV)-%/.installed: requirements-dev.txt project/spark-lines.tsv $(wildcard tests/constraints/*.txt)
	$(PYTHON) -m venv $(VENV)-$*
	$(VENV)-$*/bin/python -m pip install --quiet --upgrade pip
	grep -v '^pyspark==' requirements-dev.txt > $(VENV)-$*/requirements.txt
	$(VENV)-$*/bin/python -m pip install --quiet pyspark==$(call pyspark_of,$*) -r $(VENV)-$*/requirements.txt \
	  $(addprefix -c ,$(wildcard tests/constraints/pyspark-$(call pyspark_of,$*).txt))
	touch $@
venvs: $(foreach line,$(PYSPARK_LINES),$(call venv_of,$(line))/.installed)
older-venvs: $(foreach line,$(OLDER_LINES),$(VENV)-$(line)/.installed)

# One sbt run packages every line (`make jar SPARK=4.1`: that line only).
$(JARS_BUILT): $(VENV)/.installed $(SCALA_SOURCES)
	$(SBT) package
	touch $@
ifeq ($(SPARK),)
jar: $(JARS_BUILT)
else
jar: $(VENV)/.installed
	$(SBT) $(call sbt_project,$(LINE))/package
endif

wheel: $(WHEEL)
$(WHEEL): $(JARS_BUILT) $(PY_SOURCES) python/pyproject.toml
	@grep -qx '__version__ = "$(VERSION)"' python/txstate_spark/_version.py || { echo "make wheel: python/txstate_spark/_version.py must say __version__ = \"$(VERSION)\" (the VERSION file)" >&2; exit 1; }
	rm -rf python/txstate_spark/jars python/build && mkdir -p python/txstate_spark/jars dist
	cp $(JARS) python/txstate_spark/jars/
	$(VPY) -m pip wheel --quiet --no-deps --no-build-isolation -w dist ./python
	rm -rf python/txstate_spark/jars python/build python/*.egg-info

# io.github.txstate:txstate-spark-<line>_<scala>:<version> for every line (or SPARK's) into DIR, a Maven
# repository layout with .sha1 and .md5 beside every file (project/Publishing.scala); for
# `spark-submit --packages ... --repositories file://<DIR>` or a build's resolver.
publish-local: $(VENV)/.installed
	@[ -n "$(DIR)" ] || { echo "make publish-local: say where, e.g. make publish-local DIR=/tmp/maven-repo" >&2; exit 2; }
	mkdir -p $(DIR)
	TXSTATE_PUBLISH_DIR=$(abspath $(DIR)) $(SBT) $(if $(SPARK_ROW),$(call sbt_project,$(SPARK_ROW))/publish,publish)

# The demo builds only the jar it runs (one sbt project), on the venv of its line.
# DEMO_ARGS=--metrics prints every state operator metric of every micro-batch too.
demo: demo-jar $(call venv_of,$(LINE))/.installed
	$(VPY) demo/streaming_demo.py $(DEMO_ARGS)
demo-jar: $(VENV)/.installed
	@if [ ! -f $(JAR) ] || [ -n "$$(find $(SCALA_SOURCES) -newer $(JAR) 2>/dev/null | head -n 1)" ]; then \
	  $(SBT) $(call sbt_project,$(LINE))/package; fi

# The older lines' venvs install (mostly download and disk, little CPU) while sbt and pytest run.
# The JVM side is one sbt run (each start of sbt loads the build's settings for half a minute or more):
# the Scala tests, conformance, every line's jar and the newest line's test classpath for the DFS
# cluster, in the order test-jvm, conformance and test-python would run them. Then two lanes of pytest
# run side by side, since one leaves the cores idle part of the time (Spark's driver waits on its
# tasks, the tests on batches); more lanes would only slow each other, since two already keep both
# cores busy. The lanes: the newest line's tests but LANE_TWO, and LANE_TWO followed by the
# older lines (--keep-going: a failure of one does not skip the other). The second lane's output goes
# to target/test-lines.log and is printed when both end.
test: $(VENV)/.installed
	@mkdir -p target
	$(MAKE) --no-print-directory older-venvs > target/older-venvs.log 2>&1 & venvs=$$!; \
	  $(MAKE) --no-print-directory docs jvm-all wheel; status=$$?; \
	  wait $$venvs || { cat target/older-venvs.log; echo "make test: installing the older lines' venvs failed" >&2; exit 1; }; \
	  [ $$status -eq 0 ] || exit $$status; \
	  $(MAKE) --no-print-directory --keep-going test-lane-two test-lines > target/test-lines.log 2>&1 & lines=$$!; \
	  $(MAKE) --no-print-directory test-python PYTEST_ELSEWHERE="$(addprefix --ignore=,$(LANE_TWO))"; newest=$$?; \
	  wait $$lines; older=$$?; cat target/test-lines.log; \
	  [ $$older -eq 0 ] || echo "make test: the short soak or the older lines' tests failed (target/test-lines.log)" >&2; \
	  [ $$newest -eq 0 ] && [ $$older -eq 0 ]

# The user guide, built as CI builds it: --strict fails on a broken link or a page missing from the
# nav (a few seconds). Open target/site/index.html.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/python -m mkdocs build --strict --quiet

# The Scala tests on every line.
# The preview lines (project/spark-lines-preview.tsv, not yet released) are compiled with their
# tests, Scala 2.12's at least, so shared code cannot drift from Scala 2.12 and Java 8 unnoticed.
PREVIEW_LINES := $(shell awk '!/^\#/ && NF {print $$1}' project/spark-lines-preview.tsv)
PREVIEW_COMPILE := $(if $(PREVIEW_LINES),$(call sbt_project,$(firstword $(PREVIEW_LINES)))/Test/compile)
test-jvm: $(VENV)/.installed
	$(SBT) test $(PREVIEW_COMPILE)

jvm-all: $(VENV)/.installed
	rm -rf $(MAVEN_REPO)
	TXSTATE_PUBLISH_DIR=$(CURDIR)/$(MAVEN_REPO) $(SBT) test $(PREVIEW_COMPILE) $(CONFORMANCE_TASKS) package \
	  $(PUBLISH_TASKS) $(call sbt_project,$(NEWEST))/Test/compile
	touch $(JARS_BUILT) $(PUBLISHED)

# The Maven artifacts the tests consume as a user would (tests/test_maven_packages.py: spark-submit
# --packages and spark.jars.packages; consumerNN/test: an sbt build that compiles against the artifact),
# published into target/maven-repo for the newest line and the oldest pyspark line (3.5, Scala 2.12).
MAVEN_REPO := target/maven-repo
PUBLISHED := $(MAVEN_REPO)/.published
PUBLISHED_LINES := $(NEWEST) $(firstword $(PYSPARK_LINES))
# Both lines' Scaladoc (the javadoc jars) at once, one per core, then both consumers' builds.
PUBLISH_TASKS := "all $(foreach line,$(PUBLISHED_LINES),$(call sbt_project,$(line))/publish)" \
  "all $(foreach line,$(PUBLISHED_LINES),consumer$(subst .,,$(line))/test)"
# The newest line runs them with the rest of tests/; 3.5 runs them in test-lines, with the executor
# metrics on local-cluster (the plugin's metrics library is that Spark's).
PUBLISHED_LINE_TESTS := tests/test_maven_packages.py tests/test_executor_metrics.py
$(PUBLISHED): $(JARS_BUILT)
	rm -rf $(MAVEN_REPO)
	TXSTATE_PUBLISH_DIR=$(CURDIR)/$(MAVEN_REPO) $(SBT) $(PUBLISH_TASKS)
	touch $@

# The whole pytest suite on the newest line.
# tests/test_s3.py needs a session of its own (s3a on the driver's classpath): `make test-s3`.
# tests/test_spark_upgrade.py runs the older lines' venvs, which install meanwhile: `make test-lines`.
# PYTEST_ELSEWHERE: what make test runs in its other lane (LANE_TWO: the short soak and the HDFS
# tests, which with the older lines fill about as long as the rest of the newest line's suite).
# --durations=0 lists every test's time, to rebalance the lanes.
SOAK_SHORT := tests/test_soak_short.py
LANE_TWO := $(SOAK_SHORT) tests/test_hdfs.py
test-python: $(JARS_BUILT) $(WHEEL) $(DFS_CLASSPATH) $(PUBLISHED)
	$(VPY) -m pytest tests --ignore=tests/test_s3.py --ignore=tests/test_spark_upgrade.py $(PYTEST_ELSEWHERE) --durations=0
test-soak-short: $(JARS_BUILT) $(WHEEL)
	$(VPY) -m pytest $(SOAK_SHORT)
test-lane-two: $(JARS_BUILT) $(WHEEL) $(DFS_CLASSPATH)
	$(VPY) -m pytest $(LANE_TWO) --durations=0

# The unit tests alone (tests/unit: no JVM, no Spark session, no jar), in about a second; also part
# of test-python.
test-unit: $(VENV)/.installed
	$(VPY) -m pytest tests/unit

# A real HDFS (NameNode + DataNode, Hadoop's MiniDFSCluster) under the checkpoint: the Scala
# provider test and the pytest cases (both also run in `make test`). tests/test_hdfs.py starts the
# cluster's JVM from the 4.3 line's test classpath, which sbt writes to $(DFS_CLASSPATH).
$(DFS_CLASSPATH): $(VENV)/.installed $(SCALA_SOURCES)
	$(SBT) $(call sbt_project,$(NEWEST))/Test/compile
test-dfs: $(JARS_BUILT) $(VENV)/.installed
	$(SBT) "$(call sbt_project,$(NEWEST))/testOnly txstate.spark.HdfsCheckpointTest"
	$(VPY) -m pytest tests/test_hdfs.py

# S3 under the checkpoint: s3a:// (hadoop-aws + the AWS SDK modules it uses) against s3proxy on
# loopback (docs/reliability.md, "S3"). Not in `make test`: see that section for why.
$(S3_CLASSPATH): build.sbt
	$(SBT) s3/s3Classpath
test-s3: $(JARS_BUILT) $(VENV)/.installed $(S3_CLASSPATH)
	$(VPY) -m pytest tests/test_s3.py

# Every equivalence case migrated in every direction and rescaled both ways (CI runs every case
# hdfs -> txstate, and one case per state shape in the other directions and rescaled).
test-migration-full: $(JARS_BUILT) $(WHEEL)
	TXSTATE_MIGRATION_FULL=1 $(VPY) -m pytest tests/test_migration.py -k emits_what_the_unmigrated

# Every equivalence case rescaled in place 5 -> 2 too (tests/test_rescale.py runs two in CI).
test-rescale-full: $(JARS_BUILT) $(WHEEL)
	TXSTATE_RESCALE_FULL=1 $(VPY) -m pytest tests/test_rescale.py -k emits_what_the_unrescaled

# Each older line in its own venv (its pyspark from PyPI; 3.5 is its Scala 2.12 build, the one pyspark
# ships). The two oldest (3.5 and 4.0: their adapter files differ most from the newest line's) run
# LINE_TESTS: packaging, the unit tests (conversions follow pyspark's types), every operator against
# Spark's HDFS provider across a restart, an executor killed mid-batch, the txstate data source, a
# follower (which also reads through the data source), inspect and verify of a join (3.5 records no
# operator metadata: its four stores are found by their folders), state TTL on an aggregation (whose
# read-then-write stores differ by line) and the hot-state cache. The lines between them and the
# newest (4.1, 4.2) run LINE_CORE_TESTS: the unit tests and every operator across a restart, which
# exercise their own files (ApiOfOtherLines); every file they share is run in full on an older or
# the newest line (`make test-lines-full` runs LINE_TESTS on every older line).
LINE_CORE_TESTS := tests/unit tests/test_operator_equivalence.py
LINE_TESTS := tests/test_packaging.py $(LINE_CORE_TESTS) tests/test_executor_failure.py \
  tests/test_txstate_source.py tests/test_followers.py::test_a_follower_changes_nothing_under_the_checkpoint \
  tests/test_inspect_verify.py::test_a_join_lists_its_four_stores_by_operator_id_and_verifies_sound \
  tests/test_state_ttl.py::test_aggregation_with_ttl_restarts_expired_counts_as_the_model_says \
  tests/test_hot_cache.py::test_every_batch_matches_the_model_whatever_the_cache
FULL_LINES := $(wordlist 1,2,$(OLDER_LINES))
# pytest of one older line: $(call line_pytest,<line>,<tests>)
line_pytest = py=$(CURDIR)/$(VENV)-$(1)/bin/python; \
  echo "== pytest on Spark $(1) ($$($$py -c 'import pyspark; print(pyspark.__version__)'))"; \
  TXSTATE_SPARK_JAR=$(CURDIR)/$(call jar_of,$(1)) PYSPARK_PYTHON=$$py PYSPARK_DRIVER_PYTHON=$$py $$py -m pytest $(2);
test-lines: $(JARS_BUILT) $(WHEEL) $(PUBLISHED) $(foreach line,$(OLDER_LINES),$(VENV)-$(line)/.installed)
	set -e; $(foreach line,$(OLDER_LINES),$(call line_pytest,$(line),$(if $(filter $(line),$(FULL_LINES)),$(LINE_TESTS),$(LINE_CORE_TESTS)) $(if $(filter $(line),$(PUBLISHED_LINES)),$(PUBLISHED_LINE_TESTS))))
	@echo "== the upgrade path: a checkpoint of Spark 3.5 restarted on 4.0 and 4.3"
	$(VPY) -m pytest tests/test_spark_upgrade.py
test-lines-full: $(JARS_BUILT) $(WHEEL) $(foreach line,$(OLDER_LINES),$(VENV)-$(line)/.installed)
	set -e; $(foreach line,$(OLDER_LINES),$(call line_pytest,$(line),$(LINE_TESTS)))

# StateStoreSuiteBase from Spark's spark-sql tests jar, subclassed in jvm/src/conformance, on every
# line (or SPARK's); exclusions and their reasons in ConformanceExclusions.scala and each line's
# LineExclusions.scala; Spark's logs in target/conformance/<line>/target/unit-tests.log.
# The lines' suites run side by side, as many as sbt's forked test JVMs may (build.sbt): each keeps
# about one core busy.
CONFORMANCE_TASKS := "all $(foreach line,$(or $(SPARK_ROW),$(LINES)),conformance$(subst .,,$(line))/test)"
conformance: $(VENV)/.installed
	$(SBT) $(CONFORMANCE_TASKS)

# The soak (docs/reliability.md, "Soak"): an aggregation, a dropDuplicates and a stream-stream join on
# local-cluster under seeded executor and driver kills and restarts, checked against a model; the
# report goes to bench/results/soak-<timestamp>.md. `make soak SOAK_KILLS=100 SOAK_SEED=7 SOAK_MINUTES=60`
SOAK_KILLS ?= 5
SOAK_SEED ?= 7
SOAK_MINUTES ?= 0
soak: $(JARS_BUILT)
	$(VPY) tests/soak/soak.py --kills $(SOAK_KILLS) --seed $(SOAK_SEED) --minutes $(SOAK_MINUTES)

# The stress (docs/reliability.md, "Stress"): several instances of one store at once on real RocksDB
# and files, every checkpoint call paused at random, checked against a model. `make stress
# STRESS_SECONDS=120`; a failure prints its seed, and `make stress STRESS_SEED=<n>` replays it.
# STRESS_SCHEDULES=<n> stops after n schedules.
STRESS_SECONDS ?= 60
stress: $(VENV)/.installed
	STRESS_SECONDS=$(STRESS_SECONDS) STRESS_SEED=$(STRESS_SEED) STRESS_SCHEDULES=$(STRESS_SCHEDULES) \
	  $(SBT) "$(call sbt_project,$(NEWEST))/testOnly txstate.store.stress.StoreStressTest"

# The restart storm (docs/reliability.md, "Restart storm"): an aggregation, a dropDuplicates and a
# join in one local application, each stopped and restarted STORM_RESTARTS times at random moments,
# with the data source, interactive queries and a follower reading beside them and a CPU spinner,
# checked against the soak's model; on the line SPARK names (`make storm SPARK=4.1`, `SPARK=3.5`).
# The report goes to bench/results/storm-<spark>-<timestamp>.md.
STORM_RESTARTS ?= 50
STORM_SEED ?= 11
storm: $(JARS_BUILT) $(call venv_of,$(LINE))/.installed
	$(VPY) tests/storm/storm.py --restarts $(STORM_RESTARTS) --seed $(STORM_SEED)

# Benchmarks: txstate vs Spark's built-in providers, measured in the same run. Each prints a markdown
# table with the command that reproduces it and writes bench/results/<kind>-<timestamp>.md (+ .json).
# `make bench-<name>` runs one in full; `make bench-<name>-quick`, where it has one, a short run.
#   store       StateStoreProvider API in one JVM, plus raw rocksdbjni (Scala, bench/src)
#   format      storage format 2 (stamped rows) vs format 1 (0.1.0) updates/s and bytes per entry, and
#               the cost of TTL expiry, one JVM through the store layer (Scala, bench/src; quick: CI-sized;
#               the target is format 1's updates/s within 5%)
#   streaming   aggregation, dropDuplicates, stream-stream join on local[2] (bench/streaming_bench.py)
#   fresh-app   the whole job as a first streaming job meets it: each provider in a fresh application,
#               every batch, and small batches over 1M keys of state (bench/fresh_app_bench.py)
#   memory      peak executor RSS of one huge batch on local-cluster (bench/memory_bench.py)
#   many-stores a join and an aggregation at 100, 200 and 400 shuffle partitions on one executor, every
#               provider, median batch time and the executor's peak RSS (bench/many_stores_bench.py)
#   migrate     rows/s and peak RSS of `migrate` for a 5M-key aggregation (bench/migration_bench.py);
#               rescale: the in-place rescale alone, at 1M keys
#   scaling     updates/s, commit p50 and peak RSS per provider at 1M, 10M and 50M keys, uniform and Zipf,
#               one JVM per run with the same heap (bench/scaling_bench.py; about an hour; quick: 100k/300k)
#   query       point-query latency: the py4j query API, the txstate data source and Spark's statestore
#               source, local, local-cluster and behind a Spark Connect server (bench/query_latency.py)
#   follower    followers: lag while the leader runs, point reads and start-up against Spark's state
#               data source (bench/follower_bench.py)
#   dfs, s3     requests and bytes per micro-batch per store with the checkpoint on HDFS or S3, txstate
#               against Spark's RocksDB provider (changelog on) (bench/dfs_requests.py; see test-dfs, test-s3)
#   plots       docs/bench/*.png from the newest results (installs bench/requirements.txt on demand)
#
# Each benchmark is declared once, by name: BENCH.<name> is its runner (one of the three below) and
# what it runs, FULL.<name> the full run's arguments, QUICK.<name> the quick run's (none: no quick run),
# NEEDS.<name> what it needs besides the jars.
bench_py = $(VPY) bench/$(1) $(2)
bench_py_jar = TXSTATE_SPARK_JAR=$(CURDIR)/$(call jar_of,$(LINE)) PYTHONPATH=python $(VPY) bench/$(1) $(2)
bench_sbt = $(SBT) "bench/runMain txstate.bench.$(1) $(2)"
BENCH.store := bench_sbt StoreBench
FULL.store := --full
QUICK.store := --quick
BENCH.format := bench_sbt FormatBench
FULL.format := --full
QUICK.format := --quick
BENCH.streaming := bench_py streaming_bench.py
QUICK.streaming := --quick
BENCH.fresh-app := bench_py fresh_app_bench.py
BENCH.memory := bench_py memory_bench.py
QUICK.memory := --quick
BENCH.many-stores := bench_py many_stores_bench.py
BENCH.migrate := bench_py migration_bench.py
QUICK.migrate := --quick
BENCH.rescale := bench_py migration_bench.py
FULL.rescale := --keys 1000000 --in-place-only
BENCH.scaling := bench_py scaling_bench.py
QUICK.scaling := --keys 100000,300000 --batches 3 --updates 50000
BENCH.query := bench_py_jar query_latency.py
QUICK.query := --keys 20000 --queries 100
BENCH.follower := bench_py_jar follower_bench.py
QUICK.follower := --keys 10000 --batches 12 --queries 100
BENCH.dfs := bench_py dfs_requests.py
NEEDS.dfs := $(DFS_CLASSPATH)
BENCH.s3 := bench_py dfs_requests.py
FULL.s3 := --fs s3
NEEDS.s3 := $(S3_CLASSPATH)
BENCHES := $(patsubst BENCH.%,%,$(filter BENCH.%,$(.VARIABLES)))
QUICK_BENCHES := $(foreach name,$(BENCHES),$(if $(QUICK.$(name)),$(name)))
# $(call bench_run,<name>,<arguments>): the command line of one run.
bench_run = $(strip $(call $(word 1,$(BENCH.$(1))),$(word 2,$(BENCH.$(1))),$(2)))
.PHONY: $(BENCHES:%=bench-%) $(QUICK_BENCHES:%=bench-%-quick)
$(foreach name,$(BENCHES),$(eval bench-$(name): $(JARS_BUILT) $(NEEDS.$(name))))
$(foreach name,$(QUICK_BENCHES),$(eval bench-$(name)-quick: $(JARS_BUILT) $(NEEDS.$(name))))
$(BENCHES:%=bench-%): bench-%:
	$(call bench_run,$*,$(FULL.$*))
$(QUICK_BENCHES:%=bench-%-quick): bench-%-quick:
	$(call bench_run,$*,$(QUICK.$*))

bench-quick: bench-store-quick bench-streaming-quick bench-memory-quick bench-plots
bench: bench-store bench-streaming bench-memory bench-plots

$(VENV)/.bench-installed: $(VENV)/.installed bench/requirements.txt
	$(VPY) -m pip install --quiet -r bench/requirements.txt
	touch $@

bench-plots: $(VENV)/.bench-installed
	$(VPY) bench/plots.py

clean:
	rm -rf target project/target project/project dist python/build python/txstate_spark/jars $(VENV)-*
