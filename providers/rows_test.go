package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/flameox/flameox/providers"
)

type pair struct {
	B int `json:"b"`
	A int `json:"a"`
}

func TestProjectPagesOnlyWhatItReturns(t *testing.T) {
	built := 0
	rows := providers.Project(10, func(i int) pair { built++; return pair{B: i, A: -i} })
	tests := []struct {
		offset, limit int64
		first, last   string
		observed      int64
		more          bool
	}{
		{0, 3, `{"b":0,"a":0}`, `{"b":2,"a":-2}`, 4, true},
		{8, 3, `{"b":8,"a":-8}`, `{"b":9,"a":-9}`, 10, false},
		{7, 3, `{"b":7,"a":-7}`, `{"b":9,"a":-9}`, 10, false},
	}
	for _, tt := range tests {
		built = 0
		p, err := rows.Page(context.Background(), tt.offset, tt.limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(len(p.Rows))
		if string(p.Rows[0]) != tt.first || string(p.Rows[n-1]) != tt.last || p.Observed != tt.observed || p.More != tt.more || p.Limited {
			t.Errorf("offset %d: %s..%s observed %d more %v limited %v", tt.offset, p.Rows[0], p.Rows[n-1], p.Observed, p.More, p.Limited)
		}
		if built != int(n) {
			t.Errorf("offset %d: built %d rows for a page of %d", tt.offset, built, n)
		}
	}
	_, err := rows.Page(context.Background(), 10, 3, nil)
	var oe *providers.OffsetError
	if !errors.As(err, &oe) || oe.Available != 10 {
		t.Fatalf("offset past the end: %v", err)
	}
	empty, err := providers.Project(0, func(int) pair { return pair{} }).Page(context.Background(), 0, 3, nil)
	if err != nil || len(empty.Rows) != 0 || empty.More {
		t.Fatalf("empty population: %+v %v", empty, err)
	}
}

func TestProjectStopsAtTheProviderBound(t *testing.T) {
	rows := providers.Project(providers.MaxProjectionRows+5, func(i int) int { return i })
	p, err := rows.Page(context.Background(), providers.MaxProjectionRows-2, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 2 || p.More || !p.Limited {
		t.Fatalf("rows %d more %v limited %v", len(p.Rows), p.More, p.Limited)
	}
}

func TestProjectStopsBeforeTheRowThatDoesNotFit(t *testing.T) {
	rows := providers.Project(10, func(i int) pair { return pair{B: i, A: i} })
	room := 3 * len(`{"b":0,"a":0}`)
	fits := func(r json.RawMessage) bool { room -= len(r); return room >= 0 }
	p, err := rows.Page(context.Background(), 0, 10, fits)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 3 || !p.More || p.Observed != 4 {
		t.Fatalf("rows %d more %v observed %d", len(p.Rows), p.More, p.Observed)
	}
	b, _ := providers.EncodeRow(map[string]string{"f": "<module>"})
	if string(b) != `{"f":"<module>"}` {
		t.Errorf("EncodeRow escapes HTML: %s", b)
	}
}
