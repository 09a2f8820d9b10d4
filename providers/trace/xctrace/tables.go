package xctrace

import (
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
)

// TableKind is how a table's rows are read.
type TableKind string

const (
	// Intervals: a start and a duration column; its rows are slices.
	Intervals TableKind = "intervals"
	// Points: a time column (start-time, event-time or sample-time) but no
	// duration: samples and events, counted as instants.
	Points TableKind = "points"
	// Other: no time column; counted as events only.
	Other TableKind = "other"
)

// Table is one table (node) of an export as it was read.
type Table struct {
	// Schema is the schema's name ("" when the node has none).
	Schema string
	// Run is the run number the node's xpath names (run[N]), 1 when it names none.
	Run  int
	Kind TableKind
	// Rows counts the table's rows; Slices those that became slices; Invalid the rows of
	// an interval table without a start or a duration, or whose end overflows.
	Rows, Slices, Invalid int64
}

// timeTypes are the engineering types of a point in time, in nanoseconds from the
// start of the run.
var timeTypes = map[string]bool{"start-time": true, "event-time": true, "sample-time": true}

// notLabels are the engineering types that are not a row's label: times,
// durations, identities, numbers, addresses and backtraces. Any other value (a state, a
// name, an operation, a narrative) is.
var notLabels = map[string]bool{
	"start-time": true, "event-time": true, "sample-time": true, "duration": true, "duration-on-core": true,
	"duration-waiting": true, "mach-absolute-time": true, "mach-continuous-time": true, "time-since-epoch": true,
	"thread": true, "process": true, "tid": true, "pid": true, "core": true, "device-session": true,
	"uint32": true, "uint64": true, "int32": true, "int64": true, "sint32": true, "sint64": true,
	"fixed-decimal": true, "size-in-bytes": true, "address": true, "boolean": true, "weight": true,
	"backtrace": true, "tagged-backtrace": true, "kperf-bt": true, "text-backtrace": true,
	"text-addresses": true, "text-address": true, "register-content": true, "sentinel": true,
}

// runNumber finds the run number in a node's xpath.
var runNumber = regexp.MustCompile(`run\[(\d{1,9})\]`)

type xcol struct{ mnemonic, typ string }

// xtable is the table being read: its schema's columns and the roles found in them.
type xtable struct {
	info                        *Table
	cols                        []xcol
	start, dur, name, thr, proc int // column index, -1 for none
	hasTime                     bool
	run                         int
	fallbackName                string
}

// roles finds the columns the rows are read by: the start (the column named start of
// type start-time, else the first start-time), the duration (named duration, else the
// first of type duration), the thread, the process, and the label (the column named
// name, else the first whose type is not a time, duration, identity, number or backtrace).
func (t *xtable) roles() {
	t.start, t.dur, t.name, t.thr, t.proc = -1, -1, -1, -1, -1
	for i, c := range t.cols {
		switch {
		case c.typ == "start-time" && (t.start < 0 || c.mnemonic == "start" && t.cols[t.start].mnemonic != "start"):
			t.start = i
		case c.typ == "duration" && (t.dur < 0 || c.mnemonic == "duration" && t.cols[t.dur].mnemonic != "duration"):
			t.dur = i
		case c.typ == "thread" && t.thr < 0:
			t.thr = i
		case c.typ == "process" && t.proc < 0:
			t.proc = i
		}
		if timeTypes[c.typ] {
			t.hasTime = true
		}
		if c.mnemonic == "name" && (t.name < 0 || t.cols[t.name].mnemonic != "name") {
			t.name = i
		} else if t.name < 0 && c.typ != "" && !notLabels[c.typ] {
			t.name = i
		}
	}
	switch {
	case t.start >= 0 && t.dur >= 0:
		t.info.Kind = Intervals
	case t.hasTime:
		t.info.Kind = Points
	default:
		t.info.Kind = Other
	}
}

// rowRoles assigns roles from a row's element names, for a node without a schema (the
// element names are the engineering types).
func (t *xtable) rowRoles(tags []string) {
	t.cols = t.cols[:0]
	for _, g := range tags {
		t.cols = append(t.cols, xcol{typ: g})
	}
	t.roles()
}

// node reads one table: its schema, then its rows.
func (x *reader) node(e xml.StartElement) error {
	if len(x.info.Tables) >= x.lim.MaxTables {
		return x.limit("tables (node elements)", int64(x.lim.MaxTables), "tables")
	}
	run := 1
	if xp, ok := attr(e, "xpath"); ok {
		if m := runNumber.FindStringSubmatch(xp); m != nil {
			run, _ = strconv.Atoi(m[1])
		}
	}
	x.runs[run] = true
	x.info.Tables = append(x.info.Tables, Table{Run: run, Kind: Other})
	t := &xtable{info: &x.info.Tables[len(x.info.Tables)-1], run: run}
	t.roles()
	schema := false
	return x.children(func(s xml.StartElement) error {
		switch s.Name.Local {
		case "schema":
			if err := x.schema(s, t); err != nil {
				return err
			}
			schema = len(t.cols) > 0
			return nil
		case "row":
			return x.row(t, !schema)
		}
		return x.skip()
	})
}

// schema reads a schema's name and columns.
func (x *reader) schema(e xml.StartElement, t *xtable) error {
	t.info.Schema, _ = attr(e, "name")
	t.fallbackName = t.info.Schema
	t.cols = t.cols[:0]
	err := x.children(func(s xml.StartElement) error {
		if s.Name.Local != "col" {
			return x.skip()
		}
		if len(t.cols) >= x.lim.MaxColumns {
			return x.limit("columns in one schema", int64(x.lim.MaxColumns), "columns")
		}
		c, err := x.col()
		if err != nil {
			return err
		}
		t.cols = append(t.cols, c)
		return nil
	})
	if err != nil {
		return err
	}
	t.roles()
	return nil
}

// col reads a col element's mnemonic and engineering type.
func (x *reader) col() (xcol, error) {
	var c xcol
	var field *string
	for {
		tok, err := x.token()
		if err != nil {
			return c, err
		}
		switch s := tok.(type) {
		case xml.StartElement:
			switch s.Name.Local {
			case "mnemonic":
				field = &c.mnemonic
			case "engineering-type":
				field = &c.typ
			default:
				if err := x.skip(); err != nil {
					return c, err
				}
			}
		case xml.CharData:
			if field != nil && len(*field)+len(s) <= 256 {
				*field += string(s)
			}
		case xml.EndElement:
			if field == nil {
				c.mnemonic, c.typ = strings.TrimSpace(c.mnemonic), strings.TrimSpace(c.typ)
				return c, nil
			}
			field = nil
		}
	}
}
