package main

import (
	"encoding/json"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// TestUnionImpliedKind: an arm whose kind is optional (#PathSource: kind?: "path") is the
// arm of an object without kind that holds its required fields (catalog §4.2: "`kind` may
// be omitted: it defaults to [...] `path`"); the decoded arm carries its kind, and
// encoding writes it. An arm whose kind is required is never implied.
func TestUnionImpliedKind(t *testing.T) {
	var s gen.Source
	if err := json.Unmarshal([]byte(`{"path":"/x","format":"text"}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.PathSource == nil || s.PathSource.Kind != "path" || s.PathSource.Path != "/x" || s.Kind() != "path" {
		t.Fatalf("decoded %+v", s)
	}
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), `"kind":"path"`) {
		t.Errorf("encoded %s", b)
	}
	sha := strings.Repeat("a", 64)
	if err := json.Unmarshal([]byte(`{"evidence_id":"`+sha+`"}`), &s); err == nil {
		t.Errorf("an evidence source without kind decoded: %+v", s)
	}
	if err := json.Unmarshal([]byte(`{"kind":"evidence","evidence_id":"`+sha+`"}`), &s); err != nil || s.EvidenceSource == nil {
		t.Errorf("evidence source: %v %+v", err, s)
	}
	if err := json.Unmarshal([]byte(`{"path":"/x","bogus":1}`), &s); err == nil {
		t.Error("an unknown field of a kind-less path source decoded")
	}
	var p gen.PathSource
	p.ApplyDefaults()
	if p.Kind != "path" {
		t.Errorf("PathSource default kind = %q", p.Kind)
	}
}
