package cuda

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/profile"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A profile of ops on the GPU has their device times (CUDA events; the
// emulator's nominal clock here): a large MatMul's work takes longer
// there than a small Add's, and the device's timeline runs forward.
func TestProfileTimesTheGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(2)
	small := onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 16))
	big := onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 256, 256))
	if err := profile.Start(); err != nil {
		t.Fatal(err)
	}
	ops.Add(small, small)
	ops.MatMul(big, big)
	ops.Add(small, small)
	vs := func(name string) []*tape.Variable { return []*tape.Variable{tape.NewVariable(name, ops.Abs(big))} }
	tape.AdamUpdateAll(vs("w"), vs("m"), vs("v"), []*tensor.Tensor{big}, ops.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7})
	p, err := profile.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var add, matmul *profile.Record
	last := -1.0
	for i := range p.Records {
		rec := &p.Records[i]
		if !rec.Timed || rec.Device != d.Name() || rec.DeviceTime <= 0 {
			t.Fatalf("record %d not timed on %s: %+v", i, d.Name(), rec)
		}
		if float64(rec.DeviceStart) < last {
			t.Errorf("record %d starts at %v on the device, before the one before it (%v)", i, rec.DeviceStart, last)
		}
		last = float64(rec.DeviceStart)
		switch rec.Op {
		case "Add":
			add = rec
		case "MatMul":
			matmul = rec
		}
	}
	if adam := p.Records[len(p.Records)-1]; adam.Op != "AdamStep" {
		t.Errorf("the optimizer's step is not in the profile: the last record is %+v", adam)
	}
	if add == nil || matmul == nil || matmul.DeviceTime <= add.DeviceTime {
		t.Errorf("MatMul %+v, Add %+v: the larger op should take longer on the device", matmul, add)
	}
	if table := p.Table(); !strings.Contains(table, "device total") {
		t.Errorf("the table has no device times:\n%s", table)
	}
}
