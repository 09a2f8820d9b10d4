// Command dist builds Flameox's release binaries (`make dist`, decision 0062): cmd/flameox
// for linux, darwin and windows on amd64 and arm64, static (CGO_ENABLED=0) and
// reproducible (-trimpath, -buildvcs=false, an empty build id, the architecture levels
// pinned and the caller's GOFLAGS ignored: the same source built by the same Go
// toolchain gives the same bytes, wherever it is checked out), named
// flameox_<version>_<os>_<arch>[.exe], with SHA256SUMS beside them in sha256sum's format
// (`sha256sum -c SHA256SUMS` checks them).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	flameox "github.com/flameox/flameox/runtime"
)

// target is one GOOS/GOARCH pair.
type target struct{ goos, goarch string }

func (t target) String() string { return t.goos + "/" + t.goarch }

// targets are the six platforms of a release (issue 34, item 6).
var targets = []target{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"}}

// sumsName is the checksum file written beside the binaries.
const sumsName = "SHA256SUMS"

func main() {
	out := flag.String("out", "dist", "output directory")
	root := flag.String("root", ".", "the module's root directory")
	goBin := flag.String("go", "go", "the go command")
	only := flag.String("targets", "", "comma-separated GOOS/GOARCH pairs to build (default: the six release targets)")
	flag.Parse()
	ts := targets
	if *only != "" {
		ts = nil
		for _, p := range strings.Split(*only, ",") {
			goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
			if !ok || goos == "" || goarch == "" {
				fmt.Fprintf(os.Stderr, "dist: %q is not GOOS/GOARCH\n", p)
				os.Exit(2)
			}
			ts = append(ts, target{goos, goarch})
		}
	}
	files, err := dist(context.Background(), *goBin, *root, *out, flameox.Version, ts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
	for _, f := range files {
		fmt.Println(f)
	}
}

// binaryName is the file name of the binary of version for t.
func binaryName(version string, t target) string {
	name := fmt.Sprintf("flameox_%s_%s_%s", version, t.goos, t.goarch)
	if t.goos == "windows" {
		name += ".exe"
	}
	return name
}

// dist builds cmd/flameox of the module at root for each target into out (removing the
// binaries and sums an earlier run left there) and writes out/SHA256SUMS; it returns the
// files written, the sums last.
func dist(ctx context.Context, goBin, root, out, version string, ts []target) ([]string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	// What an earlier run left (another version, other targets) would sit beside sums
	// that do not name it.
	old, err := filepath.Glob(filepath.Join(abs, "flameox_*"))
	if err != nil {
		return nil, err
	}
	for _, f := range append(old, filepath.Join(abs, sumsName)) {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	var files []string
	for _, t := range ts {
		f, err := build(ctx, goBin, root, filepath.Join(abs, binaryName(version, t)), t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		files = append(files, f)
	}
	sums, err := writeSums(abs, files)
	if err != nil {
		return nil, err
	}
	return append(files, sums), nil
}

// buildEnv is the environment of one build: the caller's, without what would change the
// bytes (GOFLAGS, the architecture levels, cgo), and t's platform.
func buildEnv(t target) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOAMD64", "GOARM64", "GOEXPERIMENT", "GO386", "GOARM":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOOS="+t.goos, "GOARCH="+t.goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly",
		"GOAMD64=v1", "GOARM64=v8.0")
}

// buildArgs is the go build command line writing the binary to file.
func buildArgs(file string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", file, "./cmd/flameox"}
}

// build builds the binary for t at file (written beside it, then renamed into place).
func build(ctx context.Context, goBin, root, file string, t target) (string, error) {
	tmp := file + ".tmp"
	cmd := exec.CommandContext(ctx, goBin, buildArgs(tmp)...)
	cmd.Dir, cmd.Env = root, buildEnv(t)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return file, os.Rename(tmp, file)
}

// writeSums writes dir/SHA256SUMS: one line per file, "<sha256 hex>  <base name>",
// sorted by name, as sha256sum prints them.
func writeSums(dir string, files []string) (string, error) {
	var lines []string
	for _, f := range files {
		sum, err := fileSHA256(f)
		if err != nil {
			return "", err
		}
		lines = append(lines, sum+"  "+filepath.Base(f)+"\n")
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	p := filepath.Join(dir, sumsName)
	if len(lines) == 0 {
		return "", errors.New("no binary to sum")
	}
	return p, os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644)
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
