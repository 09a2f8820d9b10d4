package xctrace

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flameox/flameox/providers"
)

// backtraces are the elements whose descendants (frames, binaries, addresses) are
// not kept for references: only the threads and processes inside them are.
var backtraces = map[string]bool{"backtrace": true, "tagged-backtrace": true, "kperf-bt": true, "text-backtrace": true}

// denseIDs bounds the numeric ids indexed in a slice (4 bytes an id, whether or
// not it was kept); larger ids, and ids that are not numbers, are looked up in a map.
const denseIDs = 1 << 24

// xval is one interned value: its label (fmt, else its text) where it can be a row's
// label, its integer text, and for a thread or a process what identifies it.
type xval struct {
	label  string
	num    int64
	thread int32 // index in threads, -1 for none
	flags  uint8
}

const (
	xvNum uint8 = 1 << iota
	xvPID
	xvTID
)

// xthread is a thread or process value's identity: its tid and pid, and its process's label.
type xthread struct {
	tid, pid       int64
	hasTID, hasPID bool
	label, process string
}

// value reads one value element (just started): a reference to an interned value, or a
// value, interned when it has an id. Inside a backtrace (inBT) only threads and
// processes are kept; the rest is read and dropped.
func (x *reader) value(e xml.StartElement, inBT bool) (xval, error) {
	tag := e.Name.Local
	if ref, ok := attr(e, "ref"); ok {
		if err := x.skip(); err != nil {
			return xval{}, err
		}
		if inBT && !isIdentity(tag) {
			return xval{thread: -1}, nil
		}
		v, ok := x.lookup(ref)
		if !ok {
			return xval{}, &providers.DecodeError{Source: x.index,
				Message: fmt.Sprintf("source %d is not a readable xctrace export: a <%s> refers to id %q, which no element before it defines", x.index, tag, ref),
				Details: map[string]any{"offset": x.d.InputOffset()}}
		}
		return v, nil
	}
	id, hasID := attr(e, "id")
	keep := !inBT || isIdentity(tag) || backtraces[tag]
	label := !notLabels[tag]
	v := xval{thread: -1}
	format, _ := attr(e, "fmt")
	if keep && label {
		v.label = format
	}
	var text []byte
	var th *xthread
	if tag == "thread" || tag == "process" {
		th = &xthread{}
	}
	bt := inBT || backtraces[tag]
	for {
		tok, err := x.token()
		if err != nil {
			return xval{}, err
		}
		switch s := tok.(type) {
		case xml.CharData:
			if keep && len(text) < 4096 {
				text = append(text, s[:min(len(s), 4096-len(text))]...)
			}
		case xml.StartElement:
			c, err := x.value(s, bt)
			if err != nil {
				return xval{}, err
			}
			if th != nil {
				x.absorb(th, s.Name.Local, c)
			}
		case xml.EndElement:
			if keep {
				t := strings.TrimSpace(string(text))
				if n, err := strconv.ParseInt(t, 10, 64); err == nil {
					v.num, v.flags = n, v.flags|xvNum
				}
				if label && v.label == "" {
					v.label = t
				}
				if th != nil {
					th.label = format
					if th.label == "" {
						th.label = t
					}
					if tag == "process" {
						th.process = th.label
					}
					if len(x.threads) >= math.MaxInt32 {
						return xval{}, x.limit("threads and processes", math.MaxInt32, "values")
					}
					v.thread = int32(len(x.threads))
					x.threads = append(x.threads, *th)
				}
				if tag == "pid" && v.flags&xvNum != 0 {
					v.flags |= xvPID
				}
				if tag == "tid" && v.flags&xvNum != 0 {
					v.flags |= xvTID
				}
				if hasID {
					if err := x.intern(id, v); err != nil {
						return xval{}, err
					}
				}
			}
			return v, nil
		}
	}
}

func isIdentity(tag string) bool {
	return tag == "thread" || tag == "process" || tag == "pid" || tag == "tid"
}

// absorb records a thread's or process's child: its tid, pid, or (a thread's) process.
func (x *reader) absorb(th *xthread, tag string, c xval) {
	switch {
	case tag == "tid" && c.flags&xvNum != 0:
		th.tid, th.hasTID = c.num, true
	case tag == "pid" && c.flags&xvNum != 0:
		th.pid, th.hasPID = c.num, true
	case tag == "process" && c.thread >= 0:
		p := x.threads[c.thread]
		if p.hasPID {
			th.pid, th.hasPID = p.pid, true
		}
		th.process = p.process
	}
}

// intern keeps v under id.
func (x *reader) intern(id string, v xval) error {
	if len(x.values) >= x.lim.MaxValues {
		return x.limit("values with an id (interned for references)", int64(x.lim.MaxValues), "values")
	}
	if x.valueBytes += int64(len(v.label)); x.valueBytes > x.lim.MaxValueBytes {
		return x.limit("bytes of value labels (interned for references)", x.lim.MaxValueBytes, "bytes")
	}
	x.values = append(x.values, v)
	ix := uint32(len(x.values))
	if n, err := strconv.ParseUint(id, 10, 32); err == nil && n < denseIDs {
		if int(n) >= len(x.dense) {
			grow := max(int(n)+1, 2*len(x.dense))
			x.dense = append(x.dense, make([]uint32, min(grow, denseIDs)-len(x.dense))...)
		}
		x.dense[n] = ix
		return nil
	}
	x.named[id] = ix
	return nil
}

func (x *reader) lookup(id string) (xval, bool) {
	var ix uint32
	if n, err := strconv.ParseUint(id, 10, 32); err == nil && n < denseIDs {
		if int(n) < len(x.dense) {
			ix = x.dense[n]
		}
	} else {
		ix = x.named[id]
	}
	if ix == 0 {
		return xval{}, false
	}
	return x.values[ix-1], true
}
