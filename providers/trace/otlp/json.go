package otlp

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/flameox/flameox/providers"
)

type jsonKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string `json:"stringValue"`
	} `json:"value"`
}

type jsonResource struct {
	Attributes []jsonKV `json:"attributes"`
}

type jsonSpan struct {
	TraceID           string         `json:"traceId"`
	SpanID            string         `json:"spanId"`
	ParentSpanID      string         `json:"parentSpanId"`
	Name              string         `json:"name"`
	Kind              jsontext.Value `json:"kind"`
	StartTimeUnixNano jsontext.Value `json:"startTimeUnixNano"`
	EndTimeUnixNano   jsontext.Value `json:"endTimeUnixNano"`
	Events            []struct {
		TimeUnixNano jsontext.Value `json:"timeUnixNano"`
		Name         string         `json:"name"`
	} `json:"events"`
	Links  []jsontext.Value `json:"links"`
	Status *struct {
		Code jsontext.Value `json:"code"`
	} `json:"status"`
}

func (d *decoder) jsonNode(v jsontext.Value, what string) (uint64, error) {
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	s := string(v)
	if s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, d.bad("%s is not an unsigned 64-bit integer (a decimal string or number)", what)
	}
	return n, nil
}

func (d *decoder) jsonEnum(v jsontext.Value, names []string, what string) (int32, error) {
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	if v[0] == '"' {
		s := string(v[1 : len(v)-1])
		for i, n := range names {
			if n == s {
				return int32(i), nil
			}
		}
		return 0, d.bad("%s %q is not one of %s", what, s, strings.Join(names, ", "))
	}
	n, err := strconv.ParseInt(string(v), 10, 32)
	if err != nil {
		return 0, d.bad("%s is not an enum integer or name", what)
	}
	return int32(n), nil
}

func (d *decoder) jsonID(dst []byte, s, what string) (bool, error) {
	if s == "" {
		return false, nil
	}
	if len(s) != 2*len(dst) {
		return false, d.bad("%s %q is not %d hex digits", what, s, 2*len(dst))
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return false, d.bad("%s %q is not hex", what, s)
	}
	return true, nil
}

func (d *decoder) jsonSpan(v jsontext.Value) error {
	var j jsonSpan
	if err := json.Unmarshal(v, &j); err != nil {
		return d.bad("a span does not follow the OTLP JSON mapping")
	}
	s := &d.span
	events := s.Events[:0]
	*s = Span{Name: j.Name, Links: len(j.Links)}
	var err error
	if _, err = d.jsonID(s.TraceID[:], j.TraceID, "traceId"); err != nil {
		return err
	}
	if _, err = d.jsonID(s.SpanID[:], j.SpanID, "spanId"); err != nil {
		return err
	}
	if s.HasParent, err = d.jsonID(s.ParentSpanID[:], j.ParentSpanID, "parentSpanId"); err != nil {
		return err
	}
	s.HasParent = s.HasParent && s.ParentSpanID != [8]byte{}
	if s.Kind, err = d.jsonEnum(j.Kind, spanKinds, "kind"); err != nil {
		return err
	}
	if s.Start, err = d.jsonNode(j.StartTimeUnixNano, "startTimeUnixNano"); err != nil {
		return err
	}
	if s.End, err = d.jsonNode(j.EndTimeUnixNano, "endTimeUnixNano"); err != nil {
		return err
	}
	if j.Status != nil {
		if s.StatusCode, err = d.jsonEnum(j.Status.Code, statusCodes, "status.code"); err != nil {
			return err
		}
	}
	for _, e := range j.Events {
		t, err := d.jsonNode(e.TimeUnixNano, "timeUnixNano")
		if err != nil {
			return err
		}
		events = append(events, Event{Time: t, Name: e.Name})
	}
	s.Events = events
	return nil
}

// jsonErr turns a jsontext error into a typed one without its text.
func (d *decoder) jsonErr(err error) error {
	var de *providers.DecodeError
	var le *providers.LimitError
	if errors.As(err, &de) || errors.As(err, &le) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return &providers.DecodeError{Source: d.source, Message: fmt.Sprintf("source %d is not valid JSON at byte %d", d.source, se.ByteOffset),
			Details: map[string]any{"byte_offset": se.ByteOffset}}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return d.bad("the JSON ends early")
	}
	return d.bad("unreadable JSON")
}

// members walks the members of the object whose '{' comes next, calling f with each name
// (f reads or skips the value).
func members(dec *jsontext.Decoder, f func(name string) error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return errNotObject
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := f(name.String()); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// elements walks the array whose '[' comes next (null is an empty array).
func elements(dec *jsontext.Decoder, f func() error) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '[' {
		return errNotArray
	}
	for dec.PeekKind() != ']' {
		if err := f(); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

var (
	errNotObject = errors.New("not an object")
	errNotArray  = errors.New("not an array")
)

func (d *decoder) value(dec *jsontext.Decoder) (jsontext.Value, error) {
	if dec.PeekKind() == 0 {
		_, err := dec.ReadToken()
		return nil, err
	}
	// ReadValue buffers one value; bound it by the offsets around it.
	start := dec.InputOffset()
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if dec.InputOffset()-start > maxMessageBytes {
		return nil, &providers.LimitError{Source: d.source, Limit: maxMessageBytes, Unit: "bytes",
			Message: fmt.Sprintf("source %d holds an OTLP span, resource or scope of more than %d bytes", d.source, maxMessageBytes)}
	}
	return v, nil
}

func (d *decoder) json(r io.Reader) error {
	dec := jsontext.NewDecoder(r)
	top := 0
	for {
		if dec.PeekKind() == 0 {
			if _, err := dec.ReadToken(); err == io.EOF {
				if top == 0 {
					return d.bad("the file holds no JSON object")
				}
				return nil
			} else if err != nil {
				return d.fixErr(err)
			}
		}
		top++
		err := members(dec, func(name string) error {
			if name != "resourceSpans" {
				return dec.SkipValue()
			}
			return elements(dec, func() error {
				d.beginResource()
				return d.endResource(members(dec, func(name string) error {
					switch name {
					case "resource":
						v, err := d.value(dec)
						if err != nil {
							return err
						}
						var res jsonResource
						if err := json.Unmarshal(v, &res); err != nil {
							return d.bad("a resource does not follow the OTLP JSON mapping")
						}
						d.resourceSeen = true
						for _, kv := range res.Attributes {
							if kv.Key == "service.name" && kv.Value.StringValue != nil {
								d.service = kv.Value.StringValue
							}
						}
						if d.tables != nil {
							if err := d.jsonRecord(v, "resource", func(j *jsonRecords) error { return j.resource(&d.res) }); err != nil {
								return err
							}
						}
						return d.sendResource()
					case "scopeSpans":
						return elements(dec, func() error {
							d.beginScope()
							return d.endScope(members(dec, func(name string) error {
								if name == "scope" && d.tables != nil {
									v, err := d.value(dec)
									if err != nil {
										return err
									}
									if err := d.jsonRecord(v, "scope", func(j *jsonRecords) error { return j.scope(&d.scope) }); err != nil {
										return err
									}
									return d.sendScope()
								}
								if name != "spans" {
									return dec.SkipValue()
								}
								return elements(dec, func() error {
									v, err := d.value(dec)
									if err != nil {
										return err
									}
									if err := d.jsonSpan(v); err != nil {
										return err
									}
									if d.wantsSpan() {
										if err := d.jsonFullSpan(v); err != nil {
											return err
										}
										d.whole = true
									}
									return d.emit()
								})
							}))
						})
					}
					return dec.SkipValue()
				}))
			})
		})
		if err != nil {
			return d.fixErr(err)
		}
	}
}

// fixErr words an error of the JSON reader; an error of the caller's passes as it is.
func (d *decoder) fixErr(err error) error {
	var c *callerError
	switch {
	case errors.As(err, &c):
		return err
	case errors.Is(err, errNotObject):
		return d.bad("expected a JSON object (ExportTraceServiceRequest, resource_spans element, scope_spans element)")
	case errors.Is(err, errNotArray):
		return d.bad("resourceSpans, scopeSpans and spans must be arrays")
	}
	return d.jsonErr(err)
}

// jsonRecord reads the record v, a what, with read.
func (d *decoder) jsonRecord(v jsontext.Value, what string, read func(*jsonRecords) error) error {
	d.records.reset(v)
	if err := read(&d.records); err != nil {
		return d.bad("a %s does not follow the OTLP JSON mapping", what)
	}
	return nil
}

// jsonFullSpan reads the span v whole into d.full.
func (d *decoder) jsonFullSpan(v jsontext.Value) error {
	if err := d.jsonHexIDs(v); err != nil {
		return err
	}
	d.full = SpanRecord{}
	return d.jsonRecord(v, "span", func(j *jsonRecords) error { return j.span(&d.full) })
}

// idNames are the members of a span or a link whose hex ids jsonHexIDs checks, in its
// order (a link's parent ids are checked too, then ignored as unknown).
var idNames = [...]string{"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}

// jsonHexIDs checks the hex ids of the span v before anything else of it is read whole,
// and words their errors: the span's own ids, that its links are an array of objects (or
// null), then each link's ids.
func (d *decoder) jsonHexIDs(v jsontext.Value) error {
	d.records.reset(v)
	dec := d.records.dec
	if dec.PeekKind() != '{' {
		return d.bad("a span does not follow the OTLP JSON mapping")
	}
	var links jsontext.Value
	ids, err := idMembers(dec, func(name string) (bool, error) {
		if name != "links" {
			return false, nil
		}
		v, err := dec.ReadValue()
		links = v.Clone()
		return true, err
	})
	if err != nil {
		return d.bad("a span does not follow the OTLP JSON mapping")
	}
	if err := d.checkHexIDs(&ids); err != nil {
		return err
	}
	var linkIDs [][len(idNames)]jsontext.Value
	if len(links) > 0 {
		d.records.reset(links)
		err := elements(dec, func() error {
			switch dec.PeekKind() {
			case 'n':
				_, err := dec.ReadToken()
				return err
			case '{':
				ids, err := idMembers(dec, nil)
				linkIDs = append(linkIDs, ids)
				return err
			}
			return errNotObject
		})
		if err != nil {
			return d.bad("a span's links do not follow the OTLP JSON mapping")
		}
	}
	for i := range linkIDs {
		if err := d.checkHexIDs(&linkIDs[i]); err != nil {
			return err
		}
	}
	return nil
}

// idMembers reads the object that comes next, keeping the values of its id members
// (idNames) and offering every other member to other, which reads its value or returns
// false for it to be skipped.
func idMembers(dec *jsontext.Decoder, other func(name string) (bool, error)) (ids [len(idNames)]jsontext.Value, err error) {
	err = members(dec, func(name string) error {
		for i, n := range idNames {
			if n == name {
				v, err := dec.ReadValue()
				ids[i] = v.Clone()
				return err
			}
		}
		if other != nil {
			if read, err := other(name); read || err != nil {
				return err
			}
		}
		return dec.SkipValue()
	})
	return ids, err
}

// checkHexIDs checks the id members' values, in idNames' order: each a string of hex
// digits or null.
func (d *decoder) checkHexIDs(ids *[len(idNames)]jsontext.Value) error {
	for i, v := range ids {
		var s string
		switch v.Kind() {
		case 0, 'n':
			continue
		case '"':
			b, err := jsontext.AppendUnquote(nil, v)
			if err != nil {
				return d.bad("%s is not a string", idNames[i])
			}
			s = string(b)
		default:
			return d.bad("%s is not a string", idNames[i])
		}
		if _, err := hex.DecodeString(s); err != nil {
			return d.bad("%s %q is not hex", idNames[i], s)
		}
	}
	return nil
}
