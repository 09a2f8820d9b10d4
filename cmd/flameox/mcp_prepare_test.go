package main

import (
	"fmt"
	"testing"

	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/internal/testtool"
)

// TestMCPPrepareProvidersThenCapture walks the retry path of catalog §3.2 through the MCP
// server, every result validated against the advertised compact and rich schemas: a
// py-spy capture on a machine without py-spy is retryable with a call_tool next action,
// prepare_providers installs the pinned collector (from a local index holding a wheel,
// named as py-spy, whose script is a fake collector) and the same call then captures.
func TestMCPPrepareProvidersThenCapture(t *testing.T) {
	testtool.NoPySpyMachine(t)
	dir := t.TempDir()
	s := connect(t, "")
	args := map[string]any{"target": map[string]any{"argv": []string{"sh", "-c", "exit 0"}, "cwd": dir},
		"provider": map[string]any{"kind": "py-spy"}}

	res, isErr := s.call("capture_and_rank_cpu_hotspots", args)
	if isErr || res["status"] != "retryable" || res["code"] != "UNAVAILABLE_CAPABILITY" || res["retryable"] != true {
		t.Fatalf("capture without py-spy = %v", res)
	}
	next := res["next_action"].(map[string]any)
	if next["kind"] != "call_tool" || next["tool"] != "prepare_providers" || next["then_retry"] != "capture_and_rank_cpu_hotspots" {
		t.Fatalf("next_action = %v", next)
	}

	prep, isErr := s.call(next["tool"].(string), next["arguments"])
	if isErr || prep["status"] != "complete" || prep["activation_status"] != "ready" || prep["next_action"] != nil {
		t.Fatalf("prepare_providers = %v", prep)
	}
	if got := prep["prepared_managed_providers"].([]any); len(got) != 1 || got[0] != "py-spy" {
		t.Errorf("prepared = %v", got)
	}

	res, isErr = s.call(next["then_retry"].(string), args)
	if isErr || res["status"] != "complete" || len(rows(res)) != 3 {
		t.Fatalf("retried capture = %v", res)
	}

	// Unknown ids are the catalog's INVALID_INPUT naming the id and the choices.
	bad, isErr := s.call("prepare_providers", map[string]any{"provider_ids": []string{"valgrind"}})
	if !isErr || bad["code"] != "INVALID_INPUT" || bad["message"] != `unknown provider "valgrind"; choose one of: aiperf, compute-sanitizer, memray, nsight-compute, nsight-systems, nvbench, otlp, perf, perfetto, py-spy, rocprofv3, torch, triton` {
		t.Errorf("unknown provider = %v", bad)
	}
}

// TestMCPPrepareMemrayThenAnalyze: memray's reader is a managed provider. Reading a memray
// capture (as the FAKE memray writes it) where python3 has no memray is retryable with a
// call_tool next action naming prepare_providers {provider_ids: ["memray"]} and the
// analysis tool; preparing installs a wheel named as memray (the FAKE memray package,
// reporting the pinned version) from a local index, and the retried call reads the
// capture with the prepared environment.
func TestMCPPrepareMemrayThenAnalyze(t *testing.T) {
	capture := testtool.NoMemrayMachine(t, prepare.MemrayVersion)
	s := connect(t, "")
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": capture}}}

	res, isErr := s.call("rank_retained_memory", args)
	if isErr || res["status"] != "retryable" || res["code"] != "UNAVAILABLE_CAPABILITY" {
		t.Fatalf("analysis without memray = %v", res)
	}
	next := res["next_action"].(map[string]any)
	if next["kind"] != "call_tool" || next["tool"] != "prepare_providers" || next["then_retry"] != "rank_retained_memory" ||
		fmt.Sprint(next["arguments"]) != "map[provider_ids:[memray]]" {
		t.Fatalf("next_action = %v", next)
	}
	prep, isErr := s.call(next["tool"].(string), next["arguments"])
	if isErr || prep["activation_status"] != "ready" || fmt.Sprint(prep["prepared_managed_providers"]) != "[memray]" {
		t.Fatalf("prepare_providers = %v", prep)
	}
	res, isErr = s.call(next["then_retry"].(string), args)
	if isErr || res["status"] != "complete" || len(rows(res)) != 2 {
		t.Fatalf("retried analysis = %v", res)
	}
	if p := res["provider"].(map[string]any); p["id"] != "memray" || p["version"] != prepare.MemrayVersion {
		t.Errorf("provider = %v", p)
	}
}
