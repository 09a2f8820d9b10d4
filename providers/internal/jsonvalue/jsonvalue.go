// Package jsonvalue renders native values (decoded Parquet values, SQLite columns) as
// JSON with the canonical value projection the providers share: integers beyond
// ±(2^53-1) and non-finite floats become strings, invalid UTF-8 is replaced with U+FFFD,
// and bytes that are not UTF-8 become base64.
package jsonvalue

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxSafe is 2^53-1: integers beyond it become decimal strings.
const MaxSafe = 1<<53 - 1

// AppendString appends s as a JSON string, replacing each invalid UTF-8 byte with U+FFFD.
func AppendString(dst []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = ReplaceInvalid(s)
	}
	out, err := jsontext.AppendQuote(dst, s)
	if err != nil {
		panic(err) // unreachable: s is valid UTF-8
	}
	return out
}

// ReplaceInvalid decodes s as UTF-8, replacing every invalid byte with U+FFFD as Python's
// "replace" error handler does.
func ReplaceInvalid(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// AppendFloat appends a native float, carrying non-finite values as strings.
func AppendFloat(dst []byte, f float64) []byte { return appendFloat(dst, f, 64) }

// appendFloat appends f in the shortest form that reads back as the same float of bits
// bits (a float32's 0.1 is 0.1, not the float64 it widens to).
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// AppendInt appends a native integer, carrying wide values as strings.
func AppendInt(dst []byte, n int64) []byte {
	if n > MaxSafe || n < -MaxSafe {
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, n, 10)
		return append(dst, '"')
	}
	return strconv.AppendInt(dst, n, 10)
}

// appendNumber appends a JSON number kept as its text (json.Number): a string where
// WideNumber says so, else an integer in its decimal form and any other number as it is
// written.
func appendNumber(dst []byte, n json.Number) []byte {
	if s, wide := WideNumber(string(n)); wide {
		return AppendString(dst, s)
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return strconv.AppendInt(dst, i, 10)
	}
	return append(dst, n...)
}

// WideNumber reports whether the JSON number literal lit must be carried as a string, and
// which: an integer outside ±(2^53-1) as its digits, a number that overflows float64 as
// "Infinity" or "-Infinity".
func WideNumber(lit string) (string, bool) {
	if !strings.ContainsAny(lit, ".eE") {
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || n > MaxSafe || n < -MaxSafe {
			return lit, true
		}
		return "", false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		if f < 0 {
			return "-Infinity", true
		}
		return "Infinity", true
	}
	return "", false
}

// Append appends one native value: nil, booleans, Go's integer and float kinds (a float32
// in its own shortest form), JSON numbers kept as text (json.Number), strings, bytes,
// times (RFC 3339 in UTC), and lists and string-keyed maps of these (keys sorted).
// Any other value is rendered as its fmt form, as a string.
func Append(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int:
		return AppendInt(dst, int64(x))
	case int8:
		return AppendInt(dst, int64(x))
	case int16:
		return AppendInt(dst, int64(x))
	case int32:
		return AppendInt(dst, int64(x))
	case int64:
		return AppendInt(dst, x)
	case uint8:
		return AppendInt(dst, int64(x))
	case uint16:
		return AppendInt(dst, int64(x))
	case uint32:
		return AppendInt(dst, int64(x))
	case uint64:
		if x > MaxSafe {
			return AppendString(dst, strconv.FormatUint(x, 10))
		}
		return AppendInt(dst, int64(x))
	case float32:
		return appendFloat(dst, float64(x), 32)
	case json.Number:
		return appendNumber(dst, x)
	case float64:
		return AppendFloat(dst, x)
	case string:
		return AppendString(dst, x)
	case []byte:
		if utf8.Valid(x) {
			return AppendString(dst, string(x))
		}
		return AppendString(dst, base64.StdEncoding.EncodeToString(x))
	case time.Time:
		return AppendString(dst, x.UTC().Format(time.RFC3339Nano))
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = Append(dst, x[k])
		}
		return append(dst, '}')
	}
	return AppendString(dst, fmt.Sprint(v))
}
