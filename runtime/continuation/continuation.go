// Package continuation encodes and verifies the opaque integrity cursors that resume a
// paginated analysis. A token binds a request digest (operation, input content digests,
// formats, producers, arguments, effective limits and implementation identity, but no
// paths) and a row offset; it carries no authority and no artifact data.
package continuation

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/flameox/flameox/internal/canon"
)

// ErrMismatch reports a token that is malformed, tampered with, or bound to another request.
var ErrMismatch = errors.New("continuation does not match this request and its inputs")

type payload struct {
	Request string `json:"request"`
	Offset  int64  `json:"offset"`
}

type envelope struct {
	Checksum string  `json:"checksum"`
	Payload  payload `json:"payload"`
}

// Encode returns the token for the request digest and offset.
func Encode(request string, offset int64) (string, error) {
	p := payload{Request: request, Offset: offset}
	sum, err := checksum(p)
	if err != nil {
		return "", err
	}
	b, err := canon.Marshal(envelope{Checksum: sum, Payload: p})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Decode verifies token against the request digest and returns its offset.
func Decode(token, request string) (int64, error) {
	got, offset, err := Peek(token)
	if err != nil {
		return 0, err
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(request)) != 1 {
		return 0, ErrMismatch
	}
	return offset, nil
}

// Peek verifies token's integrity and returns the request digest and offset it binds,
// so that a mismatch can be explained.
func Peek(token string) (string, int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, ErrMismatch
	}
	var raw struct {
		Checksum string `json:"checksum"`
		Payload  struct {
			Request string          `json:"request"`
			Offset  json.RawMessage `json:"offset"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return "", 0, ErrMismatch
	}
	var offset int64
	if err := json.Unmarshal(raw.Payload.Offset, &offset); err != nil || offset < 0 {
		return "", 0, ErrMismatch
	}
	want, err := checksum(payload{Request: raw.Payload.Request, Offset: offset})
	if err != nil || subtle.ConstantTimeCompare([]byte(want), []byte(raw.Checksum)) != 1 {
		return "", 0, ErrMismatch
	}
	return raw.Payload.Request, offset, nil
}

func checksum(p payload) (string, error) {
	b, err := canon.Marshal(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
