package profile_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // the ops' CPU kernels
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/profile"
	"github.com/eagerflow/eagerflow/tensor"
)

// A profile records every op, eager and traced, with its inputs; the
// table sums them per op and the trace is Chrome's format.
func TestProfileRecordsEveryOp(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 64, 64)
	f := trace.NewFunction(func(in []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Tanh(ops.MatMul(in[0], in[0]))}
	})
	if _, err := f.Call(x); err != nil { // traced before the profile: its ops run from the graph below
		t.Fatal(err)
	}
	if err := profile.Start(); err != nil {
		t.Fatal(err)
	}
	if err := profile.Start(); !errors.Is(err, profile.ErrRunning) {
		t.Errorf("a second Start: %v, want ErrRunning", err)
	}
	for range 3 {
		ops.Add(x, x)
	}
	ops.MatMul(x, x)
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Stop(); !errors.Is(err, profile.ErrNotRunning) {
		t.Errorf("a second Stop: %v, want ErrNotRunning", err)
	}
	calls := map[string]int{}
	for _, tot := range p.Totals() {
		calls[tot.Op] += tot.Calls
		if tot.Host <= 0 {
			t.Errorf("%s: host time %v", tot.Op, tot.Host)
		}
	}
	if calls["Add"] != 3 || calls["MatMul"] != 2 || calls["Tanh"] < 1 {
		t.Errorf("calls %v: want Add 3, MatMul 2 (one eager, one from the graph), Tanh", calls)
	}
	var first *profile.Record
	for i := range p.Records {
		if p.Records[i].Op == "Add" {
			first = &p.Records[i]
			break
		}
	}
	if first == nil || first.Inputs != "float32[64 64], float32[64 64]" || first.Device != "cpu:0" || first.Timed {
		t.Errorf("the first Add's record: %+v", first)
	}
	table := p.Table()
	for _, want := range []string{"op", "calls", "host total", "Add", "MatMul", "all"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := p.WriteTraceFile(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name, Ph string
			Ts, Dur  float64
			Pid      int
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("the trace is not JSON: %v", err)
	}
	ops := 0
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			ops++
			if e.Pid != 1 || e.Dur < 0 || e.Ts < 0 {
				t.Errorf("event %+v", e)
			}
		}
	}
	if ops != len(p.Records) {
		t.Errorf("%d op events for %d records", ops, len(p.Records))
	}
	if err := p.WriteTraceFile(""); err == nil {
		t.Error("writing the trace to an empty path succeeded")
	}
}

// Profiling is off between profiles: ops after Stop are not recorded.
func TestNothingIsRecordedAfterStop(t *testing.T) {
	if err := profile.Start(); err != nil {
		t.Fatal(err)
	}
	ops.Add(tensor.Scalar(1.0), tensor.Scalar(2.0))
	p, err := profile.Stop()
	if err != nil {
		t.Fatal(err)
	}
	n := len(p.Records)
	ops.Add(tensor.Scalar(1.0), tensor.Scalar(2.0))
	if len(p.Records) != n || n != 1 {
		t.Errorf("%d records, want 1", len(p.Records))
	}
}
