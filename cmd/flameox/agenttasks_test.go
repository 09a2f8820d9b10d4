package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentTask is one question an agent asks of a real artifact, the tool call that answers
// it, and what that costs: the calls (following next_page) and the bytes of text the
// agent reads. The costs are upper bounds that CI checks; docs/agent-tasks.md states them
// (issue 32, item 6).
type agentTask struct {
	id, question, tool, file string
	args                     map[string]any
	// calls is how many calls the answer needs: 1, or 0 for every page (next_page
	// followed to the end).
	calls int
	// maxBytes bounds the text of all the calls together, with the corpus directory
	// counted as "$CORPUS".
	maxBytes int
	// answer reads the answer from the results; "" fails the task.
	answer func(results []map[string]any) string
}

func firstRow(res []map[string]any) map[string]any {
	blocks, _ := res[0]["blocks"].([]any)
	for _, b := range blocks {
		blk, _ := b.(map[string]any)
		if rows, ok := blk["rows"].([]any); ok && len(rows) > 0 {
			r, _ := rows[0].(map[string]any)
			return r
		}
	}
	return nil
}

func taskRows(res []map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range res {
		blocks, _ := r["blocks"].([]any)
		for _, b := range blocks {
			blk, _ := b.(map[string]any)
			rows, _ := blk["rows"].([]any)
			for _, row := range rows {
				if m, ok := row.(map[string]any); ok {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

func metric(res map[string]any, name string) any {
	blocks, _ := res["blocks"].([]any)
	for _, b := range blocks {
		blk, _ := b.(map[string]any)
		if v, ok := blk["values"].(map[string]any); ok {
			if m, ok := v[name]; ok {
				return m
			}
		}
	}
	return nil
}

// fields renders a row's named fields "a=1 b=x", or "" when the row lacks one.
func fields(r map[string]any, names ...string) string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, n := range names {
		v, ok := r[n]
		if !ok || v == nil {
			return ""
		}
		s := fmt.Sprint(v)
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		parts = append(parts, n+"="+s)
	}
	return strings.Join(parts, " ")
}

var agentTasks = []agentTask{
	{id: "top-kernel", question: "Which GPU kernel took the most time in this PyTorch trace, how often did it run, and which operator launched it?",
		tool: "summarize_trace_operations", file: "hta__kineto-simple-add-a100.pt.trace.json.gz",
		args: map[string]any{"event_kind": []string{"kernel"}, "page_size": 1}, calls: 1, maxBytes: 3400,
		answer: func(r []map[string]any) string {
			return fields(firstRow(r), "operation", "call_count", "total_duration_ns", "launch_op_name")
		}},
	{id: "top-cuda-api", question: "Which CUDA API call took the most time in this Nsight Systems export?",
		tool: "summarize_trace_operations", file: "nsightful__nsys-power_iteration.sqlite",
		args: map[string]any{"category": []string{"runtime"}, "page_size": 1}, calls: 1, maxBytes: 3000,
		answer: func(r []map[string]any) string {
			return fields(firstRow(r), "operation", "call_count", "total_duration_ns")
		}},
	{id: "slowest-span", question: "Which operation of this OpenTelemetry trace took the most time?",
		tool: "summarize_trace_operations", file: "otlp__trace.json",
		args: map[string]any{"page_size": 1}, calls: 1, maxBytes: 1700,
		answer: func(r []map[string]any) string {
			return fields(firstRow(r), "operation", "call_count", "total_duration_ns")
		}},
	{id: "cpu-hotspot", question: "Which function of this cProfile run has the most self time?",
		tool: "rank_cpu_hotspots", file: "gprof2dot__print1.pstats",
		args: map[string]any{"page_size": 1}, calls: 1, maxBytes: 2200,
		answer: func(r []map[string]any) string { return fields(firstRow(r), "function", "file", "self_time_seconds") }},
	{id: "top-allocation", question: "Which allocation site holds the most bytes in this heap profile?",
		tool: "rank_allocation_hotspots", file: "local__node_heap_prof_interval4096.heapprofile",
		args: map[string]any{"page_size": 1}, calls: 1, maxBytes: 2400,
		answer: func(r []map[string]any) string { return fields(firstRow(r), "function") }},
	{id: "sanitizer-errors", question: "How many errors did Compute Sanitizer report, and is the log complete?",
		tool: "inspect_sanitizer_failures", file: "h200__sanitizer-memcheck-oob.xml",
		args: map[string]any{"page_size": 1}, calls: 1, maxBytes: 3000,
		answer: func(r []map[string]any) string {
			n, t := metric(r[0], "error_count"), metric(r[0], "possibly_truncated")
			if n == nil || t == nil {
				return ""
			}
			return fmt.Sprintf("error_count=%v possibly_truncated=%v", n, t)
		}},
	{id: "coverage-size", question: "How many files and lines did this coverage.py run measure?",
		tool: "summarize_coverage", file: "local__coverage_py_branch.coverage",
		args: map[string]any{"page_size": 1}, calls: 1, maxBytes: 2400,
		answer: func(r []map[string]any) string {
			f, l := metric(r[0], "file_count"), metric(r[0], "line_count")
			if f == nil || l == nil {
				return ""
			}
			return fmt.Sprintf("file_count=%v line_count=%v", f, l)
		}},
	{id: "triton-best", question: "Which Triton autotune configuration was chosen?",
		tool: "inspect_triton_autotune", file: "h200__triton-add.autotune.json",
		args: map[string]any{"page_size": 1}, calls: 1, maxBytes: 2600,
		answer: func(r []map[string]any) string { return fields(firstRow(r), "chosen_index", "chosen_timing_ms") }},
	// cuBLAS's nvjet kernel is the GEMM: its launch row carries its throughputs, occupancy
	// and rules, the largest estimated speedup first.
	{id: "ncu-gemm", question: "What limits the GEMM in this Nsight Compute export?",
		tool: "inspect_gpu_kernel_metrics", file: "h200__ncu-torch-matmul-gelu-details.csv",
		args: map[string]any{"page_size": 3}, calls: 1, maxBytes: 13000,
		answer: func(r []map[string]any) string {
			for _, row := range taskRows(r) {
				if k, _ := row["kernel"].(string); strings.HasPrefix(k, "nvjet") {
					rules, _ := row["rules"].([]any)
					if len(rules) == 0 {
						return ""
					}
					top, _ := rules[0].(map[string]any)
					return fields(row, "launch_id", "compute_throughput_pct", "theoretical_occupancy_pct") + " " + fields(top, "rule", "estimated_speedup")
				}
			}
			return ""
		}},
}

// TestAgentTasks answers each task through the MCP server over the corpus artifacts and
// fails when one needs more calls or more bytes of text than it states, or gives no
// answer; docs/agent-tasks.md must state the same bounds.
func TestAgentTasks(t *testing.T) {
	dir := corpusDir(t)
	doc, err := os.ReadFile("../../docs/agent-tasks.md")
	if err != nil {
		t.Fatal(err)
	}
	s := connect(t, `{"max_rows":1000,"max_result_bytes":67108864}`)
	for _, task := range agentTasks {
		t.Run(task.id, func(t *testing.T) {
			args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": filepath.Join(dir, task.file)}}}
			for k, v := range task.args {
				args[k] = v
			}
			var results []map[string]any
			bytes := 0
			var next any = args
			for next != nil && (task.calls == 0 || len(results) < task.calls) {
				res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: task.tool, Arguments: next})
				if err != nil {
					t.Fatal(err)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if res.IsError {
					t.Fatalf("%s failed: %s", task.tool, text)
				}
				// The corpus directory differs between machines: it is counted as $CORPUS.
				bytes += len(strings.ReplaceAll(text, dir, "$CORPUS"))
				var v map[string]any
				if err := json.Unmarshal([]byte(text), &v); err != nil {
					t.Fatal(err)
				}
				results = append(results, v)
				next = nil
				if np, ok := v["next_page"].(map[string]any); ok && task.calls == 0 {
					next = np["arguments"]
				}
				if len(results) > 20 {
					t.Fatal("more than 20 calls")
				}
			}
			answer := task.answer(results)
			t.Logf("%s: %d calls, %d bytes: %s", task.id, len(results), bytes, answer)
			if answer == "" {
				t.Errorf("no answer in the results")
			}
			if task.calls > 0 && len(results) > task.calls {
				t.Errorf("%d calls, the task states %d", len(results), task.calls)
			}
			if bytes > task.maxBytes {
				t.Errorf("%d bytes of text, the task states at most %d", bytes, task.maxBytes)
			}
			calls := fmt.Sprint(task.calls)
			if task.calls == 0 {
				calls = fmt.Sprint(len(results))
			}
			row := fmt.Sprintf("| %s | `%s` | %s | %d |", task.id, task.tool, calls, task.maxBytes)
			if !strings.Contains(string(doc), row) {
				t.Errorf("docs/agent-tasks.md lacks the row %q", row)
			}
		})
	}
}
