# sluice — build, run, test.
GO      ?= go
BIN     := bin/sluice
SF      ?= 1
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
# The Go runtime hands freed heap pages back with MADV_FREE instead of its
# default MADV_DONTNEED, so a query that regrows the heap reuses them
# without page faults (docs/operations.md, "Memory and profiling");
# GODEBUG=madvdontneed=1 at run time restores the default.
RUNTIME_LDFLAGS := -X runtime.godebugDefault=madvdontneed=0
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) $(RUNTIME_LDFLAGS)
PREFIX  ?= /usr/local

.PHONY: build run test vet bench bench-engine clean install fuzz

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

# Install bin/sluice as $(DESTDIR)$(PREFIX)/bin/sluice (PREFIX defaults to
# /usr/local; DESTDIR stages it for a package).
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/sluice

# Start the shell with the TPC-H tables registered (generated on first use).
run: build
	./$(BIN) --tpch $(SF)

# staticcheck, pinned to v0.8.2 (the newest release; it supports Go 1.26);
# go run builds it once into the build cache.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet:
	$(GO) vet ./...
	GOFLAGS= $(GO) run $(STATICCHECK) ./...

# Everything: vet, unit tests, sqllogictest files and TPC-H SF 1 against the
# official answers (SF 1 is generated once into .cache/). Freed column
# buffers are poisoned, so a use after release shows as a wrong answer.
#
# Then the differential test (bench/duckdb, its own module): 1000 generated
# queries on sluice in process, blocking and pipelined against DuckDB on a
# sample of the TPC-DS tables in $(TPCDS) (skipped without them), and 250
# on a sample of TPC-H SF 1 (.cache/tpch-sf1). And a client written with
# database/sql and the ADBC Flight SQL driver (clients/adbc, its own module)
# runs the 22 TPC-H queries against `sluice serve` in both modes.
#
# The packages whose tests run schedulers, executors and exchanges
# concurrently run again under the race detector (about 2 minutes), and so
# do the session's tests of a client talking to a cluster (pipelined
# streaming, cancel, idle and slow clients, errors, EXPLAIN ANALYZE) and
# its in-process sqllogictest run (under a minute); its TPC-H, TPC-DS and
# cluster sqllogictest runs would take far longer under it.
DIFF_QUERIES ?= 1000
RACE_PKGS    ?= ./scheduler/ ./exchange/ ./cluster/
RACE_SESSION ?= TestExplainAnalyze|TestRelativeLocation|TestRecreatedTable|TestQueryErrorsReadClean|TestMemoryCapFailsQuery|TestIdleClient|TestSlowClient|TestParquetUnsupported|TestPipelined|TestZeroColumn|TestPanicInQueryCode|TestSQLLogic$$
test: vet build
	SLUICE_ALLOC_POISON=1 SLUICE_TEST_S3_TPCH=1 $(GO) test -timeout 60m -p 1 ./...
	SLUICE_ALLOC_POISON=1 $(GO) test -race -timeout 30m -p 1 $(RACE_PKGS)
	SLUICE_ALLOC_POISON=1 $(GO) test -race -timeout 30m -run '$(RACE_SESSION)' ./session/
	cd bench/duckdb && SLUICE_ALLOC_POISON=1 SLUICE_TPCDS=$(abspath $(TPCDS)) SLUICE_DIFF_QUERIES=$(DIFF_QUERIES) \
		$(GO) test -tags duckdb_arrow -timeout 20m -run "TestDifferential|TestCompareRows" ./...
	cd clients/adbc && SLUICE_BIN=$(abspath $(BIN)) $(GO) test -timeout 20m ./...

# Long randomized testing for FUZZ_DURATION (default 30m: whole s, m or
# h): two thirds to the differential test from a random first seed
# (SLUICE_DIFF_SEED=N to choose it; a failure prints each query's seed to
# replay it), the rest shared by every Go fuzz target (FuzzXxx) in the
# repository. See .ci/fuzz.
FUZZ_DURATION ?= 30m
fuzz:
	FUZZ_DURATION=$(FUZZ_DURATION) TPCDS=$(abspath $(TPCDS)) GO=$(GO) .ci/fuzz

# TPC-H at SF: blocking vs pipelined on an embedded cluster, then the DuckDB
# peer (its own module, bench/duckdb) on the same Parquet files, merged into
# $(BENCH_OUT)/results.json, table.md and chart.svg.
#
# Then the same tables as DuckDB's Parquet writer writes them at its
# defaults (every column OPTIONAL, its own encodings and row groups;
# rewritten once by the peer into $(FOREIGN_TPCH)), the 22 queries in the
# same modes and on DuckDB, into $(BENCH_OUT)/duckdb-files.
#
# Then, when $(TPCDS) holds the TPC-DS tables (data/<table>.parquet) and
# queries (queries/qN.sql), TPC-DS in blocking, pipelined and in process,
# and DuckDB on the same files, into $(BENCH_OUT)/tpcds.
#
# Every query's warm-up run in each mode is checked against $(ANSWERS): the
# kit's official answers at SF 1; at other scale factors, which the kit has
# no answers for, DuckDB's answers on the same files (written once by the
# peer into $(ANSWERS)). FOREIGN=0 skips the DuckDB-written files pass.
#
# TPC-DS takes TPCDS_RUNS timed runs per query and mode: its report
# compares each query's cluster time with its in-process time against
# 1.15x, and between two runs of the same build a query's ratio moved by
# 0.12 on average with medians of three, by 0.06 with medians of seven.
RUNS      ?= 3
TPCDS_RUNS ?= 7
BENCH_OUT ?= bench-results
TPCH_DATA ?= $(HOME)/.cache/sluice/tpch-sf$(SF)
FOREIGN_TPCH ?= $(HOME)/.cache/sluice/tpch-sf$(SF)-duckdb
FOREIGN   ?= 1
ANSWERS   ?= $(if $(filter 1,$(SF)),testdata/tpch/answers-sf1,$(HOME)/.cache/sluice/tpch-sf$(SF)-answers-duckdb)
TPCDS     ?= ../shared/tpcds
bench: build
	@[ -f "$(TPCH_DATA)/.complete" ] || ./$(BIN) tpch gen --sf $(SF) --out "$(TPCH_DATA)"
	@if (cd bench/duckdb && $(GO) build -tags duckdb_arrow -o ../../bin/sluice-bench-duckdb .); then \
		[ -f "$(ANSWERS)/q22.out" ] || ./bin/sluice-bench-duckdb --sf $(SF) --data "$(TPCH_DATA)" --queries testdata/tpch --answers "$(ANSWERS)"; \
	else \
		echo "make bench: the DuckDB peer (bench/duckdb) did not build; $(BENCH_OUT) has sluice's modes only" >&2; \
	fi
	./$(BIN) bench tpch --sf $(SF) --runs $(RUNS) --out $(BENCH_OUT) $$([ -f "$(ANSWERS)/q22.out" ] && echo --answers "$(ANSWERS)")
	@if [ -x bin/sluice-bench-duckdb ]; then \
		./bin/sluice-bench-duckdb --sf $(SF) --runs $(RUNS) --queries testdata/tpch --streaming testdata/streaming --out $(BENCH_OUT)/duckdb.json && \
		./$(BIN) bench merge $(BENCH_OUT)/results.json $(BENCH_OUT)/duckdb.json && \
		if [ "$(FOREIGN)" = 1 ]; then \
		{ [ -f "$(FOREIGN_TPCH)/.complete" ] || ./bin/sluice-bench-duckdb --sf $(SF) --rewrite "$(FOREIGN_TPCH)"; } && \
		./$(BIN) bench tpch --sf $(SF) --data "$(FOREIGN_TPCH)" --runs $(RUNS) --streaming=false --latency 0 --out $(BENCH_OUT)/duckdb-files && \
		./bin/sluice-bench-duckdb --sf $(SF) --data "$(FOREIGN_TPCH)" --runs $(RUNS) --queries testdata/tpch --out $(BENCH_OUT)/duckdb-files/duckdb.json && \
		./$(BIN) bench merge $(BENCH_OUT)/duckdb-files/results.json $(BENCH_OUT)/duckdb-files/duckdb.json; \
		fi; \
	fi
	@if [ -d "$(TPCDS)/data" ] && [ -d "$(TPCDS)/queries" ]; then \
		./$(BIN) bench tpcds --data $(TPCDS)/data --queries $(TPCDS)/queries --runs $(TPCDS_RUNS) --out $(BENCH_OUT)/tpcds && \
		if [ -x bin/sluice-bench-duckdb ]; then \
			./bin/sluice-bench-duckdb --suite tpcds --data $(TPCDS)/data --queries $(TPCDS)/queries --runs $(TPCDS_RUNS) --out $(BENCH_OUT)/tpcds/duckdb.json && \
			./$(BIN) bench merge $(BENCH_OUT)/tpcds/results.json $(BENCH_OUT)/tpcds/duckdb.json; \
		fi; \
	else \
		echo "make bench: no TPC-DS tables in $(TPCDS) (set TPCDS=DIR); TPC-DS skipped" >&2; \
	fi

# Per-query TPC-H SF 1 times of the in-process engine (GOGC=200 as the
# sluice binary sets it).
bench-engine:
	GOGC=200 $(GO) test -ldflags "$(RUNTIME_LDFLAGS)" -run '^$$' -bench BenchmarkTPCH -benchtime 3x -timeout 60m ./session/

clean:
	rm -rf bin .cache

# Regenerate the protobuf and gRPC code in rpc/ (committed). Needs protoc
# (Debian: protobuf-compiler); the Go plugins are pinned here.
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
.PHONY: proto
proto:
	GOFLAGS= $(GO) install $(PROTOC_GEN_GO)
	GOFLAGS= $(GO) install $(PROTOC_GEN_GO_GRPC)
	cd rpc && PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc -I . \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		plan.proto scheduler.proto executor.proto
