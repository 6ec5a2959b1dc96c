# txstate-spark: the commands users and CI run. Everything is installed on first use.
#   make demo   build the jar and run a real streaming job on local Spark with our provider
#   make test   sbt tests, then pytest against real Spark
#   make conformance  Spark's own state store conformance suite against our provider (part of make test)
#   make jar    the plugin jar alone (spark-submit --jars, Databricks cluster library)
#   make wheel  dist/txstate_spark-<version>-py3-none-any.whl, with the jar inside

SHELL := /bin/bash
VERSION := $(shell cat VERSION)
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
SBT := build/sbt
JAR := target/txstate-spark_2.13-$(VERSION).jar
WHEEL := dist/txstate_spark-$(VERSION)-py3-none-any.whl
PY_SOURCES := $(shell find python -name '*.py' -not -path '*/build/*' 2>/dev/null)
SCALA_SOURCES := $(shell find jvm -name '*.scala' 2>/dev/null) build.sbt VERSION project/build.properties

export TXSTATE_SPARK_JAR := $(CURDIR)/$(JAR)
export PYTHONPATH := $(CURDIR)/python
export PYSPARK_PYTHON := $(CURDIR)/$(VPY)
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(VPY)

.PHONY: demo test test-jvm test-python conformance jar wheel venv bench bench-quick clean \
	bench-store bench-store-quick bench-streaming bench-streaming-quick bench-memory bench-memory-quick bench-plots

venv: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -r requirements-dev.txt
	touch $@

jar: $(JAR)
$(JAR): $(VENV)/.installed $(SCALA_SOURCES)
	$(SBT) package

wheel: $(WHEEL)
$(WHEEL): $(JAR) $(PY_SOURCES) python/pyproject.toml
	@grep -qx '__version__ = "$(VERSION)"' python/txstate_spark/_version.py || { echo "make wheel: python/txstate_spark/_version.py must say __version__ = \"$(VERSION)\" (the VERSION file)" >&2; exit 1; }
	rm -rf python/txstate_spark/jars python/build && mkdir -p python/txstate_spark/jars dist
	cp $(JAR) python/txstate_spark/jars/
	$(VPY) -m pip wheel --quiet --no-deps --no-build-isolation -w dist ./python
	rm -rf python/txstate_spark/jars python/build python/*.egg-info

demo: $(JAR)
	$(VPY) demo/streaming_demo.py

test: test-jvm conformance test-python

test-jvm: $(VENV)/.installed
	$(SBT) test

test-python: $(JAR) $(WHEEL)
	$(VPY) -m pytest tests

# StateStoreSuiteBase from Spark's spark-sql tests jar, subclassed in jvm/src/conformance; exclusions
# and their reasons in ConformanceExclusions.scala; Spark's logs in target/conformance/target/unit-tests.log.
conformance: $(VENV)/.installed
	$(SBT) conformance/test

# Benchmarks: txstate vs Spark's built-in providers, measured in the same run. Each prints a markdown
# table with the command that reproduces it and writes bench/results/<kind>-<timestamp>.md (+ .json).
#   store      StateStoreProvider API in one JVM, plus raw rocksdbjni (Scala, bench/src)
#   streaming  aggregation, dropDuplicates, stream-stream join on local[2] (bench/streaming_bench.py)
#   memory     peak executor RSS of one huge batch on local-cluster (bench/memory_bench.py)
#   plots      docs/bench/*.png from the newest results (installs bench/requirements.txt on demand)
bench-quick: bench-store-quick bench-streaming-quick bench-memory-quick bench-plots
bench: bench-store bench-streaming bench-memory bench-plots

bench-store-quick: $(JAR)
	$(SBT) "bench/runMain txstate.bench.StoreBench --quick"

bench-store: $(JAR)
	$(SBT) "bench/runMain txstate.bench.StoreBench --full"

bench-streaming-quick: $(JAR)
	$(VPY) bench/streaming_bench.py --quick

bench-streaming: $(JAR)
	$(VPY) bench/streaming_bench.py

bench-memory-quick: $(JAR)
	$(VPY) bench/memory_bench.py --quick

bench-memory: $(JAR)
	$(VPY) bench/memory_bench.py

$(VENV)/.bench-installed: $(VENV)/.installed bench/requirements.txt
	$(VPY) -m pip install --quiet -r bench/requirements.txt
	touch $@

bench-plots: $(VENV)/.bench-installed
	$(VPY) bench/plots.py

clean:
	rm -rf target project/target project/project dist python/build python/txstate_spark/jars
