package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// The records in OTLP/JSON, read as protojson reads proto3's JSON mapping into the
// OpenTelemetry project's generated types with unknown fields discarded, but for the
// hex trace and span ids OTLP writes where proto3 writes base64. A member is named by
// its lowerCamel or its proto name, once (the two spellings are one field); null is the
// field's default; unknown members are skipped. Integers are JSON numbers or strings
// holding one (1e3 and 10.0 are integers), doubles also "NaN", "Infinity" or
// "-Infinity", bytes base64 (standard or URL-safe, padded or not); an enum is a name (an
// unknown one is the default) or an integer. An AnyValue with two members set is
// malformed. A member named [x] is unknown too: protojson looks it up as an extension,
// and no OTLP message has any.

// errMapping is a record that does not follow the OTLP JSON mapping; the caller words it.
var errMapping = errors.New("not the OTLP JSON mapping")

// jsonRecords reads one record held in memory.
type jsonRecords struct {
	dec *jsontext.Decoder
}

// reset starts reading v.
func (j *jsonRecords) reset(v []byte) {
	// v is valid JSON already (the file's own reader checked it): names need no second
	// duplicate check.
	if j.dec == nil {
		j.dec = jsontext.NewDecoder(bytes.NewBuffer(v), jsontext.AllowDuplicateNames(true))
		return
	}
	j.dec.Reset(bytes.NewBuffer(v), jsontext.AllowDuplicateNames(true))
}

// fields names a message's fields: at index i the lowerCamel and proto names of field i
// (empty where the message has no field i).
type fields [][2]string

// number is the number of the field named name; 0 when none is.
func (f fields) number(name string) int {
	for i, n := range f {
		if n[0] != "" && (n[0] == name || n[1] == name) {
			return i
		}
	}
	return 0
}

var (
	spanFields = fields{1: {"traceId", "trace_id"}, 2: {"spanId", "span_id"}, 3: {"traceState", "trace_state"},
		4: {"parentSpanId", "parent_span_id"}, 5: {"name", "name"}, 6: {"kind", "kind"},
		7: {"startTimeUnixNano", "start_time_unix_nano"}, 8: {"endTimeUnixNano", "end_time_unix_nano"},
		9: {"attributes", "attributes"}, 10: {"droppedAttributesCount", "dropped_attributes_count"},
		11: {"events", "events"}, 12: {"droppedEventsCount", "dropped_events_count"}, 13: {"links", "links"},
		14: {"droppedLinksCount", "dropped_links_count"}, 15: {"status", "status"}, 16: {"flags", "flags"}}
	eventFields = fields{1: {"timeUnixNano", "time_unix_nano"}, 2: {"name", "name"}, 3: {"attributes", "attributes"},
		4: {"droppedAttributesCount", "dropped_attributes_count"}}
	linkFields = fields{1: {"traceId", "trace_id"}, 2: {"spanId", "span_id"}, 3: {"traceState", "trace_state"},
		4: {"attributes", "attributes"}, 5: {"droppedAttributesCount", "dropped_attributes_count"}, 6: {"flags", "flags"}}
	statusFields   = fields{2: {"message", "message"}, 3: {"code", "code"}}
	resourceFields = fields{1: {"attributes", "attributes"}, 2: {"droppedAttributesCount", "dropped_attributes_count"},
		3: {"entityRefs", "entity_refs"}}
	entityRefFields = fields{1: {"schemaUrl", "schema_url"}, 2: {"type", "type"}, 3: {"idKeys", "id_keys"},
		4: {"descriptionKeys", "description_keys"}}
	scopeFields = fields{1: {"name", "name"}, 2: {"version", "version"}, 3: {"attributes", "attributes"},
		4: {"droppedAttributesCount", "dropped_attributes_count"}}
	keyValueFields = fields{1: {"key", "key"}, 2: {"value", "value"}, 3: {"keyStrindex", "key_strindex"}}
	anyValueFields = fields{1: {"stringValue", "string_value"}, 2: {"boolValue", "bool_value"}, 3: {"intValue", "int_value"},
		4: {"doubleValue", "double_value"}, 5: {"arrayValue", "array_value"}, 6: {"kvlistValue", "kvlist_value"},
		7: {"bytesValue", "bytes_value"}, 8: {"stringValueStrindex", "string_value_strindex"}}
	valuesFields = fields{1: {"values", "values"}}
)

// object reads the object that comes next as a message of fields f, calling member with
// the number of each known member whose value is not null (member reads the value). A
// field named twice, by either name, is malformed.
func (j *jsonRecords) object(f fields, member func(num int) error) error {
	if j.dec.PeekKind() != '{' {
		return errMapping
	}
	if _, err := j.dec.ReadToken(); err != nil {
		return err
	}
	var seen uint64
	for j.dec.PeekKind() != '}' {
		name, err := j.dec.ReadToken()
		if err != nil {
			return err
		}
		num := f.number(name.String())
		if num == 0 {
			if err := j.dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if seen&(1<<num) != 0 {
			return errMapping
		}
		seen |= 1 << num
		if j.dec.PeekKind() == 'n' {
			if _, err := j.dec.ReadToken(); err != nil {
				return err
			}
			continue
		}
		if err := member(num); err != nil {
			return err
		}
	}
	_, err := j.dec.ReadToken()
	return err
}

// array reads the array that comes next, calling elem for each element.
func (j *jsonRecords) array(elem func() error) error {
	if j.dec.PeekKind() != '[' {
		return errMapping
	}
	if _, err := j.dec.ReadToken(); err != nil {
		return err
	}
	for j.dec.PeekKind() != ']' {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err := j.dec.ReadToken()
	return err
}

// token reads the next token, which must be of kind k.
func (j *jsonRecords) token(k jsontext.Kind) (jsontext.Token, error) {
	if j.dec.PeekKind() != k {
		return jsontext.Token{}, errMapping
	}
	return j.dec.ReadToken()
}

func (j *jsonRecords) str() (string, error) {
	tok, err := j.token('"')
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}

func (j *jsonRecords) boolean() (bool, error) {
	k := j.dec.PeekKind()
	if k != 't' && k != 'f' {
		return false, errMapping
	}
	_, err := j.dec.ReadToken()
	return k == 't', err
}

// integer reads an integer, a JSON number or a string holding one, as decimal digits
// (integerText).
func (j *jsonRecords) integer() (string, error) {
	var s string
	switch j.dec.PeekKind() {
	case '0':
		tok, err := j.dec.ReadToken()
		if err != nil {
			return "", err
		}
		s = tok.String()
	case '"':
		tok, err := j.dec.ReadToken()
		if err != nil {
			return "", err
		}
		if s = tok.String(); !isJSONNumber(s) {
			return "", errMapping
		}
	default:
		return "", errMapping
	}
	i, ok := integerText(s)
	if !ok {
		return "", errMapping
	}
	return i, nil
}

// intN reads an integer of bits bits.
func (j *jsonRecords) intN(bits int) (int64, error) {
	s, err := j.integer()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, errMapping
	}
	return n, nil
}

// uintN reads an unsigned integer of bits bits.
func (j *jsonRecords) uintN(bits int) (uint64, error) {
	s, err := j.integer()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, errMapping
	}
	return n, nil
}

func (j *jsonRecords) u32() (uint32, error) {
	n, err := j.uintN(32)
	return uint32(n), err
}

func (j *jsonRecords) double() (float64, error) {
	if j.dec.PeekKind() == '"' {
		tok, err := j.dec.ReadToken()
		if err != nil {
			return 0, err
		}
		switch s := tok.String(); s {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		default:
			if !isJSONNumber(s) {
				return 0, errMapping
			}
			return parseDouble(s)
		}
	}
	tok, err := j.token('0')
	if err != nil {
		return 0, err
	}
	return parseDouble(tok.String())
}

func parseDouble(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errMapping
	}
	return f, nil
}

// b64 reads base64: URL-safe when it holds '-' or '_', unpadded when its length is not
// a multiple of 4.
func (j *jsonRecords) b64() ([]byte, error) {
	s, err := j.str()
	if err != nil {
		return nil, err
	}
	url, raw := strings.ContainsAny(s, "-_"), len(s)%4 != 0
	enc := base64.StdEncoding
	switch {
	case url && raw:
		enc = base64.RawURLEncoding
	case url:
		enc = base64.URLEncoding
	case raw:
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, errMapping
	}
	return b, nil
}

// hexID reads an OTLP id, hex.
func (j *jsonRecords) hexID() ([]byte, error) {
	s, err := j.str()
	if err != nil {
		return nil, err
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errMapping
	}
	return b, nil
}

// enum reads an enum of the value names names: a name (an unknown one, a string holding
// an integer included, is 0) or an integer, a JSON number.
func (j *jsonRecords) enum(names []string) (int32, error) {
	switch j.dec.PeekKind() {
	case '"':
		s, err := j.str()
		for i, n := range names {
			if n == s {
				return int32(i), err
			}
		}
		return 0, err
	case '0':
		n, err := j.intN(32)
		return int32(n), err
	}
	return 0, errMapping
}

// span reads a Span.
func (j *jsonRecords) span(s *SpanRecord) error {
	return j.object(spanFields, func(num int) (err error) {
		switch num {
		case 1:
			s.TraceID, err = j.hexID()
		case 2:
			s.SpanID, err = j.hexID()
		case 3:
			s.TraceState, err = j.str()
		case 4:
			s.ParentSpanID, err = j.hexID()
		case 5:
			s.Name, err = j.str()
		case 6:
			s.Kind, err = j.enum(spanKinds)
		case 7:
			s.StartTimeUnixNano, err = j.uintN(64)
		case 8:
			s.EndTimeUnixNano, err = j.uintN(64)
		case 9:
			s.Attributes, err = j.keyValues()
		case 10:
			s.DroppedAttributesCount, err = j.u32()
		case 11:
			err = j.array(func() error {
				s.Events = append(s.Events, SpanEvent{})
				return j.event(&s.Events[len(s.Events)-1])
			})
		case 12:
			s.DroppedEventsCount, err = j.u32()
		case 13:
			err = j.array(func() error {
				s.Links = append(s.Links, SpanLink{})
				return j.link(&s.Links[len(s.Links)-1])
			})
		case 14:
			s.DroppedLinksCount, err = j.u32()
		case 15:
			err = j.object(statusFields, func(num int) (err error) {
				switch num {
				case 2:
					s.Status.Message, err = j.str()
				case 3:
					s.Status.Code, err = j.enum(statusCodes)
				}
				return err
			})
		case 16:
			s.Flags, err = j.u32()
		}
		return err
	})
}

func (j *jsonRecords) event(e *SpanEvent) error {
	return j.object(eventFields, func(num int) (err error) {
		switch num {
		case 1:
			e.TimeUnixNano, err = j.uintN(64)
		case 2:
			e.Name, err = j.str()
		case 3:
			e.Attributes, err = j.keyValues()
		case 4:
			e.DroppedAttributesCount, err = j.u32()
		}
		return err
	})
}

func (j *jsonRecords) link(l *SpanLink) error {
	return j.object(linkFields, func(num int) (err error) {
		switch num {
		case 1:
			l.TraceID, err = j.hexID()
		case 2:
			l.SpanID, err = j.hexID()
		case 3:
			l.TraceState, err = j.str()
		case 4:
			l.Attributes, err = j.keyValues()
		case 5:
			l.DroppedAttributesCount, err = j.u32()
		case 6:
			l.Flags, err = j.u32()
		}
		return err
	})
}

// resource reads a Resource.
func (j *jsonRecords) resource(r *Resource) error {
	return j.object(resourceFields, func(num int) (err error) {
		switch num {
		case 1:
			r.Attributes, err = j.keyValues()
		case 2:
			r.DroppedAttributesCount, err = j.u32()
		case 3:
			err = j.array(func() error {
				r.EntityRefs = append(r.EntityRefs, EntityRef{})
				return j.entityRef(&r.EntityRefs[len(r.EntityRefs)-1])
			})
		}
		return err
	})
}

func (j *jsonRecords) entityRef(e *EntityRef) error {
	return j.object(entityRefFields, func(num int) (err error) {
		switch num {
		case 1:
			e.SchemaURL, err = j.str()
		case 2:
			e.Type, err = j.str()
		case 3:
			e.IDKeys, err = j.strList()
		case 4:
			e.DescriptionKeys, err = j.strList()
		}
		return err
	})
}

// strList reads an array of strings.
func (j *jsonRecords) strList() ([]string, error) {
	var out []string
	err := j.array(func() error {
		s, err := j.str()
		out = append(out, s)
		return err
	})
	return out, err
}

// scope reads an InstrumentationScope.
func (j *jsonRecords) scope(s *Scope) error {
	return j.object(scopeFields, func(num int) (err error) {
		switch num {
		case 1:
			s.Name, err = j.str()
		case 2:
			s.Version, err = j.str()
		case 3:
			s.Attributes, err = j.keyValues()
		case 4:
			s.DroppedAttributesCount, err = j.u32()
		}
		return err
	})
}

// keyValues reads an array of KeyValue.
func (j *jsonRecords) keyValues() ([]KeyValue, error) {
	var kvs []KeyValue
	err := j.array(func() error {
		kvs = append(kvs, KeyValue{})
		kv := &kvs[len(kvs)-1]
		return j.object(keyValueFields, func(num int) (err error) {
			switch num {
			case 1:
				kv.Key, err = j.str()
			case 2:
				err = j.anyValue(&kv.Value)
			case 3:
				var n int64
				n, err = j.intN(32)
				kv.KeyStrindex = int32(n)
			}
			return err
		})
	})
	return kvs, err
}

// anyValue reads an AnyValue: one member at most (a member set to null is none).
func (j *jsonRecords) anyValue(v *AnyValue) error {
	set := false
	return j.object(anyValueFields, func(num int) (err error) {
		if set {
			return errMapping
		}
		set = true
		switch num {
		case 1:
			v.Kind = ValueString
			v.String, err = j.str()
		case 2:
			v.Kind = ValueBool
			v.Bool, err = j.boolean()
		case 3:
			v.Kind = ValueInt
			v.Int, err = j.intN(64)
		case 4:
			v.Kind = ValueDouble
			v.Double, err = j.double()
		case 5:
			v.Kind = ValueArray
			err = j.object(valuesFields, func(int) error {
				return j.array(func() error {
					v.Array = append(v.Array, AnyValue{})
					return j.anyValue(&v.Array[len(v.Array)-1])
				})
			})
		case 6:
			v.Kind = ValueKvlist
			err = j.object(valuesFields, func(int) (err error) {
				v.Kvlist, err = j.keyValues()
				return err
			})
		case 7:
			v.Kind = ValueBytes
			v.Bytes, err = j.b64()
		case 8:
			v.Kind = ValueStrindex
			v.Int, err = j.intN(32)
		}
		return err
	})
}

// isJSONNumber reports whether s is a JSON number, whole: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// digits is the index past the decimal digits of s from i.
func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// integerText writes the JSON number s (isJSONNumber) as a decimal integer, without its
// fraction and exponent, for strconv to range-check: false when s is not an integer, its
// exponent does not fit an int32 or would make it longer than 20 digits. 1.5e1 is 15,
// 100e-2 is 1, -0.0 is 0.
func integerText(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	intp, frac, _ := strings.Cut(mant, ".")
	intp = strings.TrimPrefix(intp, "0") // a leading 0 is the whole integer part
	frac = strings.TrimRight(frac, "0")
	if intp == "" && frac == "" {
		return "0", true
	}
	e := 0
	if exp != "" {
		n, err := strconv.ParseInt(exp, 10, 32)
		if err != nil {
			return "", false
		}
		e = int(n)
	}
	var num string
	if e >= 0 {
		if len(frac) > e || len(intp)+e > 20 {
			return "", false
		}
		num = intp + frac + strings.Repeat("0", e-len(frac))
	} else {
		at := len(intp) + e
		if len(frac) > 0 || at < 0 || strings.TrimRight(intp[at:], "0") != "" {
			return "", false
		}
		num = intp[:at]
	}
	if neg {
		return "-" + num, true
	}
	return num, true
}
