package repository

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
)

// Filter selects manifests; nil fields match everything. Times are inclusive.
type Filter struct {
	Kind          *string
	Operation     *string
	ProviderID    *string
	InputSHA256   *string
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
}

// Digest identifies the filter for cursors: the SHA-256 of its canonical form with times
// in UTC RFC 3339.
func (f Filter) Digest() string {
	t := func(x *time.Time) any {
		if x == nil {
			return nil
		}
		return x.UTC().Format(time.RFC3339Nano)
	}
	s := func(x *string) any {
		if x == nil {
			return nil
		}
		return *x
	}
	d, err := canon.Digest(map[string]any{
		"evidence_kind": s(f.Kind), "operation": s(f.Operation), "provider_id": s(f.ProviderID),
		"input_sha256": s(f.InputSHA256), "created_after": t(f.CreatedAfter), "created_before": t(f.CreatedBefore),
	})
	if err != nil {
		panic(err)
	}
	return d
}

// Page is one page of a query.
type Page struct {
	Evidence        []gen.EvidenceSummary
	InventoryDigest string
	InventorySize   int
	// NextOffset is the inventory index of the first match after this page, or -1.
	NextOffset int
}

// cursor is the decoded query cursor.
type cursor struct {
	Inventory string `json:"inventory"`
	Query     string `json:"query"`
	Offset    int64  `json:"offset"`
}

// EncodeCursor returns the opaque cursor for offset in the inventory and filter given.
func EncodeCursor(inventory, query string, offset int) string {
	b, err := canon.Marshal(cursor{inventory, query, int64(offset)})
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Query returns up to limit summaries of manifests that match f, scanning the sorted
// inventory from the position the cursor names (the start when it is empty). A cursor
// from another filter or another inventory is INVALID_INPUT.
func (s *Store) Query(f Filter, tok string, limit int) (*Page, *failure.Failure) {
	ids, inv, fail := s.InventorySnapshot()
	if fail != nil {
		return nil, fail
	}
	page := &Page{InventoryDigest: inv, InventorySize: len(ids), NextOffset: -1, Evidence: []gen.EvidenceSummary{}}
	offset := 0
	if tok != "" {
		var c cursor
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err == nil {
			err = json.Unmarshal(raw, &c)
		}
		switch {
		case err != nil:
			return nil, failure.Invalid(failure.Path("cursor"), nil, "the cursor is not a query_evidence cursor; start again without cursor")
		case c.Query != f.Digest():
			return nil, failure.Invalid(failure.Path("cursor"), nil,
				"the cursor does not match its filters; repeat the original filters unchanged with this cursor")
		case c.Inventory != inv:
			return nil, failure.Invalid(failure.Path("cursor"), nil,
				"the cursor is stale: evidence was preserved since it was issued; start again without cursor").
				With("inventory_digest", inv)
		case c.Offset < 0 || c.Offset >= int64(len(ids)):
			return nil, failure.Invalid(failure.Path("cursor"), nil, "the cursor's offset is outside the inventory")
		}
		offset = int(c.Offset)
	}
	pre := f.prefilter()
	for i := offset; i < len(ids); i++ {
		if pre != nil && !pre(s.rawManifest(ids[i])) {
			// The manifest's bytes cannot match: skip it without decoding it.
			continue
		}
		ev, fail := s.readBundle(ids[i], LevelManifest)
		if fail != nil {
			return nil, fail
		}
		if !f.matches(&ev.Manifest.Body) {
			continue
		}
		if len(page.Evidence) == limit {
			page.NextOffset = i
			break
		}
		page.Evidence = append(page.Evidence, summary(ev))
	}
	return page, nil
}

func (f Filter) matches(b *gen.ManifestBody) bool {
	if f.Kind != nil && b.EvidenceKind != *f.Kind {
		return false
	}
	if f.Operation != nil && string(b.Operation) != *f.Operation {
		return false
	}
	if f.ProviderID != nil && b.Provider.ID != *f.ProviderID && captureProvider(b) != *f.ProviderID {
		return false
	}
	if f.InputSHA256 != nil {
		found := false
		for _, in := range b.Inputs {
			found = found || in.SHA256 == *f.InputSHA256
		}
		if !found {
			return false
		}
	}
	if f.CreatedAfter != nil || f.CreatedBefore != nil {
		t, err := time.Parse(time.RFC3339Nano, b.Episode.CreatedAt)
		if err != nil {
			return false
		}
		if f.CreatedAfter != nil && t.Before(*f.CreatedAfter) || f.CreatedBefore != nil && t.After(*f.CreatedBefore) {
			return false
		}
	}
	return true
}

// captureProvider returns the collector id recorded in capture provenance, or "".
func captureProvider(b *gen.ManifestBody) string {
	if t, ok := b.CaptureRequest["target"].(map[string]any); ok {
		if id, ok := t["provider_id"].(string); ok {
			return id
		}
	}
	return ""
}

func summary(ev *Evidence) gen.EvidenceSummary {
	b := &ev.Manifest.Body
	return gen.EvidenceSummary{
		EvidenceID:   ev.ID,
		EvidenceKind: b.EvidenceKind,
		Operation:    b.Operation,
		Provider:     gen.Provider{ID: b.Provider.ID, Version: b.Provider.Version},
		CreatedAt:    b.Episode.CreatedAt,
		Coverage:     gen.Coverage{RowsReturned: b.Coverage.RowsReturned, RowsObserved: b.Coverage.RowsObserved, Complete: b.Coverage.Complete},
		Limitations:  append([]string{}, b.Limitations...),
	}
}

// rawManifest reads a manifest's bytes for the pre-filter, bounded; nil when it cannot be
// read (the full read that follows reports why).
func (s *Store) rawManifest(id string) []byte {
	f, err := os.Open(s.path(append(evidenceRel(id), "manifest.json")...))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes))
	if err != nil {
		return nil
	}
	return b
}

// prefilter returns a cheap test of a manifest's raw bytes that is false only when the
// manifest cannot match f: every filtered string must appear as a JSON string in it, and
// its creation time must fall in the window. It never excludes a match; every candidate
// is still read and validated in full. Nil when f filters nothing it can test.
func (f Filter) prefilter() func(raw []byte) bool {
	var needles [][]byte
	for _, v := range []*string{f.Kind, f.Operation, f.ProviderID, f.InputSHA256} {
		if v == nil {
			continue
		}
		q, ok := plainJSONString(*v)
		if !ok {
			continue
		}
		needles = append(needles, q)
	}
	timed := f.CreatedAfter != nil || f.CreatedBefore != nil
	if len(needles) == 0 && !timed {
		return nil
	}
	return func(raw []byte) bool {
		if raw == nil {
			return true
		}
		for _, n := range needles {
			if !bytes.Contains(raw, n) {
				return false
			}
		}
		if timed {
			if t, ok := createdAt(raw); ok &&
				(f.CreatedAfter != nil && t.Before(*f.CreatedAfter) || f.CreatedBefore != nil && t.After(*f.CreatedBefore)) {
				return false
			}
		}
		return true
	}
}

// plainJSONString returns v as a JSON string literal when its canonical form is v itself
// in quotes (printable ASCII without quote or backslash), so a byte search is exact.
func plainJSONString(v string) ([]byte, bool) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return nil, false
		}
	}
	return []byte(`"` + v + `"`), true
}

// createdAt finds the episode's created_at in a canonical manifest (no field an analysis
// records is named episode, and a quote inside a string is escaped, so the key is exact).
func createdAt(raw []byte) (time.Time, bool) {
	key := []byte(`"episode":{"created_at":"`)
	i := bytes.Index(raw, key)
	if i < 0 {
		return time.Time{}, false
	}
	rest := raw[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t, err == nil
}
