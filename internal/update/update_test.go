package update

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func proxyWith(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, Module, "@v", name)
		if name == "@latest" {
			p = filepath.Join(dir, Module, "@latest")
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return "file://" + dir
}

func TestLatestSkipsPrereleasesAndComparesSemver(t *testing.T) {
	p := proxyWith(t, map[string]string{"list": "v0.9.0\nv0.10.0\nv0.11.0-rc.1\nnot-a-version\n"})
	got, err := Latest(context.Background(), p)
	if err != nil || got != "v0.10.0" {
		t.Fatalf("Latest = %q, %v; want v0.10.0", got, err)
	}
}

func TestLatestFallsBackToAtLatest(t *testing.T) {
	p := proxyWith(t, map[string]string{"list": "", "@latest": `{"Version":"v1.2.3","Time":"2024-01-01T00:00:00Z"}`})
	got, err := Latest(context.Background(), p)
	if err != nil || got != "v1.2.3" {
		t.Fatalf("Latest = %q, %v; want v1.2.3", got, err)
	}
}

func TestLatestBoundsTheAnswer(t *testing.T) {
	p := proxyWith(t, map[string]string{"list": strings.Repeat("v0.0.1\n", MaxProxyBytes/7+1)})
	if _, err := Latest(context.Background(), p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Latest over the bound: %v", err)
	}
	if _, err := Latest(context.Background(), proxyWith(t, nil)); err == nil {
		t.Fatal("an empty proxy has no release")
	}
}

func TestProxyURLAndCanonical(t *testing.T) {
	for in, want := range map[string]string{"": "https://proxy.golang.org", "file:///p/,direct": "file:///p", "https://a|https://b": "https://a"} {
		if got, err := ProxyURL(in); err != nil || got != want {
			t.Errorf("ProxyURL(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"off", "direct,https://x"} {
		if _, err := ProxyURL(in); err == nil {
			t.Errorf("ProxyURL(%q) has no release list", in)
		}
	}
	if Canonical("0.2.0-go.1") != "v0.2.0-go.1" || Canonical("v1.2") != "v1.2.0" || Canonical("nope") != "" {
		t.Error("Canonical")
	}
	if Compare(Canonical("0.2.0-go.1"), "v0.0.2") <= 0 {
		t.Error("0.2.0-go.1 is newer than v0.0.2")
	}
}
