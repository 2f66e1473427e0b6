# The two commands of the README:
#   make run    install everything, fetch the corpus, run WordCount on a local job cluster: the `local` target,
#               Flink's MiniCluster (one process, Spark in local mode), the quickest start on one machine;
#               TARGET=local-cluster runs it as a cluster of processes (Spark workers and executors)
#   make test   install everything (incl. the YARN/HDFS and Kubernetes test clusters, the project's image and Flink's client),
#               run the static checks and all tests (two streams at once: tests/run_streams.sh), PySpark 3.5's lane too
#   make lint   just the static checks: ruff (lint + format), mypy, lint-imports
#   make docs   regenerate the reference pages of docs/reference/ from the code (a unit test fails when one is stale)
#   make lock   regenerate the image's lock file, entrypoints/requirements.txt (a unit test fails when it is due)
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
CACHE ?= $(HOME)/.cache/jobcluster
export JOBCLUSTER_CACHE := $(CACHE)
CORPUS := $(CACHE)/corpus/python3.11-doc
OUT ?= $(CURDIR)/out/wordcount
PARALLELISM ?= 4
SLOTS ?= 2
TARGET ?= local

.PHONY: run test venv venv-kerberos venv-spark35 java corpus dashboard packages infra unit e2e lint docs lock clean

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: jobcluster needs Python 3.11+" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

# The kerberos extra (requests-gssapi) for the Kerberized test cluster's tests, in `make test` only: its gssapi has
# no Linux wheel and builds against MIT Kerberos (libkrb5-dev, which `packages` installs), which `make run` and
# users without Kerberos need not have.
venv-kerberos: $(VENV)/.kerberos
$(VENV)/.kerberos: $(VENV)/.installed | packages
	$(PY) -m pip install --quiet -e '.[test,kerberos]'
	@touch $@

# The PySpark 3.5 lane of `make test` (tests/run_streams.sh): jobcluster with the oldest PySpark it supports, in a
# virtualenv of its own, so that users on Spark 3.5 keep a tested path. PySpark 3.5 needs NumPy 1 (numpy<2), which
# pyarrow 26 and newer no longer import with. With the kerberos extra, as the test virtualenv: the unit tests of the
# Kerberos client need its gssapi.
VENV_SPARK35 := .venv-pyspark3.5
PYSPARK_35 := 3.5.7
venv-spark35: $(VENV_SPARK35)/.installed
$(VENV_SPARK35)/.installed: pyproject.toml Makefile | packages
	$(PYTHON) -m venv $(VENV_SPARK35)
	$(VENV_SPARK35)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_SPARK35)/bin/python -m pip install --quiet -e '.[test,kerberos]' 'pyspark[sql,connect]==$(PYSPARK_35)' 'pyarrow<26'
	@touch $@

java:
	@command -v java >/dev/null || { echo "Java not found: Spark and Hadoop need Java 17 (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
	@java -version 2>&1 | grep -qE 'version "(17|18|19|2[0-9])' || { echo "Java 17 or newer is required; found: $$(java -version 2>&1 | head -1)" >&2; exit 1; }

# A real corpus nobody on the team wrote: the reStructuredText sources of the Python docs, from Debian.
corpus: $(CORPUS)/.fetched
$(CORPUS)/.fetched:
	@rm -rf $(CORPUS) && mkdir -p $(CORPUS)/deb
	cd $(CORPUS)/deb && { apt-get download python3.11-doc 2>/dev/null || { apt-get update -qq && apt-get download python3.11-doc; }; }
	dpkg-deb -x $(CORPUS)/deb/python3.11-doc_*.deb $(CORPUS)/deb/x
	mv $(CORPUS)/deb/x/usr/share/doc/python3.11/html/_sources $(CORPUS)/sources && rm -rf $(CORPUS)/deb
	@touch $@

# Flink's web dashboard (the web/ folder of flink-runtime-web, from Maven Central) that job clusters serve at /:
# each pinned release (2.3.0, the default; 1.20.3, jobcluster.web.dashboard-version selects it)
dashboard: venv
	@$(PY) -m jobcluster.runtime.rest.dashboard >/dev/null

run: venv java corpus dashboard
	$(VENV)/bin/jobcluster run -t $(TARGET) -p $(PARALLELISM) -D taskmanager.numberOfTaskSlots=$(SLOTS) \
		examples/wordcount.py --input $(CORPUS)/sources --output $(OUT)

# Debian's packages the test clusters need: the Kubernetes node's runtime (runc), pod network (CNI
# plugins, iptables, conntrack) and the daemonless image build (buildah, mmdebstrap).
NODE_PACKAGES := runc containernetworking-plugins iptables conntrack buildah mmdebstrap
# The browser tests' headless Chromium and its WebDriver (tests/support/browser.py), of one version.
BROWSER_PACKAGES := chromium chromium-driver
# The Kerberized Hadoop test cluster's KDC (krb5kdc, kdb5_util, kadmin.local) and the clients the tests kinit with
# (kinit, klist, kdestroy); curl speaks SPNEGO through the same GSS-API library (tests/infra/hadoop/kdc.py);
# libkrb5-dev: the headers the kerberos extra's gssapi builds against (PyPI has no Linux wheel of it), for venv-kerberos.
KERBEROS_PACKAGES := krb5-kdc krb5-admin-server krb5-user curl libkrb5-dev
packages:
	@missing=$$(for p in $(NODE_PACKAGES) $(BROWSER_PACKAGES) $(KERBEROS_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages for the tests: $$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		{ apt-get install -y -qq --no-install-recommends $$missing || { apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; }; } >/dev/null; \
	fi

infra: java packages
	bash tests/infra/hadoop/build.sh
	bash tests/infra/kafka/build.sh
	bash tests/infra/s3/build.sh
	bash tests/infra/k8s/build.sh
	bash tests/infra/image/build.sh
	bash tests/infra/image/build.sh operator
	bash tests/infra/flink/build.sh

# The static checks, configured in pyproject.toml; `make test` runs them first (they need no test cluster).
LINT_PATHS := operator tests benchmarks examples
lint: venv
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The reference pages generated from the option declarations, the CLI and the FlinkJob CRD
# (tests/support/reference_docs.py); tests/unit/test_reference_docs.py fails when one differs from the code.
docs: venv
	$(PY) -m tests.support.reference_docs

# The builds of `infra` happen inside the two streams, each building what its tests need while the other runs.
test: venv lint java corpus packages venv-kerberos dashboard
	JOBCLUSTER_CORPUS=$(CORPUS)/sources PY=$(PY) PY_SPARK35=$(VENV_SPARK35)/bin/python bash tests/run_streams.sh

unit: venv
	$(PY) -m pytest tests/unit -q

# The images' lock files (entrypoints/requirements.txt, requirements-operator.txt): pyproject.toml's dependencies
# resolved for Python 3.11 on Linux, each with the SHA-256 of its files on PyPI, by pip-tools in a virtualenv of its own (a few minutes: it
# fetches every file to hash it). Run it after changing the dependencies; a unit test says when it is due.
PIP_TOOLS := $(CACHE)/pip-tools-7.6.2
# The extras the job image has besides the dependencies: an operator on it serves Kerberized YARN clusters.
JOB_IMAGE_EXTRAS := kerberos
# What the operator image leaves out (entrypoints/requirements-operator.txt): Spark and what only YARN or a driver needs.
OPERATOR_EXCLUDED := pyspark hdfs venv-pack wrapt
lock:
	@[ -x $(PIP_TOOLS)/bin/pip-compile ] || { $(PYTHON) -m venv $(PIP_TOOLS) && $(PIP_TOOLS)/bin/pip install --quiet 'pip-tools==7.6.2'; }
	sed -n '1,4p' entrypoints/requirements.txt > entrypoints/requirements.txt.new
	$(PIP_TOOLS)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-header --no-emit-find-links \
		--extra $(JOB_IMAGE_EXTRAS) --output-file - pyproject.toml >> entrypoints/requirements.txt.new
	mv entrypoints/requirements.txt.new entrypoints/requirements.txt
	$(PYTHON) -c 'import sys, tomllib; print(*(d for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"] \
		if d.split("[")[0].split(">")[0].split("=")[0].strip().lower() not in sys.argv[1:]), sep="\n")' $(OPERATOR_EXCLUDED) \
		> $(PIP_TOOLS)/operator.in
	sed -n '1,4p' entrypoints/requirements-operator.txt > entrypoints/requirements-operator.txt.new
	$(PIP_TOOLS)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --no-header --no-emit-find-links \
		--constraint entrypoints/requirements.txt --output-file - $(PIP_TOOLS)/operator.in \
		| sed 's|$(PIP_TOOLS)/operator.in|pyproject.toml|' >> entrypoints/requirements-operator.txt.new
	mv entrypoints/requirements-operator.txt.new entrypoints/requirements-operator.txt

clean:
	rm -rf $(VENV) $(VENV_SPARK35) out
