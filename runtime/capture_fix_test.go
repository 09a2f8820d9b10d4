package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// limitKinds reads the execution limit kinds a capture result may carry from the
// published result schema, so that a kind added to the contract needs a fix here.
func limitKinds(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../contracts/tools/capture_and_preview_artifact.result.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		AnyOf []struct {
			Properties struct {
				Capture struct {
					Properties struct {
						Executions struct {
							Items struct {
								Properties struct {
									Limit struct {
										AnyOf []struct {
											Properties struct {
												Kind struct {
													Enum []string `json:"enum"`
												} `json:"kind"`
											} `json:"properties"`
										} `json:"anyOf"`
									} `json:"limit"`
								} `json:"properties"`
							} `json:"items"`
						} `json:"executions"`
					} `json:"properties"`
				} `json:"capture"`
			} `json:"properties"`
		} `json:"anyOf"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	kinds := s.AnyOf[0].Properties.Capture.Properties.Executions.Items.Properties.Limit.AnyOf[0].Properties.Kind.Enum
	if len(kinds) < 5 {
		t.Fatalf("limit kinds = %v", kinds)
	}
	return kinds
}

// TestEveryExecutionLimitHasAFix: whichever bound stopped the first failed execution,
// the capture's fix names it with its configured value and says what to change (issue
// 33 item 2: the message "says what failed and what to change"); a task storm (issue
// 40: a fork loop held its bound without end) names the task bound's variable.
func TestEveryExecutionLimitHasAFix(t *testing.T) {
	wants := map[string][]string{
		"timeout":                  {"target.budget.timeout_seconds (7 s)"},
		"output_limit":             {"limits.max_output_bytes (7 bytes)"},
		"memory_limit_exceeded":    {"target.budget.max_memory_bytes (7 bytes)"},
		"writable_limit_exceeded":  {"limits.max_output_bytes (7 bytes)"},
		"storage_reserve_exceeded": {"(7 bytes free)", "free disk space"},
		"task_limit_exceeded":      {"task bound (7 tasks)", "FLAMEOX_MAX_TASKS"},
	}
	for _, kind := range limitKinds(t) {
		t.Run(kind, func(t *testing.T) {
			want, ok := wants[kind]
			if !ok {
				t.Fatalf("no expectation for the contract's limit kind %q", kind)
			}
			code := "LIMIT_EXCEEDED"
			if kind == "timeout" {
				code = "EXECUTION_TIMEOUT"
			}
			out := &CaptureResult{Capture: gen.CaptureRecord{Executions: []gen.Execution{{Sequence: 1, Limit: &gen.ExecutionLimit{Kind: kind, Configured: 7}}}},
				WorkloadFailure: &gen.WorkloadFailure{Sequence: 1, Case: "baseline", Code: code, ReturncodeScope: "workload", LimitKind: &kind}}
			fix := executionFix(out, false)
			if fix == nil {
				t.Fatal("no fix")
			}
			for _, w := range want {
				if !strings.Contains(fix.Message, w) {
					t.Errorf("fix %s %q lacks %q", fmt.Sprint(fix.FieldPath), fix.Message, w)
				}
			}
		})
	}
}
