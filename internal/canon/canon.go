// Package canon produces RFC 8785 (JCS) canonical JSON and the SHA-256 digests Flameox
// derives from it (continuations, analysis handles, evidence identities).
package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// maxSafeInteger is 2^53-1, the largest integer every JSON reader represents exactly.
const maxSafeInteger = 1<<53 - 1

// Marshal returns the RFC 8785 canonical encoding of v. Integers outside +-(2^53-1) must
// already be carried as decimal strings: canonical number formatting would round them.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := checkWide(b); err != nil {
		return nil, err
	}
	val := jsontext.Value(b)
	if err := val.Canonicalize(); err != nil {
		return nil, err
	}
	return []byte(val), nil
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

func checkWide(b []byte) error {
	dec := jsontext.NewDecoder(bytesReader(b))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		if tok.Kind() == '0' && !strings.ContainsAny(tok.String(), ".eE") {
			if f, _ := tok.Float(); f > maxSafeInteger || f < -maxSafeInteger {
				return fmt.Errorf("canon: number %s is outside the interoperable range", tok.String())
			}
		}
	}
}

// Canonical returns the RFC 8785 canonical form of the JSON value raw, refusing integers
// outside the interoperable range as Marshal does.
func Canonical(raw []byte) ([]byte, error) {
	if err := checkWide(raw); err != nil {
		return nil, err
	}
	val := jsontext.Value(append([]byte(nil), raw...))
	if err := val.Canonicalize(); err != nil {
		return nil, err
	}
	return []byte(val), nil
}
