package data_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // the ops' CPU kernels
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A pipeline over tensors in memory: rows, shuffled by seed, batched, and
// mapped batch by batch.
func ExampleFromSlices() {
	x := tensor.Arange[float32](0, 10, 1)
	y := ops.Cast(ops.Gt(x, tensor.Scalar(4)), tensor.Int32)
	ds, err := data.FromSlices(x, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	double := func(e data.Element) (data.Element, error) {
		return data.Element{ops.Mul(e[0], tensor.Scalar(2)), e[1]}, nil
	}
	for batch, err := range ds.Take(8).Batch(3, false).Map(double).All(context.Background()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(batch[0], batch[1])
	}
	// Output:
	// [0. 2. 4.] float32[3] [0 0 0] int32[3]
	// [ 6.  8. 10.] float32[3] [0 0 1] int32[3]
	// [12. 14.] float32[2] [1 1] int32[2]
}

// TFRecord files written and read back, as TensorFlow writes them: each
// record one Uint8 tensor of its bytes.
func ExampleTFRecordFiles() {
	dir, _ := os.MkdirTemp("", "tfrecord-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "words.tfrecord.gz") // compressed, by the extension
	w, err := data.CreateWriter(path, data.WriterOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, word := range []string{"alpha", "beta", "gamma"} {
		w.Write([]byte(word))
	}
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}
	records, err := data.TFRecordFiles([]string{path}, data.TFRecordOptions{}).Collect(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range records {
		fmt.Printf("%s ", bytes.ToUpper(r[0].HostBytes()))
	}
	fmt.Println()
	// Output: ALPHA BETA GAMMA
}
