GO ?= go
CUE := $(GO) tool cue

.PHONY: all build dist generate check-generated test test-short test-e2e bench fuzz e2e-deps update-golden

all: build

build:
	$(GO) build -o bin/flameox ./cmd/flameox

# dist builds the release binaries into dist/: cmd/flameox for linux, darwin and windows
# on amd64 and arm64, static (CGO_ENABLED=0) and reproducible (-trimpath, no VCS stamp, no
# build id: the same Go toolchain gives the same bytes), named
# flameox_<version>_<os>_<arch>[.exe], with dist/SHA256SUMS (sha256sum -c checks it).
# DIST_TARGETS=linux/amd64,darwin/arm64 builds fewer (tools/dist, decision 0062).
DIST_TARGETS ?=
dist:
	$(GO) run ./tools/dist -go "$(GO)" -out dist $(if $(DIST_TARGETS),-targets $(DIST_TARGETS))

# generate turns the CUE contracts into contracts/ (JSON Schemas, catalog, the viewer's
# openapi.json, which the viewer routes by: decision 0070) and generated/contracts (Go
# types, enums, unions, registry).
generate:
	$(CUE) vet -c=false ./cue/contracts
	$(GO) run ./tools/contractgen -pkg ./cue/contracts -contracts contracts -go generated/contracts
	gofmt -l generated | (! grep .)

# check-generated fails when the checked-in output differs from a fresh generation.
check-generated: generate
	git diff --exit-code -- contracts generated
	test -z "$$(git status --porcelain -- contracts generated)"

e2e-deps:
	cd e2e && npm ci --no-audit --no-fund

test:
	$(GO) vet ./...
	$(GO) test -timeout 30m ./...

# test-short is the inner loop: real tools' runs and the largest inputs are the full suite's.
test-short:
	$(GO) test -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./...

# fuzz runs every native fuzz target for FUZZTIME each, one worker, one target at a time
# (tools/fuzz.sh). `make test` already runs their seeds; this is the longer run on demand.
FUZZTIME ?= 20s
fuzz:
	GO="$(GO)" FUZZTIME="$(FUZZTIME)" tools/fuzz.sh

update-golden:
	$(GO) test ./cmd/flameox -run TestScripts -update
