package preview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// jsonReader projects one JSON document in a single streaming pass, in document order:
// a root array yields its elements, a root scalar one value row, and a root object yields,
// per member, one section row per element of an array, a key/type row for a nested
// object, and a key/value row for a scalar. Keys are literal strings.
type jsonReader struct {
	f      io.ReadCloser
	dec    *jsontext.Decoder
	index  int
	digest string
	row    int64
	state  int
	// section is the name of the root member whose array is being read.
	section string
}

const (
	jsonStart = iota
	jsonArray
	jsonObject
	jsonSection
	jsonEnd
)

func openJSON(src Source, index int) (*jsonReader, error) {
	f, err := openStream(src, index)
	if err != nil {
		return nil, err
	}
	budget := &tokenBudget{r: bufio.NewReaderSize(f, readBufferBytes), max: MaxRecordBytes}
	dec := jsontext.NewDecoder(budget)
	budget.dec = dec
	return &jsonReader{f: f, dec: dec, index: index, digest: src.SHA256}, nil
}

// tokenBudget bounds what the JSON decoder may hold unconsumed: the bytes read past the
// end of its last complete token. The decoder buffers a token (or, in ReadValue, a whole
// value) contiguously, so without this bound a 2 GiB string inside a small gzip grows
// the heap to its size before any check after the read could see it. Reads are cut so
// that at most max+1 bytes are ever unconsumed; a decoder that still needs more is
// reading a token, or a materialized entry, longer than max bytes, and gets
// errRecordTooLarge (csvrows.go).
type tokenBudget struct {
	r    io.Reader
	dec  *jsontext.Decoder
	read int64
	max  int64
}

func (b *tokenBudget) Read(p []byte) (int, error) {
	room := b.max + 1 - (b.read - b.dec.InputOffset())
	if room <= 0 {
		return 0, errRecordTooLarge
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (j *jsonReader) Close() error { return j.f.Close() }

func (j *jsonReader) fail(err error) error {
	if errors.Is(err, errRecordTooLarge) {
		return j.tooLarge()
	}
	var se *jsontext.SyntacticError
	msg := "the JSON document could not be decoded"
	if errors.As(err, &se) {
		msg = fmt.Sprintf("the JSON document is malformed near byte %d", j.dec.InputOffset())
	}
	if err == io.ErrUnexpectedEOF {
		msg = "the JSON document ends before its root value is complete"
	}
	return decodeError(j.index, j.row+1, err, msg)
}

// step advances to the next row. When materialize is false the row is skipped without
// building it.
func (j *jsonReader) step(materialize bool) (json.RawMessage, error) {
	for {
		switch j.state {
		case jsonStart:
			switch j.dec.PeekKind() {
			case '[':
				if _, err := j.dec.ReadToken(); err != nil {
					return nil, j.fail(err)
				}
				j.state = jsonArray
			case '{':
				if _, err := j.dec.ReadToken(); err != nil {
					return nil, j.fail(err)
				}
				j.state = jsonObject
			case 0:
				_, err := j.dec.ReadToken()
				if err == io.EOF {
					return nil, decodeError(j.index, 0, nil, "the JSON document is empty")
				}
				return nil, j.fail(err)
			default:
				v, err := j.readValue()
				if err != nil {
					return nil, err
				}
				j.state = jsonEnd
				return j.emit(materialize, func() (json.RawMessage, error) {
					return recordRow(v, j.digest, nil, func(o *object) { o.int("record_index", 0) })
				})
			}
		case jsonArray, jsonSection:
			if j.dec.PeekKind() == ']' {
				if _, err := j.dec.ReadToken(); err != nil {
					return nil, j.fail(err)
				}
				if j.state == jsonArray {
					j.state = jsonEnd
				} else {
					j.state = jsonObject
				}
				continue
			}
			if !materialize {
				if err := j.dec.SkipValue(); err != nil {
					return nil, j.fail(err)
				}
				j.row++
				return nil, nil
			}
			v, err := j.readValue()
			if err != nil {
				return nil, err
			}
			j.row++
			index := j.row - 1
			if j.state == jsonArray {
				return recordRow(v, j.digest, []string{"input_sha256", "record_index"}, func(o *object) { o.int("record_index", index) })
			}
			section := j.section
			return recordRow(v, j.digest, []string{"input_sha256", "record_index", "section"}, func(o *object) {
				o.int("record_index", index)
				o.str("section", section)
			})
		case jsonObject:
			if j.dec.PeekKind() == '}' {
				if _, err := j.dec.ReadToken(); err != nil {
					return nil, j.fail(err)
				}
				j.state = jsonEnd
				continue
			}
			name, err := j.dec.ReadToken()
			if err != nil {
				return nil, j.fail(err)
			}
			key := name.String()
			switch j.dec.PeekKind() {
			case '[':
				if _, err := j.dec.ReadToken(); err != nil {
					return nil, j.fail(err)
				}
				j.section = key
				j.state = jsonSection
				continue
			case '{':
				if err := j.dec.SkipValue(); err != nil {
					return nil, j.fail(err)
				}
				index := j.row
				return j.emit(materialize, func() (json.RawMessage, error) {
					o := newObject()
					o.int("record_index", index)
					o.str("key", key)
					o.str("value_type", "object")
					o.str("input_sha256", j.digest)
					return o.done(), nil
				})
			default:
				v, err := j.readValue()
				if err != nil {
					return nil, err
				}
				index := j.row
				return j.emit(materialize, func() (json.RawMessage, error) {
					pv, err := projectValue(v)
					if err != nil {
						return nil, err
					}
					o := newObject()
					o.int("record_index", index)
					o.str("key", key)
					o.raw("value", pv)
					o.str("input_sha256", j.digest)
					return o.done(), nil
				})
			}
		case jsonEnd:
			// The document must end after its root value.
			if _, err := j.dec.ReadToken(); err != io.EOF {
				if err == nil {
					return nil, decodeError(j.index, j.row+1, nil, "the JSON document has data after its root value")
				}
				return nil, j.fail(err)
			}
			return nil, io.EOF
		}
	}
}

func (j *jsonReader) emit(materialize bool, build func() (json.RawMessage, error)) (json.RawMessage, error) {
	j.row++
	if !materialize {
		return nil, nil
	}
	return build()
}

func (j *jsonReader) readValue() (jsontext.Value, error) {
	start := j.dec.InputOffset()
	v, err := j.dec.ReadValue()
	if err != nil {
		return nil, j.fail(err)
	}
	if j.dec.InputOffset()-start > MaxRecordBytes {
		return nil, j.tooLarge()
	}
	return v.Clone(), nil
}

func (j *jsonReader) tooLarge() error {
	return limitError(j.index, j.row+1, MaxRecordBytes, fmt.Sprintf("JSON entry %d of source %d is larger than %d bytes", j.row+1, j.index, MaxRecordBytes))
}

func (j *jsonReader) skip(n int64) (int64, error) {
	return skipRows(n, func() error { _, err := j.step(false); return err })
}

func (j *jsonReader) next() (json.RawMessage, error) { return j.step(true) }

// jsonlReader yields one row per non-blank line; each line must be one JSON value.
type jsonlReader struct {
	text *textReader
	row  int64
}

func openJSONL(src Source, index int) (*jsonlReader, error) {
	t, err := openText(src, index)
	if err != nil {
		return nil, err
	}
	return &jsonlReader{text: t}, nil
}

func (j *jsonlReader) Close() error { return j.text.Close() }

func (j *jsonlReader) readRecord() ([]byte, error) {
	for {
		line, err := j.text.readLine(MaxRecordBytes, "")
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

func (j *jsonlReader) skip(n int64) (int64, error) {
	return skipRows(n, func() error {
		_, err := j.readRecord()
		if err == nil {
			j.row++
		}
		return err
	})
}

func (j *jsonlReader) next() (json.RawMessage, error) {
	line, err := j.readRecord()
	if err != nil {
		return nil, err
	}
	j.row++
	v := jsontext.Value(bytes.Clone(bytes.TrimSpace(line)))
	if !v.IsValid() {
		return nil, decodeError(j.text.index, j.row, nil, fmt.Sprintf("JSONL record %d (line %d) of source %d is not one valid JSON value in UTF-8", j.row, j.text.line, j.text.index))
	}
	index := j.row - 1
	return recordRow(v, j.text.digest, []string{"input_sha256", "record_index"}, func(o *object) { o.int("record_index", index) })
}
