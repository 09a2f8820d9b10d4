package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	flameox "github.com/flameox/flameox/runtime"
)

// TestReproducible builds the host's release binary twice, into two directories, and
// checks that the bytes are the same, that SHA256SUMS names them with their digest in
// sha256sum's format, that the build is static and stamps neither paths nor VCS state,
// and that --version names the target after the line setup reads.
func TestReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds flameox twice")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	host := target{goruntime.GOOS, goruntime.GOARCH}
	var bins, sums [2][]byte
	var first string
	for i, dir := range []string{t.TempDir(), t.TempDir()} {
		files, err := dist(context.Background(), "go", root, dir, flameox.Version, []target{host})
		if err != nil {
			t.Fatal(err)
		}
		name := binaryName(flameox.Version, host)
		if len(files) != 2 || filepath.Base(files[0]) != name || filepath.Base(files[1]) != sumsName {
			t.Fatalf("files %v", files)
		}
		if bins[i], err = os.ReadFile(files[0]); err != nil {
			t.Fatal(err)
		}
		if sums[i], err = os.ReadFile(files[1]); err != nil {
			t.Fatal(err)
		}
		sum, err := fileSHA256(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if want := sum + "  " + name + "\n"; string(sums[i]) != want {
			t.Errorf("SHA256SUMS %q, want %q", sums[i], want)
		}
		if i == 0 {
			first = files[0]
		}
	}
	if !bytes.Equal(bins[0], bins[1]) || !bytes.Equal(sums[0], sums[1]) {
		t.Fatal("two builds of the same source differ")
	}
	if bytes.Contains(bins[0], []byte(root)) {
		t.Errorf("the binary holds the checkout's path %s", root)
	}
	info, err := exec.Command("go", "version", "-m", first).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-trimpath=true", "CGO_ENABLED=0", "GOOS=" + host.goos, "GOARCH=" + host.goarch} {
		if !strings.Contains(string(info), want) {
			t.Errorf("build info lacks %s:\n%s", want, info)
		}
	}
	// -buildvcs=false leaves no vcs settings (and -trimpath omits -ldflags).
	if strings.Contains(string(info), "vcs.") {
		t.Errorf("build info stamps VCS state:\n%s", info)
	}
	out, err := exec.Command(first, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "flameox version " + flameox.Version + "\nbuilt for " + host.String() + " with " + goruntime.Version() + "\n"
	if string(out) != want {
		t.Errorf("--version printed %q, want %q", out, want)
	}
}

// TestNames: the six targets and their file names.
func TestNames(t *testing.T) {
	var got []string
	for _, tg := range targets {
		got = append(got, binaryName("1.2.3", tg))
	}
	want := "flameox_1.2.3_linux_amd64 flameox_1.2.3_linux_arm64 flameox_1.2.3_darwin_amd64 flameox_1.2.3_darwin_arm64 flameox_1.2.3_windows_amd64.exe flameox_1.2.3_windows_arm64.exe"
	if strings.Join(got, " ") != want {
		t.Errorf("%s", got)
	}
	args := strings.Join(buildArgs("f"), " ")
	if !strings.Contains(args, "-trimpath -buildvcs=false -ldflags=-s -w -buildid=") {
		t.Errorf("%s", args)
	}
	env := strings.Join(buildEnv(target{"darwin", "arm64"}), "\n")
	for _, kv := range []string{"GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0", "GOFLAGS=-mod=readonly"} {
		if !strings.Contains(env, "\n"+kv) {
			t.Errorf("env lacks %s", kv)
		}
	}
}
