package repository

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
)

// TestQueryPrefilterNeverDropsAMatch: the raw-byte pre-filter only skips manifests that
// cannot match. Every filter returns exactly the manifests a full decode of each one
// selects.
func TestQueryPrefilterNeverDropsAMatch(t *testing.T) {
	dir := t.TempDir()
	s := Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
	var inputs []string
	for i := range 12 {
		p := writeFile(t, dir, fmt.Sprintf("in%d.txt", i), fmt.Sprintf("input %d\n", i))
		b := testBundle(p)
		b.CreatedAt = fixedTime.Add(time.Duration(i) * time.Hour)
		if i%3 == 0 {
			b.Provider.ID = "pstats"
			b.Operation, b.AnalysisRequest.Operation = gen.OperationNameRankCPUHotspots, gen.OperationNameRankCPUHotspots
		}
		if i%4 == 0 {
			b.Kind, b.CaptureRequest = "capture", map[string]any{"target": map[string]any{"provider_id": "cprofile"}}
		}
		if _, f := s.Publish(b); f != nil {
			t.Fatal(f)
		}
		inputs = append(inputs, b.Sources[0].SHA256)
	}
	ids, f := s.Inventory()
	if f != nil {
		t.Fatal(f)
	}
	str := func(v string) *string { return &v }
	at := func(h int) *time.Time { x := fixedTime.Add(time.Duration(h) * time.Hour); return &x }
	filters := []Filter{
		{}, {Kind: str("capture")}, {Kind: str("analysis")}, {Operation: str("rank_cpu_hotspots")},
		{ProviderID: str("pstats")}, {ProviderID: str("cprofile")}, {ProviderID: str("nope\"quote")},
		{InputSHA256: str(inputs[5])}, {CreatedAfter: at(3), CreatedBefore: at(7)},
		{Kind: str("capture"), ProviderID: str("cprofile"), CreatedAfter: at(4)},
	}
	for _, flt := range filters {
		var want []string
		for _, id := range ids {
			ev, f := s.readBundle(id, LevelManifest)
			if f != nil {
				t.Fatal(f)
			}
			if flt.matches(&ev.Manifest.Body) {
				want = append(want, id)
			}
		}
		page, f := s.Query(flt, "", 50)
		if f != nil {
			t.Fatal(f)
		}
		var got []string
		for _, e := range page.Evidence {
			got = append(got, e.EvidenceID)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("filter %+v (-full decode +query):\n%s", flt, d)
		}
	}
}
