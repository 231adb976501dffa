# toolmesh — build, test, lint, bench, fuzz. Needs only Go; tools it uses are
# fetched by `go run` at pinned versions.

GO        ?= go
PKGS      := ./...
FUZZTIME  ?= 30s
BENCHTIME ?= 2s

.PHONY: all build test test-sdk test-identity lint vet fmt-check bench docs-bench bench-catalogue fuzz fuzz-smoke interop-mcp flood

all: build test

# -buildvcs=auto stamps the commit for `toolmesh --version` even where the
# environment's GOFLAGS turn VCS stamping off.
# toolmesh-sandbox is the small helper a worker starts in front of each
# sandboxed program (the toolmesh binary can serve too, but starts slower).
build:
	$(GO) build -buildvcs=auto -o bin/toolmesh ./cmd/toolmesh
	$(GO) build -buildvcs=auto -o bin/toolmesh-sandbox ./cmd/toolmesh-sandbox

# The README's test command, and exactly what .ci/run calls.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 9m $(PKGS)

# The honest floods at full size: 20,000 CLI calls at 2 `toolmesh worker`s
# on a stock nats-server, with and without a kill -9, to show every call
# still ends with a true outcome. Opt-in, since they take a few minutes of
# a 2-core box; `make test` runs small versions.
flood:
	TOOLMESH_FLOOD=1 TOOLMESH_REQUIRE_NATS_SERVER=1 $(GO) test -count=1 -timeout 20m -v -run '^TestHonestFlood' ./tests/

# Provider output decoded by the official OpenAI, Anthropic and Gemini SDKs;
# its own module (tests/providersdk) so the product never depends on them.
test-sdk:
	cd tests/providersdk && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# Identity against a real OpenID provider (zitadel/oidc's op package):
# the gateway as an OAuth resource server, people on the mesh through
# auth callout. Its own module (tests/identity) so the product never
# depends on the provider.
test-identity:
	cd tests/identity && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 8m ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The library also vets for macOS, so Linux-only code (namespaces,
# Landlock) stays behind build tags and `go get` works there.
vet:
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)

lint: fmt-check vet

# Benchmarks report each toolmesh figure beside raw NATS measured in the same run:
# `toolmesh bench` gives every row's target as a ratio to its raw peer in one run
# (its memory row needs the built binary: worker and caller in processes of their own),
# then the Go benchmarks and the spawn benchmark.
BENCHFLAGS ?=
# `toolmesh bench` comes first: its table is docs/performance.md's.
bench: build
	bin/toolmesh bench $(BENCHFLAGS)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem ./tests/...
	$(GO) test -run '^$$' -bench Spawn -benchtime 1x ./worker/cli/

# docs/performance.md's tables come from one run of `toolmesh bench`,
# with the machine, the date and the load before and after written beside
# them, so the page never mixes figures of different runs.
docs-bench: build
	@tmp=$$(mktemp -d); load0=$$(cut -d' ' -f1-3 /proc/loadavg); \
	bin/toolmesh bench --json $(BENCHFLAGS) > $$tmp/bench.json && \
	$(GO) run ./cmd/toolmesh/internal/bench/benchdoc -in $$tmp/bench.json \
		-date "$$(date -u +%Y-%m-%d)" -machine "$$(nproc) cores ($$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))" \
		-load "$$load0 before, $$(cut -d' ' -f1-3 /proc/loadavg) after"; \
	rc=$$?; rm -rf $$tmp; exit $$rc

# The catalogue at fleet scale (docs/performance.md): how fast
# Watch shows a new and a killed worker among 1,000 simulated ones, and the
# caller's CPU for a catalogue beside a raw gather, so discovery's cost is
# known before a fleet grows. BIG_FLEET=1 adds 5,000
# workers (a few minutes of a 2-core box); BIG_FLEET=5000,10000 lists sizes.
BIG_FLEET ?=
bench-catalogue:
	TOOLMESH_BIG_FLEET=$(BIG_FLEET) $(GO) test -run '^$$' -bench 'BenchmarkWatchFleet|BenchmarkCatalogCallerCPU' -benchtime 7x -timeout 30m ./tests/

# Fuzz every decoder for FUZZTIME each (go test -fuzz takes one target at a time).
fuzz:
	@for pkg in ./envelope ./envelope/provider ./mesh ./internal/wire ./internal/argtemplate ./caller ./worker ./worker/cli ./internal/mcp/bridge ./internal/redact; do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep ^Fuzz); do \
			echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# MCP interop with software nobody here wrote: the official TypeScript SDK
# client, @modelcontextprotocol/server-everything, server-memory and
# server-filesystem, and the official conformance suite (directly against
# our fixture server and through the mesh), installed by npm into
# a temporary directory. Needs node and npm; `make test` does not.
interop-mcp:
	TOOLMESH_INTEROP_MCP=1 $(GO) test -race -count=1 -p 1 -timeout 15m -run '^TestMCPInterop' ./tests/
