package continuation

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	req := strings.Repeat("a", 64)
	tok, err := Encode(req, 200)
	if err != nil {
		t.Fatal(err)
	}
	off, err := Decode(tok, req)
	if err != nil || off != 200 {
		t.Fatalf("Decode = %d, %v", off, err)
	}
}

func TestRefusals(t *testing.T) {
	req := strings.Repeat("a", 64)
	tok, _ := Encode(req, 5)
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"offset":5`, `"offset":6`, 1)))
	negative, _ := Encode(req, -1)
	tests := map[string]struct{ tok, req string }{
		"other request": {tok, strings.Repeat("b", 64)},
		"forged offset": {forged, req},
		"not base64":    {"!!!!", req},
		"not json":      {base64.RawURLEncoding.EncodeToString([]byte("nope")), req},
		"negative":      {negative, req},
		"truncated":     {tok[:len(tok)-3], req},
		"string offset": {base64.RawURLEncoding.EncodeToString([]byte(`{"checksum":"x","payload":{"offset":"5","request":"` + req + `"}}`)), req},
	}
	for name, tt := range tests {
		if _, err := Decode(tt.tok, tt.req); err != ErrMismatch {
			t.Errorf("%s: err = %v, want ErrMismatch", name, err)
		}
	}
}
