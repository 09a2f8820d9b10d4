package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/flameox/flameox/providers"
)

// Bounds of a V8 sampling heap profile.
const (
	maxHeapNodes    = 4 << 20 // call-tree nodes
	maxHeapDepth    = 4096    // call-tree depth
	maxHeapStrings  = 64 << 10
	maxHeapSamples  = 64 << 20 // sample records (counted, not kept)
	maxDistinctNode = maxHeapNodes
)

// heapKey identifies a frame: V8 call frames merged by function, script id, URL, line
// and column.
type heapKey struct {
	function, script, url string
	line, column          int64
}

// HeapFrame is one merged frame of a heap profile.
type HeapFrame struct {
	Function string
	URL      string
	// Line and Column are 1-based; 0 when V8 recorded none.
	Line, Column int64
	Self         int64
	Inclusive    int64
	// Samples counts the sample records attributed to the frame.
	Samples int64
	// ID is the frame's first appearance in the call tree (pre-order), from 0.
	ID int
}

// HeapProfile is a decoded V8 sampling heap profile.
type HeapProfile struct {
	Frames []HeapFrame
	// Nodes counts the call-tree nodes, the root included.
	Nodes int
	// HasSamples is set when the profile has a samples array (Node 12 and later).
	HasSamples bool
	// SampleCount counts the sample records; UnresolvedSamples those naming no node.
	SampleCount, UnresolvedSamples int64
	// TotalBytes is the sum of every node's selfSize.
	TotalBytes int64
	// RootBytes is the root node's own selfSize: bytes sampled without a stack, which no
	// frame holds (V8 writes 0).
	RootBytes int64
}

// heapDecoder holds the call tree in pre-order while it is read.
type heapDecoder struct {
	dec    *json.Decoder
	keys   map[heapKey]int32
	frames []heapKey
	parent []int32
	frame  []int32
	self   []int64
	ids    map[int64]int32 // V8 node id -> node
	counts map[int64]int64 // node id -> samples
	p      HeapProfile
	head   bool
}

func heapDecodeError(msg string) error {
	return &providers.DecodeError{Message: "the input is not a V8 sampling heap profile: " + msg}
}

// DecodeHeapProfile reads a V8 sampling heap profile (node --heap-prof, DevTools) as a
// token stream: the call tree is kept as four numbers per node, samples as one count per
// node, so memory grows with the tree, not with the file.
func DecodeHeapProfile(r io.Reader) (*HeapProfile, error) {
	d := &heapDecoder{dec: json.NewDecoder(r), keys: map[heapKey]int32{}, ids: map[int64]int32{}, counts: map[int64]int64{}}
	d.dec.UseNumber()
	if err := d.delim('{'); err != nil {
		return nil, err
	}
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return nil, err
		}
		switch key {
		case "head":
			if d.head {
				return nil, heapDecodeError("head appears twice")
			}
			d.head = true
			if err := d.node(-1, 0); err != nil {
				return nil, err
			}
		case "samples":
			d.p.HasSamples = true
			if err := d.samples(); err != nil {
				return nil, err
			}
		default:
			if err := d.skip(); err != nil {
				return nil, err
			}
		}
	}
	if err := d.delim('}'); err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		if err == nil {
			return nil, heapDecodeError("data follows the profile object")
		}
		return nil, d.wrap(err)
	}
	if !d.head {
		return nil, heapDecodeError("it has no head node")
	}
	d.finish()
	return &d.p, nil
}

func (d *heapDecoder) wrap(err error) error {
	var le *providers.LimitError
	var de *providers.DecodeError
	if errors.As(err, &le) || errors.As(err, &de) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return heapDecodeError("it ends early (truncated)")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return heapDecodeError(fmt.Sprintf("invalid JSON at byte %d", se.Offset))
	}
	return heapDecodeError("it cannot be read as JSON")
}

func (d *heapDecoder) delim(want json.Delim) error {
	t, err := d.dec.Token()
	if err != nil {
		return d.wrap(err)
	}
	if t != want {
		return heapDecodeError(fmt.Sprintf("expected %q at byte %d", string(want), d.dec.InputOffset()))
	}
	return nil
}

func (d *heapDecoder) key() (string, error) {
	t, err := d.dec.Token()
	if err != nil {
		return "", d.wrap(err)
	}
	s, ok := t.(string)
	if !ok {
		return "", heapDecodeError("expected an object key")
	}
	return s, nil
}

// skip consumes one value of any shape.
func (d *heapDecoder) skip() error {
	depth := 0
	for {
		t, err := d.dec.Token()
		if err != nil {
			return d.wrap(err)
		}
		if dl, ok := t.(json.Delim); ok {
			if dl == '{' || dl == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func (d *heapDecoder) integer(what string) (int64, error) {
	t, err := d.dec.Token()
	if err != nil {
		return 0, d.wrap(err)
	}
	n, ok := t.(json.Number)
	if !ok {
		return 0, heapDecodeError(what + " is not a number")
	}
	v, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != float64(int64(f)) {
			return 0, heapDecodeError(what + " is not an integer")
		}
		v = int64(f)
	}
	return v, nil
}

func (d *heapDecoder) str(what string) (string, error) {
	t, err := d.dec.Token()
	if err != nil {
		return "", d.wrap(err)
	}
	s, ok := t.(string)
	if !ok {
		return "", heapDecodeError(what + " is not a string")
	}
	return s, nil
}

// node reads one call-tree node and its children.
func (d *heapDecoder) node(parent int32, depth int) error {
	if depth > maxHeapDepth {
		return &providers.LimitError{Message: fmt.Sprintf("the heap profile's call tree is deeper than %d frames", maxHeapDepth), Limit: maxHeapDepth, Unit: "frames"}
	}
	if len(d.parent) >= maxHeapNodes {
		return &providers.LimitError{Message: fmt.Sprintf("the heap profile has more than %d call-tree nodes", maxHeapNodes), Limit: maxHeapNodes, Unit: "nodes"}
	}
	if err := d.delim('{'); err != nil {
		return err
	}
	i := int32(len(d.parent))
	d.parent, d.frame, d.self = append(d.parent, parent), append(d.frame, -1), append(d.self, 0)
	var seenFrame, seenSelf bool
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return err
		}
		switch key {
		case "callFrame":
			k, err := d.callFrame()
			if err != nil {
				return err
			}
			f, ok := d.keys[k]
			if !ok {
				if len(d.frames) >= maxHeapNodes {
					return &providers.LimitError{Message: "too many distinct frames", Limit: maxHeapNodes, Unit: "frames"}
				}
				f = int32(len(d.frames))
				d.keys[k] = f
				d.frames = append(d.frames, k)
			}
			d.frame[i], seenFrame = f, true
		case "selfSize":
			v, err := d.integer("selfSize")
			if err != nil {
				return err
			}
			if v < 0 {
				return heapDecodeError("a selfSize is negative")
			}
			d.self[i], seenSelf = v, true
		case "id":
			v, err := d.integer("id")
			if err != nil {
				return err
			}
			if _, dup := d.ids[v]; dup {
				return heapDecodeError(fmt.Sprintf("node id %d appears twice", v))
			}
			d.ids[v] = i
		case "children":
			if err := d.delim('['); err != nil {
				return err
			}
			for d.dec.More() {
				if err := d.node(i, depth+1); err != nil {
					return err
				}
			}
			if err := d.delim(']'); err != nil {
				return err
			}
		default:
			if err := d.skip(); err != nil {
				return err
			}
		}
	}
	if !seenFrame || !seenSelf {
		return heapDecodeError("a node has no callFrame or selfSize")
	}
	return d.delim('}')
}

func (d *heapDecoder) callFrame() (heapKey, error) {
	var k heapKey
	if err := d.delim('{'); err != nil {
		return k, err
	}
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return k, err
		}
		switch key {
		case "functionName":
			k.function, err = d.str("functionName")
		case "url":
			k.url, err = d.str("url")
		case "scriptId":
			k.script, err = d.str("scriptId")
		case "lineNumber":
			k.line, err = d.integer("lineNumber")
		case "columnNumber":
			k.column, err = d.integer("columnNumber")
		default:
			err = d.skip()
		}
		if err != nil {
			return k, err
		}
	}
	if len(k.function) > maxHeapStrings || len(k.url) > maxHeapStrings || len(k.script) > maxHeapStrings {
		return k, &providers.LimitError{Message: fmt.Sprintf("a call frame name or URL is longer than %d bytes", maxHeapStrings), Limit: maxHeapStrings, Unit: "bytes"}
	}
	return k, d.delim('}')
}

// samples counts the sample records per node id.
func (d *heapDecoder) samples() error {
	if err := d.delim('['); err != nil {
		return err
	}
	for d.dec.More() {
		if d.p.SampleCount >= maxHeapSamples {
			return &providers.LimitError{Message: fmt.Sprintf("the heap profile has more than %d samples", maxHeapSamples), Limit: maxHeapSamples, Unit: "samples"}
		}
		if err := d.delim('{'); err != nil {
			return err
		}
		node, seen := int64(0), false
		for d.dec.More() {
			key, err := d.key()
			if err != nil {
				return err
			}
			if key == "nodeId" {
				if node, err = d.integer("nodeId"); err != nil {
					return err
				}
				seen = true
			} else if err := d.skip(); err != nil {
				return err
			}
		}
		if err := d.delim('}'); err != nil {
			return err
		}
		if !seen {
			return heapDecodeError("a sample has no nodeId")
		}
		if _, ok := d.counts[node]; !ok && len(d.counts) >= maxDistinctNode {
			return &providers.LimitError{Message: "samples name too many distinct nodes", Limit: maxDistinctNode, Unit: "nodes"}
		}
		d.counts[node]++
		d.p.SampleCount++
	}
	return d.delim(']')
}

// finish aggregates the tree: self bytes and samples per frame, inclusive bytes once per
// stack (a recursive frame counts its outermost call), frame ids by first appearance.
// The root node ((root), depth 0) is the whole profile and is not a frame.
func (d *heapDecoder) finish() {
	n := len(d.parent)
	d.p.Nodes = n
	total := make([]int64, n)
	for i := n - 1; i >= 0; i-- {
		total[i] += d.self[i]
		d.p.TotalBytes += d.self[i]
		if p := d.parent[i]; p >= 0 {
			total[p] += total[i]
		}
	}
	nodeSamples := make([]int64, n)
	for id, c := range d.counts {
		if i, ok := d.ids[id]; ok {
			nodeSamples[i] += c
		} else {
			d.p.UnresolvedSamples += c
		}
	}
	out := make([]int32, len(d.frames)) // internal frame -> output index + 1
	onStack := make([]int32, len(d.frames))
	path := make([]int32, 0, 64)
	for i := 1; i < n; i++ { // node 0 is the root
		for len(path) > 0 && path[len(path)-1] != d.parent[i] {
			onStack[d.frame[path[len(path)-1]]]--
			path = path[:len(path)-1]
		}
		f := d.frame[i]
		if out[f] == 0 {
			k := d.frames[f]
			hf := HeapFrame{Function: k.function, URL: k.url, ID: len(d.p.Frames)}
			if hf.Function == "" {
				hf.Function = "(anonymous)"
			}
			if k.line >= 0 {
				hf.Line = k.line + 1
			}
			if k.column >= 0 {
				hf.Column = k.column + 1
			}
			d.p.Frames = append(d.p.Frames, hf)
			out[f] = int32(len(d.p.Frames))
		}
		hf := &d.p.Frames[out[f]-1]
		hf.Self += d.self[i]
		hf.Samples += nodeSamples[i]
		if onStack[f] == 0 {
			hf.Inclusive += total[i]
		}
		onStack[f]++
		path = append(path, int32(i))
	}
	if n > 0 {
		// Samples and bytes attributed to the root have no frame.
		d.p.UnresolvedSamples += nodeSamples[0]
		d.p.RootBytes = d.self[0]
	}
}

// Order is the ranking: inclusive bytes descending, then self bytes descending (self
// first when self is set), then frame id.
func (p *HeapProfile) Order(self bool) []int32 {
	o := make([]int32, len(p.Frames))
	for i := range o {
		o[i] = int32(i)
	}
	sort.Slice(o, func(a, b int) bool {
		x, y := &p.Frames[o[a]], &p.Frames[o[b]]
		x1, x2, y1, y2 := x.Inclusive, x.Self, y.Inclusive, y.Self
		if self {
			x1, x2, y1, y2 = x2, x1, y2, y1
		}
		if x1 != y1 {
			return x1 > y1
		}
		if x2 != y2 {
			return x2 > y2
		}
		return x.ID < y.ID
	})
	return o
}
