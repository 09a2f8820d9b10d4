package runtime

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/contracts"
	gen "github.com/flameox/flameox/generated/contracts"
)

// TestCatalogTableIsCatalogJSON: the table the runtime loads its catalog from
// (gen.CatalogTools) holds exactly the tools of contracts/catalog.json, in order, and the
// loaded runtime has them.
func TestCatalogTableIsCatalogJSON(t *testing.T) {
	b, err := fs.ReadFile(contracts.FS, "catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Tools []gen.CatalogTool `json:"tools"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	want := cat.Tools
	if diff := cmp.Diff(want, gen.CatalogTools); diff != "" {
		t.Errorf("gen.CatalogTools differs from catalog.json (-json +table):\n%s", diff)
	}
	rt := newRuntime(t)
	if len(rt.Tools()) != len(want) {
		t.Fatalf("the runtime has %d tools, the catalog %d", len(rt.Tools()), len(want))
	}
	for i, tool := range rt.Tools() {
		w := want[i]
		if tool.Name != w.Name || tool.Description != w.Description || tool.Toolset != w.Toolset ||
			!cmp.Equal(tool.Annotations, w.Annotations) || !cmp.Equal(tool.CaptureProviders, w.CaptureProviders) {
			t.Errorf("tool %d: %s, want %s", i, tool.Name, w.Name)
		}
		in, _ := fs.ReadFile(contracts.FS, w.InputSchema)
		if string(tool.InputSchema()) != string(in) {
			t.Errorf("%s: the input schema is not %s", tool.Name, w.InputSchema)
		}
	}
}
