# The workbook's front door. Two commands do all set-up on a fresh machine:
#   make grade     build every lab's checker and grade labs/ (Score: X/Y)
#   make test      build everything and run the workbook's own test suite (ctest)
# Also:
#   make check LAB=01              check one lab while you work on it
#   make grade LAB=01              grade one lab
#   make grade SOLUTIONS=1         grade solutions/ (must score full marks)
#   make grade SUBMISSION=path     grade another copy of labs/ (one student's)
#   make grade SEED=n              replay a grade run with the seed it printed
#   make grade PRACTICE_OK=1       write results.json even in practice mode (no CUDA IPC: not for grading)
#   make grade-class SUBMISSIONS=dir  grade every student's copy of labs/ in dir, one per GPU
#   make grade-class SUBMISSIONS=dir RUNNER=slurm  ... as one Slurm job array, a task per student
#   make check LAB=01 RUNNER=slurm    check a lab on a GPU of a Slurm cluster (from a login node)
#   make bench                     rerun the source documents' tables on this GPU (build/bench_results)
#   make bench PUBLISH=1           ... and copy the results into docs/bench for the book
#   make docs                      build the book (Doxygen) into build/docs/html
#   make handout OUT=dir           write the student edition (no solutions/) as a git repository
#   make clean                     remove build/

BUILD  ?= build
PYTHON ?= python3
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
# Where the checkers run: RUNNER=local (the default: this machine's GPUs) or RUNNER=slurm (srun
# for check and grade, one sbatch job array for grade-class). The Slurm settings, as make
# variables or from the environment; those left unset are the cluster's defaults:
#   SLURM_PARTITION, SLURM_ACCOUNT   where the jobs go
#   SLURM_TIME                       a job's time limit (grade-class: each student's; default 30)
#   SLURM_CONCURRENCY                grade-class: at most this many students at once (array %N)
#   SLURM_GRES                       generic resources per job (default gpu:1; empty or none: none)
#   SLURM_CPUS                       CPUs per job, to build the checkers with (default 8)
#   REGRADE=1                        grade-class: grade every student again, not only the missing
RUNNER ?= local
SLURM_SETTINGS = $(if $(SLURM_PARTITION),--partition '$(SLURM_PARTITION)') \
  $(if $(SLURM_ACCOUNT),--account '$(SLURM_ACCOUNT)') $(if $(SLURM_TIME),--time '$(SLURM_TIME)') \
  $(if $(filter undefined,$(origin SLURM_GRES)),,--gres '$(SLURM_GRES)') \
  $(if $(SLURM_CPUS),--cpus '$(SLURM_CPUS)')
RUN_ON  = $(if $(filter-out local,$(RUNNER)),--runner $(RUNNER) $(SLURM_SETTINGS))
GRADE   = $(PYTHON) grading/driver/grade.py --build-dir $(BUILD) $(if $(SEED),--seed $(SEED)) $(RUN_ON)
CLASS_ON = $(if $(RUN_ON),$(RUN_ON) $(if $(SLURM_CONCURRENCY),--concurrency $(SLURM_CONCURRENCY)) $(if $(REGRADE),--regrade))

.PHONY: all grade grade-class check test clean configure deps docs bench handout
all: configure
	cmake --build $(BUILD) --parallel $(JOBS)

configure: $(BUILD)/CMakeCache.txt

# CMake's own output goes to a log: a first `make grade` should fit on a screen.
$(BUILD)/CMakeCache.txt: | deps
	@mkdir -p $(BUILD)
	@echo "configuring $(BUILD) with CMake (its output: $(BUILD)/configure.log)"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release > $(BUILD)/configure.log 2>&1 || \
	  { tail -40 $(BUILD)/configure.log; echo "CMake could not configure $(BUILD): see $(BUILD)/configure.log"; exit 1; }

# The checkers' test framework is doctest, from the system. As root with apt, install it;
# otherwise CMake looks for it and, failing that, downloads its single header. OpenSSL's
# libcrypto (libssl-dev) signs the results: installed the same way; CMake stops if it is missing.
# Bubblewrap (bwrap) builds the runner's minimal view of the files (grading/judge/sandbox.hpp): installed
# the same way; without it the checkers fall back to a sandbox that sees every file, and say so.
deps:
	@command -v cmake >/dev/null || { echo "cmake is missing: install CMake 3.24 or newer"; exit 1; }
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is missing: the grader needs Python 3"; exit 1; }
	@if ! echo '#include <doctest/doctest.h>' | $(CXX) -x c++ -fsyntax-only - >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing doctest-dev, the checkers' test framework"; \
	    (apt-get install -y -qq doctest-dev >/dev/null 2>&1 || \
	     (apt-get update -qq && apt-get install -y -qq doctest-dev >/dev/null)) || true; \
	  fi; \
	fi
	@if ! echo '#include <openssl/hmac.h>' | $(CXX) -x c++ -fsyntax-only - >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing libssl-dev, whose libcrypto signs the checkers' results"; \
	    (apt-get install -y -qq libssl-dev >/dev/null 2>&1 || \
	     (apt-get update -qq && apt-get install -y -qq libssl-dev >/dev/null)) || true; \
	  fi; \
	fi
	@if ! command -v bwrap >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing bubblewrap, which shows the student's code a minimal view of the files"; \
	    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	     (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null 2>&1)) || \
	    echo "bubblewrap could not be installed: the checkers run the student's code without it, and say so"; \
	  fi; \
	fi
# The book and its browser test (make docs, make test) need Doxygen, graphviz, matplotlib, the
# doxygen-awesome-css theme and Debian's Chromium, and the Colab notebook's tests nbclient and
# ipykernel: installed as root with apt when missing; without them those tests skip.
ifneq ($(filter test docs,$(MAKECMDGOALS)),)
	@missing=""; \
	command -v doxygen >/dev/null || missing="$$missing doxygen"; \
	command -v dot >/dev/null || missing="$$missing graphviz"; \
	$(PYTHON) -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || \
	  missing="$$missing python3-matplotlib"; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing="$$missing chromium"; \
	[ -f /usr/share/doxygen-awesome-css/doxygen-awesome.css ] || [ -n "$$DOXYGEN_AWESOME_CSS" ] || \
	  missing="$$missing doxygen-awesome-css"; \
	$(PYTHON) -c 'import nbclient, ipykernel' 2>/dev/null || /usr/bin/python3 -c 'import nbclient, ipykernel' 2>/dev/null || \
	  missing="$$missing python3-nbclient python3-ipykernel"; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing$$missing, for the book (make docs) and its browser test"; \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	   (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null)) || true; \
	fi
endif

grade: configure
	$(GRADE) $(if $(LAB),--lab $(LAB)) $(if $(SOLUTIONS),--solutions) $(if $(SUBMISSION),--submission $(SUBMISSION)) $(if $(PRACTICE_OK),--allow-practice)

grade-class: configure
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade-class SUBMISSIONS=dir"; exit 2; }
	$(PYTHON) grading/driver/grade_class.py --build-dir $(BUILD) --submissions $(SUBMISSIONS) $(if $(SEED),--seed $(SEED)) $(if $(LAB),--lab $(LAB)) $(CLASS_ON)

check: configure
	@test -n "$(LAB)" || { echo "usage: make check LAB=01"; exit 2; }
	$(GRADE) --lab $(LAB) --verbose $(if $(SOLUTIONS),--solutions) $(if $(PRACTICE_OK),--allow-practice)

test: configure
	cmake --build $(BUILD) --parallel $(JOBS)
	cd $(BUILD) && ctest --output-on-failure

# The source documents' tables, rerun with the solutions on this GPU and CPU, beside the figures
# they published: CSV, Markdown and plots in $(BUILD)/bench_results. Without a GPU it says so.
bench: configure
	@test -f bench/CMakeLists.txt || { echo "make bench runs the reference solutions, which the student edition does not hold: run it in the instructor's workbook"; exit 2; }
	cmake --build $(BUILD) --target workbook_bench --parallel $(JOBS)
	$(PYTHON) bench/run_bench.py --bench $(BUILD)/bin/workbook_bench --out $(BUILD)/bench_results $(if $(PUBLISH),--publish)

# The book: the labs' walkthroughs, the common library's reference and the measured figures, as
# one HTML site built by Doxygen with warnings as errors. It needs no configured build: the
# CMake target `docs` runs the same script.
docs: deps
	$(PYTHON) docs/build_docs.py --build-dir $(BUILD)

# The student edition (grading/handout/make_handout.py): labs/, the checkers, the grader, the book
# and the reference solutions compiled for every GPU a student may have, without solutions/, as a
# git repository with one commit in OUT (absent or empty, outside this tree). The reference
# objects are built in $(BUILD)/handout, never in $(BUILD) itself. HANDOUT_ARCHITECTURES=75-real
# builds them for one architecture (a quick try; such a handout runs on that GPU only).
handout: deps
	@test -n "$(OUT)" || { echo "usage: make handout OUT=dir"; exit 2; }
	$(PYTHON) grading/handout/make_handout.py --out '$(OUT)' --build-dir $(BUILD)/handout \
	  $(if $(HANDOUT_ARCHITECTURES),--architectures '$(HANDOUT_ARCHITECTURES)')

clean:
	rm -rf $(BUILD)
