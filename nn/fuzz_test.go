package nn

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// The safetensors decoder, fuzzed: any bytes give tensors or an error
// wrapping ErrCheckpoint, never a panic, and never more tensor bytes than
// the file holds.
func FuzzDecodeSafetensors(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.safetensors")
	m := model(1, 3)
	opt := &Adam{LR: Constant(0.01)}
	trainSteps(m, opt, 1)
	if err := SaveCheckpoint(path, AllVariables(m), opt, map[string]string{"epoch": "3"}); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(safetensors(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(safetensors(`{"__metadata__":{"k":"v"}}`, nil))
	f.Add(safetensors(`{"b":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}}`, []byte{0, 1, 1, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := decodeSafetensors(b, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCheckpoint", err)
			}
			return
		}
		total := 0
		for _, x := range got {
			n, ok := tensor.ByteSize(x.DType(), x.Shape())
			if !ok {
				t.Fatalf("a tensor of shape %v", x.Shape())
			}
			total += n
			if x.DType() == tensor.Bool {
				for i, v := range x.HostBytes() {
					if v > 1 {
						t.Fatalf("a BOOL tensor loaded with the byte %d at %d", v, i)
					}
				}
			}
		}
		if total > len(b) {
			t.Fatalf("%d tensor bytes from a %d-byte file", total, len(b))
		}
	})
}
