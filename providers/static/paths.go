package static

import (
	"net/url"
	"path"
	"strings"
)

// defaultExcludes are path segments whose results are not the project's own code; they
// are excluded unless the request gives include_paths.
var defaultExcludes = map[string]bool{
	".git": true, "node_modules": true, "site-packages": true, "dist-packages": true, "__pycache__": true, ".venv": true,
}

// glob is one compiled include or exclude pattern: its segments, "**" spanning any
// number of segments.
type glob []string

// compileGlob splits a pattern into segments and checks each with path.Match; ok is
// false for a malformed pattern.
func compileGlob(p string) (glob, bool) {
	var g glob
	for _, seg := range strings.Split(p, "/") {
		if seg == "**" {
			if len(g) > 0 && g[len(g)-1] == "**" {
				continue
			}
		} else if _, err := path.Match(seg, ""); err != nil {
			return nil, false
		}
		g = append(g, seg)
	}
	return g, true
}

// match reports whether the pattern matches file or a directory above it (a pattern
// that matches a directory matches everything under it). It runs in time proportional
// to the pattern's segments times the file's.
func (g glob) match(file string) bool {
	name := strings.Split(file, "/")
	// reach[j] is whether the first i pattern segments can consume the first j names.
	reach := make([]bool, len(name)+1)
	reach[0] = true
	for _, seg := range g {
		next := make([]bool, len(name)+1)
		for j := 0; j <= len(name); j++ {
			if !reach[j] {
				continue
			}
			if seg == "**" {
				for k := j; k <= len(name); k++ {
					next[k] = true
				}
				break
			}
			if j < len(name) {
				if ok, _ := path.Match(seg, name[j]); ok {
					next[j+1] = true
				}
			}
		}
		reach = next
	}
	for j := 1; j <= len(name); j++ {
		if reach[j] {
			return true
		}
	}
	// An empty file name only matches "**".
	return reach[0] && len(g) > 0 && g[len(g)-1] == "**"
}

// defaultExcluded reports whether a segment of file is a built-in exclude.
func defaultExcluded(file string) bool {
	for _, seg := range strings.Split(file, "/") {
		if defaultExcludes[seg] {
			return true
		}
	}
	return false
}

// resolver turns a result's artifact location into the file a candidate names.
type resolver struct {
	// root is the cleaned absolute source_root, "" when none was given.
	root string
}

// resolve follows uriBaseId through the run's originalUriBaseIds (at most
// maxBaseDepth deep), decodes a file:// or relative URI to a path and makes a path
// under source_root relative to it. A base the log does not define leaves the path
// relative; resolved is false then.
func (rs resolver) resolve(ru *run, loc artifactLocation) (file string, resolved bool) {
	ref := ""
	if loc.URI != nil {
		ref = *loc.URI
	}
	u, err := url.Parse(ref)
	if err != nil {
		return rs.relative(ref), true
	}
	resolved = true
	base := loc.URIBaseID
	for depth := 0; base != nil && !u.IsAbs() && !strings.HasPrefix(u.Path, "/"); depth++ {
		b, ok := ru.bases[*base]
		if !ok || b.URI == nil || depth >= maxBaseDepth {
			resolved = false
			break
		}
		bu, err := url.Parse(*b.URI)
		if err != nil {
			resolved = false
			break
		}
		if bu.Path != "" && !strings.HasSuffix(bu.Path, "/") {
			bu.Path += "/"
			bu.RawPath = ""
		}
		if bu.IsAbs() || strings.HasPrefix(bu.Path, "/") {
			u = bu.ResolveReference(u)
		} else {
			// A relative base (src/) prefixes the reference and resolves further through its own base.
			u = &url.URL{Path: bu.Path + u.Path}
		}
		base = b.URIBaseID
	}
	switch u.Scheme {
	case "file":
		p := u.Path
		if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
			p = p[1:] // file:///C:/x is the Windows path C:/x
		}
		return rs.relative(p), resolved
	case "":
		return rs.relative(u.Path), resolved
	}
	return u.String(), resolved
}

// relative cleans p and makes it relative to the source root when it is under it.
func (rs resolver) relative(p string) string {
	if p == "" {
		return p
	}
	p = path.Clean(p)
	if rs.root != "" && strings.HasPrefix(p, "/") {
		if p == rs.root {
			return "."
		}
		prefix := rs.root + "/"
		if rs.root == "/" {
			prefix = "/"
		}
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return rest
		}
	}
	return p
}
