package testrun

import (
	"context"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/fuzztool"
)

var fuzzLimits = gen.EffectiveLimits{MaxInputBytes: 1 << 20}

// FuzzPytestStream: go test ./providers/testrun -run '^$' -fuzz FuzzPytestStream -fuzztime 1m
func FuzzPytestStream(f *testing.F) {
	for _, s := range []string{
		"",
		`{"event":"run_started"}` + "\n" +
			`{"event":"test_collected","nodeid":"t.py::a"}` + "\n" +
			`{"event":"fixture_phase","fixture":"tmp","scope":"function","phase":"setup","invocation_id":"1","nodeid":"t.py::a","duration_ns":5}` + "\n" +
			`{"event":"test_phase","nodeid":"t.py::a","phase":"setup","outcome":"passed","duration_ns":10,"attempt":1}` + "\n" +
			`{"event":"test_phase","nodeid":"t.py::a","phase":"call","outcome":"failed","duration_ns":20,"attempt":1,"xfail":true}` + "\n" +
			`{"event":"fixture_phase","fixture":"tmp","scope":"function","phase":"teardown","invocation_id":"1","duration_ns":1}` + "\n" +
			`{"event":"collection_error","nodeid":"u.py"}` + "\n" +
			`{"event":"run_finished","exitstatus":1}` + "\n",
		`{"event":"interrupted"}` + "\n" + `{"event":"internal_error"}` + "\n" + `{"event":"test_ph`,
		`{"event":"test_phase","nodeid":"x","phase":"bogus","outcome":"passed","worker_id":"gw0"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := fuzztool.WriteInput(t, "pytest.jsonl", b)
		in := providers.Input{Path: p, Size: int64(len(b))}
		r, err := readPytest(context.Background(), in, 1<<20)
		fuzztool.CheckError(t, err, p)
		if err == nil {
			fuzztool.NonNegative(t, "events", r.events)
		}
		_, err = summarizePytest(context.Background(), in, fuzzLimits)
		fuzztool.CheckError(t, err, p)
	})
}

// FuzzObservations: go test ./providers/testrun -run '^$' -fuzz FuzzObservations -fuzztime 1m
func FuzzObservations(f *testing.F) {
	for _, s := range []string{
		"",
		`{"name":"loss","phase":"train","monotonic_ns":12,"values":{"loss":0.5,"step":1}}` + "\n",
		`{"name":"a","phase":"p","monotonic_ns":1,"values":{}}` + "\n" + `{"name":"a","phase":"p","monotonic_ns":-1,"values":{}}` + "\n",
		`{"name":"a","phase":"p","monotonic_ns":1,"values":{}}` + "\n" + `{"name":"a","pha`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := fuzztool.WriteInput(t, "observations.jsonl", b)
		a, err := summarizeObservations(context.Background(), providers.Input{Path: p, Size: int64(len(b))}, fuzzLimits)
		fuzztool.CheckError(t, err, p)
		if err != nil {
			return
		}
		n, _ := a.Metrics["observation_count"].(int64)
		fuzztool.NonNegative(t, "observation_count", n)
	})
}
