package nsys

import (
	"cmp"
	"fmt"
	"strconv"

	"github.com/flameox/flameox/providers"
)

// The native readers of a parquetdir (decision 0057). Each read takes the columns it
// uses, table by table (parquetRead.scan), and does in Go what the SQL readers' queries
// do over an nsys-sqlite export: the StringIds and ENUM_CUDA_MEMCPY_OPER joins,
// ThreadNames and PROCESSES, the correlation of GPU activity with its CUDA API call, the
// unions and their orders. It yields the records with the values, and in the order, that
// the queries yield for the same tables. A join resolves an id by the first row that
// holds it: the export's id columns are primary keys, which a Parquet file does not
// enforce.

// Where a native row's name comes from.
const (
	refNull uint8 = iota // nowhere: the name is the table's default
	refLit               // the literal lit
	refID                // StringIds' value of id, else the table's default
)

// nameRef is a native row's name before StringIds is read.
type nameRef struct {
	lit string
	id  int64
	how uint8
}

// litRef names a row by a literal (null: no name).
func litRef(s OptStr) nameRef {
	if !s.ok {
		return nameRef{}
	}
	return nameRef{lit: s.s, how: refLit}
}

// idRef names a row by a StringIds id (null: no name).
func idRef(id OptInt) nameRef {
	if !id.ok {
		return nameRef{}
	}
	return nameRef{id: id.n, how: refID}
}

// stringIds are the StringIds rows a read needs: the ids are collected first (need),
// then resolve reads StringIds once and keeps those ids' values.
type stringIds struct {
	want map[int64]struct{}
	// got holds the ids that have a row, with their values (ok false: a null value).
	got map[int64]OptStr
}

func newStringIds() *stringIds {
	return &stringIds{want: map[int64]struct{}{}, got: map[int64]OptStr{}}
}

func (s *stringIds) need(r nameRef) {
	if r.how == refID {
		s.want[r.id] = struct{}{}
	}
}

// name is coalesce(literal, StringIds value, dflt) for r.
func (s *stringIds) name(r nameRef, dflt OptStr) OptStr {
	switch r.how {
	case refLit:
		return OptStr{s: r.lit, ok: true}
	case refID:
		if v := s.got[r.id]; v.ok {
			return v
		}
	}
	return dflt
}

// resolve reads StringIds for the ids s needs.
func (p *parquetRead) resolve(s *stringIds) error {
	if len(s.want) == 0 {
		return nil
	}
	_, err := p.scan("StringIds", []pqColumn{intCol("id"), textCol("value")}, func(_ int64, v []pqValue) error {
		if v[0].null {
			return nil
		}
		if _, ok := s.want[v[0].n]; !ok {
			return nil
		}
		if _, ok := s.got[v[0].n]; !ok {
			s.got[v[0].n] = v[1].str()
		}
		return nil
	})
	return err
}

// memcpyEnum is ENUM_CUDA_MEMCPY_OPER by id, and the memcpy names made of it.
type memcpyEnum struct {
	rows   map[int64][2]OptStr // name, label
	labels map[int64]string
}

// memcpyEnum reads ENUM_CUDA_MEMCPY_OPER when the parquetdir holds memcpy records: its
// labels, and its names too when names is set.
func (p *parquetRead) memcpyEnum(names bool) (*memcpyEnum, error) {
	e := &memcpyEnum{rows: map[int64][2]OptStr{}, labels: map[int64]string{}}
	if !p.has("CUPTI_ACTIVITY_KIND_MEMCPY") {
		return e, nil
	}
	cols := []pqColumn{intCol("id"), textCol("label")}
	if names {
		cols = append(cols, textCol("name"))
	}
	_, err := p.scan("ENUM_CUDA_MEMCPY_OPER", cols, func(_ int64, v []pqValue) error {
		if v[0].null {
			return nil
		}
		if _, ok := e.rows[v[0].n]; !ok {
			r := [2]OptStr{1: v[1].str()}
			if names {
				r[0] = v[2].str()
			}
			e.rows[v[0].n] = r
		}
		return nil
	})
	return e, err
}

// label is a memcpy's name, '[CUDA memcpy ' || coalesce(label, copyKind) || ']'.
func (e *memcpyEnum) label(kind OptInt) OptStr {
	if !kind.ok {
		return OptStr{}
	}
	s, ok := e.labels[kind.n]
	if !ok {
		if l := e.rows[kind.n][1]; l.ok {
			s = "[CUDA memcpy " + l.s + "]"
		} else {
			s = "[CUDA memcpy " + strconv.FormatInt(kind.n, 10) + "]"
		}
		e.labels[kind.n] = s
	}
	return OptStr{s: s, ok: true}
}

// kind is a memcpy's copy kind, coalesce(name, CAST(copyKind AS TEXT)).
func (e *memcpyEnum) kind(kind OptInt) OptStr {
	if !kind.ok {
		return OptStr{}
	}
	if n := e.rows[kind.n][0]; n.ok {
		return n
	}
	return OptStr{s: strconv.FormatInt(kind.n, 10), ok: true}
}

// memsetName names every memset.
var memsetName = OptStr{s: "[CUDA memset]", ok: true}

// nullName is a row whose name is null where the SQL reader scans it into a string: a
// memcpy record without a copyKind.
func (p *parquetRead) nullName() error {
	return &providers.DecodeError{Source: p.in.Index,
		Message: fmt.Sprintf("source %d: CUPTI_ACTIVITY_KIND_MEMCPY%s holds a record without a copyKind, which names it", p.in.Index, parquetSuffix)}
}

// overflow is a sum past 2^63-1, which SQLite's sum refuses too.
func (p *parquetRead) overflow(what string) error {
	return &providers.DecodeError{Source: p.in.Index,
		Message: fmt.Sprintf("source %d: the %s sum past 2^63-1", p.in.Index, what)}
}

// sub is b - a, and whether it is exact.
func sub(b, a int64) (int64, bool) {
	d := b - a
	return d, (d < b) == (a > 0)
}

// add is a + b, and whether it is exact.
func add(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

// cmpOpt orders integers as SQLite's ORDER BY does: null first.
func cmpOpt(a, b OptInt) int {
	if a.ok != b.ok {
		if !a.ok {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.n, b.n)
}

// threadOf is a serialized global thread id's process part (globalTid & ~16777215).
func threadOf(gtid OptInt) OptInt {
	if !gtid.ok {
		return OptInt{}
	}
	return some(gtid.n &^ 0xFFFFFF)
}

// apiKey is a CUDA API call's correlation id and process (globalTid >> 24; GPU
// activity's globalPid >> 24).
type apiKey struct{ corr, proc int64 }

// apiCall is the first CUDA API call (by rowid) of an apiKey: its slice id (its
// table's id base plus its rowid - 1), start, global thread id and name's StringIds id.
type apiCall struct {
	id               int64
	start, tid, name OptInt
}

// apiCalls reads CUPTI_ACTIVITY_KIND_RUNTIME's first call of each apiKey that keep
// accepts (nil: every key), the api table of the launch and lifecycle queries; base is
// the table's id base.
func (p *parquetRead) apiCalls(base int64, keep func(apiKey) bool) (map[apiKey]apiCall, error) {
	calls := map[apiKey]apiCall{}
	_, err := p.scan("CUPTI_ACTIVITY_KIND_RUNTIME", []pqColumn{intCol("correlationId"), intCol("globalTid"), intCol("start"), intCol("nameId")},
		func(row int64, v []pqValue) error {
			if v[0].null || v[1].null {
				return nil
			}
			k := apiKey{v[0].n, v[1].n >> 24}
			if _, ok := calls[k]; ok || (keep != nil && !keep(k)) {
				return nil
			}
			calls[k] = apiCall{id: base + row, start: v[2].num(), tid: v[1].num(), name: v[3].num()}
			return nil
		})
	return calls, err
}

// gpuKey is the apiKey a kernel, memcpy or memset record joins on.
func gpuKey(corr, pid OptInt) (apiKey, bool) {
	return apiKey{corr.n, pid.n >> 24}, corr.ok && pid.ok
}
