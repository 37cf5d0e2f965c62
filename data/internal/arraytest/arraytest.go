// Package arraytest holds the checks the array-file readers' tests share
// (data/npy, data/idx).
package arraytest

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// Golden reads testdata/name with read, failing the test on error.
func Golden(t testing.TB, read func(path string) (*tensor.Tensor, error), name string) *tensor.Tensor {
	t.Helper()
	x, err := read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Same fails the test unless x is a T tensor of shape holding want.
func Same[T tensor.Elem](t testing.TB, name string, x *tensor.Tensor, shape tensor.Shape, want []T) {
	t.Helper()
	if x.DType() != tensor.DTypeOf[T]() || !x.Shape().Equal(shape) {
		t.Fatalf("%s: %v%v, want %v%v", name, x.DType(), x.Shape(), tensor.DTypeOf[T](), shape)
	}
	if got := tensor.ToSlice[T](x); !slices.Equal(got, want) {
		t.Fatalf("%s: %v, want %v", name, got, want)
	}
}
