package cpu

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonbound"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// Speedscope bounds, as upstream.
const (
	maxSpeedscopeFrames  = 100_000
	maxSpeedscopeSamples = 1_000_000
)

// speedscopeUnits scales a Speedscope value unit to seconds; none counts samples.
var speedscopeUnits = map[string]float64{"nanoseconds": 1e-9, "microseconds": 1e-6, "milliseconds": 1e-3, "seconds": 1}

// maxCPUProfileDepth bounds the depth of a V8 CPU profile's node tree: a node's stack
// has a frame per ancestor, so the bound is sampled.MaxStackFrames.
const maxCPUProfileDepth = sampled.MaxStackFrames

// jsonError is the error of a JSON profile that did not decode: the bound of the reader
// (decompressed bytes) as itself, anything else a DecodeError with message.
func jsonError(err error, message string) error {
	var lim *providers.LimitError
	if errors.As(err, &lim) {
		return lim
	}
	return &providers.DecodeError{Message: message}
}

// Bounds on what the whole-document decoders build (issue 21): a document within the
// byte bound can still hold tens of millions of tiny values (`0,` or `[],` or `{},`), each
// of which decodes to 8 to 90 bytes. The counts fit real profiles of the byte bound;
// the decoded structures stay below about 100 MiB.
var (
	speedscopeBounds = jsonbound.Bounds{What: "the Speedscope document", Values: 12 << 20, Composites: 2 << 20, StringBytes: 1 << 20}
	cpuprofileBounds = jsonbound.Bounds{What: "the CPU profile", Values: 12 << 20, Composites: 1 << 20, StringBytes: 1 << 20}
)

// decodeBounded reads one JSON document from r and unmarshals it into v once its counts
// are within b: memory grows with what is kept, never with a hostile shape. message is
// the DecodeError's of an invalid document.
func decodeBounded(r io.Reader, v any, b jsonbound.Bounds, message string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return jsonError(err, message)
	}
	n, err := jsonbound.Check(data, b)
	if err != nil {
		return jsonError(err, message)
	}
	if err := json.Unmarshal(data[:n], v); err != nil {
		return jsonError(err, message)
	}
	return nil
}

// DecodeSpeedscope reads a Speedscope document of sampled profiles (py-spy's
// --format speedscope). Time units are scaled to seconds and "none" counts samples;
// evented profiles and byte weights are refused. Every profile is merged.
func DecodeSpeedscope(r io.Reader, o sampled.Options) (*sampled.Sampled, int, error) {
	var doc struct {
		Shared struct {
			Frames []struct {
				Name string  `json:"name"`
				File *string `json:"file"`
				Line *int64  `json:"line"`
				Col  *int64  `json:"col"`
			} `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Type    string          `json:"type"`
			Unit    string          `json:"unit"`
			Samples [][]int         `json:"samples"`
			Weights []float64       `json:"weights"`
			Events  []any           `json:"events"`
			Name    json.RawMessage `json:"name"`
		} `json:"profiles"`
	}
	if err := decodeBounded(r, &doc, speedscopeBounds, "the Speedscope document is not valid JSON of the Speedscope schema"); err != nil {
		return nil, 0, err
	}
	if len(doc.Profiles) == 0 {
		return nil, 0, &providers.DecodeError{Message: "the Speedscope document holds no profiles"}
	}
	if n := len(doc.Shared.Frames); n > maxSpeedscopeFrames {
		return nil, 0, &providers.LimitError{Message: fmt.Sprintf("the Speedscope document has %d frames; at most %d are read", n, maxSpeedscopeFrames), Limit: maxSpeedscopeFrames}
	}
	unit := ""
	for i, p := range doc.Profiles {
		if p.Type != "sampled" {
			return nil, 0, &providers.UnsupportedError{Message: fmt.Sprintf("Speedscope profile %d is %q; only sampled profiles are read", i, p.Type)}
		}
		u := "samples"
		if p.Unit != "none" {
			if _, ok := speedscopeUnits[p.Unit]; !ok {
				return nil, 0, &providers.UnsupportedError{Message: fmt.Sprintf("Speedscope profile %d weighs samples in %q; only time units and none are read", i, p.Unit)}
			}
			u = "seconds"
		}
		if unit != "" && unit != u {
			return nil, 0, &providers.UnsupportedError{Message: "the Speedscope profiles mix time and sample-count weights"}
		}
		unit = u
	}
	s := sampled.NewSampled(unit, o)
	frames := make([]int, len(doc.Shared.Frames))
	for i, f := range doc.Shared.Frames {
		fr := sampled.Frame{Function: f.Name}
		if f.File != nil {
			fr.File = *f.File
		}
		if f.Line != nil {
			fr.Line = *f.Line
		}
		if f.Col != nil {
			fr.Column = *f.Col
		}
		idx, err := s.Frame(fr)
		if err != nil {
			return nil, 0, err
		}
		frames[i] = idx
	}
	var total int
	for pi, p := range doc.Profiles {
		if len(p.Weights) != len(p.Samples) {
			return nil, 0, &providers.DecodeError{Message: fmt.Sprintf("Speedscope profile %d has %d samples and %d weights", pi, len(p.Samples), len(p.Weights))}
		}
		total += len(p.Samples)
		if total > maxSpeedscopeSamples {
			return nil, 0, &providers.LimitError{Message: fmt.Sprintf("the Speedscope document has more than %d samples", maxSpeedscopeSamples), Limit: maxSpeedscopeSamples}
		}
		scale := 1.0
		if p.Unit != "none" {
			scale = speedscopeUnits[p.Unit]
		}
		stack := make([]int, 0, 64)
		for si, smp := range p.Samples {
			if len(smp) > sampled.MaxStackFrames {
				return nil, 0, sampled.StackLimit(fmt.Sprintf("Speedscope profile %d sample %d", pi, si))
			}
			stack = stack[:0]
			for _, fi := range smp {
				if fi < 0 || fi >= len(frames) {
					return nil, 0, &providers.DecodeError{Message: fmt.Sprintf("Speedscope profile %d sample %d names frame %d, which does not exist", pi, si, fi)}
				}
				stack = append(stack, frames[fi])
			}
			if !(p.Weights[si] >= 0) {
				return nil, 0, &providers.DecodeError{Message: fmt.Sprintf("Speedscope profile %d sample %d has weight %v; sampled weights are >= 0", pi, si, p.Weights[si])}
			}
			w := p.Weights[si] * scale
			if p.Unit == "none" {
				w = p.Weights[si]
			}
			if err := s.Add(stack, 1, w); err != nil {
				return nil, 0, err
			}
		}
	}
	return s, len(doc.Profiles), nil
}

// maxCollapsedLine bounds one collapsed-stack line.
const maxCollapsedLine = 256 << 10

// DecodeCollapsed reads collapsed stacks ("root;...;leaf count" per line), the output of
// stackcollapse-perf.pl and similar tools. Weights are sample counts.
func DecodeCollapsed(r io.Reader, o sampled.Options) (*sampled.Sampled, error) {
	s := sampled.NewSampled("samples", o)
	br := bufio.NewReaderSize(r, 1<<16)
	stack := make([]int, 0, 64)
	for lineNo := 1; ; lineNo++ {
		line, err := readBoundedLine(br, maxCollapsedLine)
		if err == io.EOF {
			return s, nil
		}
		if err != nil && err != errLineTooLong {
			return nil, err
		}
		if err != nil {
			return nil, &providers.LimitError{Message: fmt.Sprintf("line %d of the collapsed stacks is longer than %d bytes", lineNo, maxCollapsedLine), Limit: maxCollapsedLine}
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			return nil, &providers.DecodeError{Message: fmt.Sprintf("line %d is not \"stack count\"", lineNo)}
		}
		count, err := strconv.ParseInt(line[sp+1:], 10, 64)
		if err != nil || count < 0 || strings.ContainsAny(line[sp+1:], "+-") {
			return nil, &providers.DecodeError{Message: fmt.Sprintf("line %d does not end with a sample count", lineNo)}
		}
		stack = stack[:0]
		for rest := line[:sp]; rest != ""; {
			var name string
			name, rest, _ = strings.Cut(rest, ";")
			if name == "" {
				continue
			}
			if len(stack) == sampled.MaxStackFrames {
				return nil, sampled.StackLimit(fmt.Sprintf("line %d of the collapsed stacks", lineNo))
			}
			i, err := s.Frame(sampled.Frame{Function: name})
			if err != nil {
				return nil, err
			}
			stack = append(stack, i)
		}
		if err := s.Add(stack, count, float64(count)); err != nil {
			return nil, err
		}
	}
}

// errLineTooLong is what readBoundedLine returns for a line over its bound.
var errLineTooLong = errors.New("line too long")

// readBoundedLine returns the next line (with its newline) of at most max bytes; io.EOF
// at the end, errLineTooLong for a longer line, and the reader's own error otherwise.
func readBoundedLine(br *bufio.Reader, max int) (string, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return "", err
		}
		buf = append(buf, chunk...)
		if len(buf) > max {
			return "", errLineTooLong
		}
		switch err {
		case nil:
			return string(buf), nil
		case bufio.ErrBufferFull:
			continue
		default: // io.EOF
			if len(buf) == 0 {
				return "", io.EOF
			}
			return string(buf), nil
		}
	}
}

var symOffset = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\+0x[0-9a-fA-F]+$`) })

// DecodePerfScript reads the default output of `perf script`: per sample a header line,
// one indented "address symbol+offset (dso)" line per frame from leaf to root, and a
// blank line. Weights are sample counts.
func DecodePerfScript(r io.Reader, o sampled.Options) (*sampled.Sampled, error) {
	s := sampled.NewSampled("samples", o)
	br := bufio.NewReaderSize(r, 1<<16)
	// stack is the sample's frames, leaf first as they are read, then reversed in place.
	var stack []int
	inSample, sampleLine := false, 0
	flush := func() error {
		if !inSample {
			return nil
		}
		slices.Reverse(stack)
		err := s.Add(stack, 1, 1)
		stack = stack[:0]
		inSample = false
		return err
	}
	for lineNo := 1; ; lineNo++ {
		line, err := readBoundedLine(br, maxCollapsedLine)
		if err == io.EOF {
			return s, flush()
		}
		if err != nil && err != errLineTooLong {
			return nil, err
		}
		if err != nil {
			return nil, &providers.LimitError{Message: fmt.Sprintf("line %d of the perf script output is longer than %d bytes", lineNo, maxCollapsedLine), Limit: maxCollapsedLine}
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(line) == "":
			if err := flush(); err != nil {
				return nil, err
			}
		case line[0] == ' ' || line[0] == '\t':
			if !inSample {
				return nil, &providers.DecodeError{Message: fmt.Sprintf("line %d is a frame outside a sample", lineNo)}
			}
			if len(stack) == sampled.MaxStackFrames {
				return nil, sampled.StackLimit(fmt.Sprintf("the sample at line %d of the perf script output", sampleLine))
			}
			f := parsePerfFrame(strings.TrimSpace(line))
			i, err := s.Frame(f)
			if err != nil {
				return nil, err
			}
			stack = append(stack, i)
		default:
			if err := flush(); err != nil {
				return nil, err
			}
			inSample, sampleLine = true, lineNo
		}
	}
}

// parsePerfFrame parses "ffffffff813c7e55 sched_balance+0x5 ([kernel.kallsyms])".
func parsePerfFrame(line string) sampled.Frame {
	f := sampled.Frame{Function: "[unknown]"}
	rest := line
	if sp := strings.IndexByte(rest, ' '); sp >= 0 {
		rest = strings.TrimSpace(rest[sp+1:])
	} else {
		return f
	}
	if open := strings.LastIndex(rest, " ("); open >= 0 && strings.HasSuffix(rest, ")") {
		f.File = rest[open+2 : len(rest)-1]
		rest = rest[:open]
	} else if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		f.File = rest[1 : len(rest)-1]
		rest = ""
	}
	rest = symOffset().ReplaceAllString(strings.TrimSpace(rest), "")
	if rest != "" {
		f.Function = strings.ReplaceAll(rest, ";", ":")
	}
	return f
}

// DecodeCPUProfile reads a V8 CPU profile (node --cpu-prof, Chrome DevTools). Sample
// weights are the time until the next sample, in seconds; a profile without samples
// falls back to node hit counts.
func DecodeCPUProfile(r io.Reader, o sampled.Options) (*sampled.Sampled, error) {
	var doc struct {
		Nodes []struct {
			ID        int64 `json:"id"`
			CallFrame struct {
				FunctionName string `json:"functionName"`
				URL          string `json:"url"`
				LineNumber   int64  `json:"lineNumber"`
				ColumnNumber int64  `json:"columnNumber"`
			} `json:"callFrame"`
			HitCount int64   `json:"hitCount"`
			Children []int64 `json:"children"`
		} `json:"nodes"`
		StartTime  float64   `json:"startTime"`
		EndTime    float64   `json:"endTime"`
		Samples    []int64   `json:"samples"`
		TimeDeltas []float64 `json:"timeDeltas"`
	}
	if err := decodeBounded(r, &doc, cpuprofileBounds, "the CPU profile is not valid JSON of the V8 cpuprofile shape"); err != nil {
		return nil, err
	}
	if len(doc.Nodes) == 0 {
		return nil, &providers.DecodeError{Message: "the CPU profile has no nodes"}
	}
	unit := "seconds"
	if len(doc.Samples) == 0 {
		unit = "samples"
	}
	s := sampled.NewSampled(unit, o)
	if unit == "seconds" {
		s.Scale = 1e-6 // weights accumulate in microseconds
	}
	index := map[int64]int{}
	parent := make([]int, len(doc.Nodes))
	frame := make([]int, len(doc.Nodes))
	for i, n := range doc.Nodes {
		if _, dup := index[n.ID]; dup {
			return nil, &providers.DecodeError{Message: fmt.Sprintf("node id %d repeats", n.ID)}
		}
		index[n.ID] = i
		parent[i] = -1
		name := n.CallFrame.FunctionName
		if name == "" {
			name = "(anonymous)"
		}
		frame[i] = -1
		if name != "(root)" {
			fi, err := s.Frame(sampled.Frame{Function: name, File: n.CallFrame.URL, Line: n.CallFrame.LineNumber + 1, Column: n.CallFrame.ColumnNumber + 1})
			if err != nil {
				return nil, err
			}
			frame[i] = fi
		}
	}
	for i, n := range doc.Nodes {
		for _, c := range n.Children {
			ci, ok := index[c]
			if !ok || parent[ci] != -1 {
				return nil, &providers.DecodeError{Message: fmt.Sprintf("node %d names child %d, which is missing or has two parents", n.ID, c)}
			}
			parent[ci] = i
		}
	}
	// A node's stack is built by walking its ancestors into one reused buffer: memory
	// stays linear in the nodes however deep the tree (copying every ancestor's stack
	// per node was quadratic in the depth), and a sample costs its depth, as Add does.
	var buf []int
	stackOf := func(i, _ int) ([]int, error) {
		buf = buf[:0]
		for steps := 0; i >= 0; i = parent[i] {
			if steps++; steps > len(doc.Nodes) {
				return nil, &providers.DecodeError{Message: "the CPU profile's node tree has a cycle"}
			}
			if steps > maxCPUProfileDepth {
				for j := parent[i]; j >= 0; j = parent[j] { // a cycle is reported as such
					if steps++; steps > len(doc.Nodes) {
						return nil, &providers.DecodeError{Message: "the CPU profile's node tree has a cycle"}
					}
				}
				return nil, &providers.LimitError{Message: fmt.Sprintf("the CPU profile's node tree is deeper than %d nodes", maxCPUProfileDepth),
					Limit: maxCPUProfileDepth, Unit: "nodes"}
			}
			if frame[i] >= 0 {
				buf = append(buf, frame[i])
			}
		}
		slices.Reverse(buf)
		return buf, nil
	}
	if len(doc.Samples) == 0 {
		for i, n := range doc.Nodes {
			if n.HitCount > 0 {
				st, err := stackOf(i, 0)
				if err != nil {
					return nil, err
				}
				if err := s.Add(st, n.HitCount, float64(n.HitCount)); err != nil {
					return nil, err
				}
			}
		}
		return s, nil
	}
	if len(doc.TimeDeltas) != len(doc.Samples) {
		return nil, &providers.DecodeError{Message: "the CPU profile has a different number of samples and time deltas"}
	}
	t := doc.StartTime
	for i, id := range doc.Samples {
		ni, ok := index[id]
		if !ok {
			return nil, &providers.DecodeError{Message: fmt.Sprintf("sample %d names node %d, which does not exist", i, id)}
		}
		t += doc.TimeDeltas[i]
		var dur float64
		if i+1 < len(doc.TimeDeltas) {
			dur = doc.TimeDeltas[i+1]
		} else if doc.EndTime > t {
			dur = doc.EndTime - t
		}
		if dur < 0 {
			dur = 0
		}
		st, err := stackOf(ni, 0)
		if err != nil {
			return nil, err
		}
		if err := s.Add(st, 1, dur); err != nil {
			return nil, err
		}
	}
	return s, nil
}
