// Package canon produces RFC 8785 (JCS) canonical JSON and the SHA-256 digests Flameox
// derives from it (continuations, analysis handles, evidence identities).
//
// RFC 8785 formats every number as an IEEE double, which would round an integer outside
// +-(2^53-1). Such integers are carried exactly instead, tagged as
// {"$flameox.integer": "<decimal>"}, so that no recorded figure (a nanosecond epoch, a
// wide native counter) can make an identity fail or collide.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// IntegerTag is the member name that carries an integer outside +-(2^53-1) as its exact
// decimal string.
const IntegerTag = "$flameox.integer"

// maxSafeInteger is 2^53-1, the largest integer every JSON reader represents exactly.
const maxSafeInteger = 1<<53 - 1

// Marshal returns the RFC 8785 canonical encoding of v, wide integers tagged.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonical(b)
}

// Digest returns the lowercase hex SHA-256 of Marshal(v).
func Digest(v any) (string, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Canonical returns the RFC 8785 canonical form of the JSON value raw, wide integers
// tagged.
func Canonical(raw []byte) ([]byte, error) {
	tagged, err := tagWide(raw)
	if err != nil {
		return nil, err
	}
	val := jsontext.Value(tagged)
	if err := val.Canonicalize(); err != nil {
		return nil, err
	}
	return []byte(val), nil
}

// wide reports whether a number token is an integer outside +-(2^53-1).
func wide(tok jsontext.Token) bool {
	s := tok.String()
	if strings.ContainsAny(s, ".eE") {
		return false
	}
	f, _ := tok.Float()
	return f > maxSafeInteger || f < -maxSafeInteger
}

// tagWide rewrites every wide integer of raw as its tagged object; raw without one is
// returned as it is.
func tagWide(raw []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	found := false
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if tok.Kind() == '0' && wide(tok) {
			found = true
			for _, t := range []jsontext.Token{jsontext.BeginObject, jsontext.String(IntegerTag), jsontext.String(tok.String()), jsontext.EndObject} {
				if err := enc.WriteToken(t); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := enc.WriteToken(tok); err != nil {
			return nil, err
		}
	}
	if !found {
		return append([]byte(nil), raw...), nil
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}
