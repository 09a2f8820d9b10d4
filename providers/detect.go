package providers

import (
	"sort"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
)

// Detector recognizes one format in a file whose format the caller omitted.
type Detector struct {
	Format gen.Format
	// Suffixes are lower-case file name suffixes that announce the format; the first is
	// the format's own file extension (Registry.Extension), so it comes first.
	Suffixes []string
	// Extension is the format's file extension where no suffix announces it (a format
	// recognized by its content only, as perf.data by its magic); it takes precedence
	// over Suffixes and the container.
	Extension string
	// Match reports whether a file named name (lower case) starting with head holds the
	// format; nil when the suffixes alone decide.
	Match func(name string, head []byte) bool
	// Fallback marks a generic format (JSON by a leading brace, any text) whose Match is
	// consulted only when no other detector recognized the file.
	Fallback bool
	// Container is the generic format this one is written in (json, text), a candidate
	// after it; empty for a binary format.
	Container gen.Format
	// Directory marks a format that is a directory of files (an nsys parquetdir): it
	// reports whether a directory whose top-level entries are names holds the format.
	// Suffixes and Match never apply to a directory.
	Directory func(names []string) bool
}

// DetectDirectory lists the directory formats a directory whose top-level entries are
// names may hold, in registration order.
func (r *Registry) DetectDirectory(names []string) []gen.Format {
	var out []gen.Format
	for _, d := range r.detectors {
		if d.Directory != nil && d.Directory(names) {
			out = append(out, d.Format)
		}
	}
	return out
}

// Extension is the file extension of format f, for naming a file of it (a download): its
// first detector's Extension, else the first suffix of its first detector that has one
// (from its first dot), else its container's (a Chrome trace
// is written in JSON: .json); "" when neither says.
func (r *Registry) Extension(f gen.Format) string {
	var container gen.Format
	for _, d := range r.detectors {
		if d.Format != f {
			continue
		}
		if d.Extension != "" {
			return d.Extension
		}
		if len(d.Suffixes) > 0 {
			// A suffix that names more than the extension (rocprofv3's _results.pftrace)
			// gives the extension from its first dot.
			s := d.Suffixes[0]
			return s[max(strings.IndexByte(s, '.'), 0):]
		}
		if container == "" {
			container = d.Container
		}
	}
	if container != "" && container != f {
		return r.Extension(container)
	}
	return ""
}

// IsDirectoryFormat reports whether format f is a directory of files.
func (r *Registry) IsDirectoryFormat(f gen.Format) bool {
	for _, d := range r.detectors {
		if d.Format == f && d.Directory != nil {
			return true
		}
	}
	return false
}

// Detect lists the formats a file named name starting with head may hold, most
// specific first: content matches in registration order, then suffixes (the longest
// first), else the fallback matches; each candidate is followed by the formats it is
// written in. The content match of a format written in a container (a JSON document
// recognized by its keys) counts only where the suffix does not name another format.
func (r *Registry) Detect(name string, head []byte) []gen.Format {
	name = strings.ToLower(name)
	// match is one recognition: the format and the container of the detector that
	// recognized it (a format detected two ways, OTLP as JSON and as protobuf, is written
	// in JSON only when its JSON detector matched).
	type match struct{ f, container gen.Format }
	type bySuffix struct {
		n int
		m match
	}
	var suffixed []bySuffix
	for _, d := range r.detectors {
		for _, s := range d.Suffixes {
			if strings.HasSuffix(name, s) {
				suffixed = append(suffixed, bySuffix{len(s), match{d.Format, d.Container}})
			}
		}
	}
	sort.SliceStable(suffixed, func(i, j int) bool { return suffixed[i].n > suffixed[j].n })
	var found []match
	for _, d := range r.detectors {
		if d.Fallback || d.Match == nil {
			continue
		}
		if d.Container != "" && len(suffixed) > 0 && suffixed[0].m.f != d.Container {
			continue
		}
		if d.Match(name, head) {
			found = append(found, match{d.Format, d.Container})
		}
	}
	for _, s := range suffixed {
		found = append(found, s.m)
	}
	if len(found) == 0 {
		for _, d := range r.detectors {
			if d.Fallback && d.Match != nil && d.Match(name, head) {
				found = append(found, match{d.Format, d.Container})
			}
		}
	}
	// A container's own container (json is written in text) is the generic format's.
	container := map[gen.Format]gen.Format{}
	for _, d := range r.detectors {
		if d.Container != "" && container[d.Format] == "" {
			container[d.Format] = d.Container
		}
	}
	var out []gen.Format
	seen := map[gen.Format]bool{}
	for _, m := range found {
		if !seen[m.f] {
			seen[m.f] = true
			out = append(out, m.f)
		}
		for f := m.container; f != "" && !seen[f]; f = container[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}
