package nn

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/profile"
	"github.com/eagerflow/eagerflow/tensor"
)

// EAGERFLOW_PROFILE=FILE profiles a program from its start; Fit writes
// the trace to FILE and the table to FILE.txt when it returns.
func TestFitWritesTheProfileTheEnvironmentAsks(t *testing.T) {
	if path := os.Getenv(profile.EnvVar); path != "" { // the child: train, and let Fit write
		x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float32, 32, 3)
		y := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(float32(0))), tensor.Int32)
		ds, err := data.FromSlices(x, y)
		if err != nil {
			t.Fatal(err)
		}
		m := NewSequential(NewDense("d", tensor.NewRNG(1), 3, 2, DenseOpts{}))
		opt := NewAdam(Constant(0.05))
		_, err = Fit(context.Background(), ds.Batch(16, false), AllVariables(m), opt,
			TrainStep(m, SparseSoftmaxCrossEntropy, opt), FitConfig{Epochs: 1})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "fit.json")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFitWritesTheProfileTheEnvironmentAsks$")
	cmd.Env = append(os.Environ(), profile.EnvVar+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ TraceEvents []map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.TraceEvents) < 10 {
		t.Fatalf("the trace: %v, %d events", err, len(doc.TraceEvents))
	}
	table, err := os.ReadFile(path + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"MatMul", "SparseSoftmaxCrossEntropy"} {
		if !strings.Contains(string(table), op) {
			t.Errorf("the table lacks %s:\n%s", op, table)
		}
	}
}
