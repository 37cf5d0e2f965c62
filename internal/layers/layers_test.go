package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/eagerflow/eagerflow/"

// layer gives each top-level directory its place; a package may import only
// packages of a lower layer, or of its own directory tree.
// (device is below tensor: tensors hold device buffers; backends are above
// ops, whose attributes their kernels read, and ops never imports them.)
var layer = map[string]float64{
	"device": 0, "tensor": 1, "internal": 2, "interop": 5,
	"eager": 2, "ops": 3, "profile": 3, "backend": 4, "tape": 5, "control": 6, "data": 6, "collective": 6,
	"nn": 7, "conformance": 7, "plot": 8, "notebook": 9, "examples": 9, "bench": 9, "(root)": 10,
}

// sublayer places the packages under a top-level directory that sit
// elsewhere than it: internal/plumb imports nothing of the module, so
// package tensor may lend its setters through it (internal/philox, the
// random stream's blocks, likewise for its draws); backend/cuda/nccl is a
// collective.Comm, above collective, built on the CUDA backend's internals;
// internal/benchmodels builds the benchmarks' models from nn;
// internal/ranktest runs tests' ranks over collective's Loopback;
// internal/fusion, the elementwise chains' kernels, sits between eager,
// whose ops it runs, and ops and control/graph, which fuse with it.
var sublayer = map[string]float64{"internal/fusion": 2.5, "internal/plumb": -1, "internal/callsite": -1, "internal/hostmem": -1, "internal/philox": -1, "backend/opattr": 2, "backend/cuda/nccl": 7,
	"internal/benchmodels": 8, "internal/ranktest": 7}

// top returns the key of path's layer: a sublayer's directory, or the
// top-level directory.
func top(path string) string {
	for dir := range sublayer {
		if strings.HasPrefix(path, dir+"/") || path == dir {
			return dir
		}
	}
	return strings.SplitN(path, "/", 2)[0]
}

func layerOf(key string) (float64, bool) {
	if l, ok := sublayer[key]; ok {
		return l, true
	}
	l, ok := layer[key]
	return l, ok
}

func TestImportsPointDown(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "bench/peers/") {
			return nil // a separate module
		}
		from := top(rel)
		if !strings.Contains(rel, "/") {
			from = "(root)" // the module's doc package
		}
		lf, ok := layerOf(from)
		if !ok {
			t.Errorf("%s: top-level directory %q has no layer; add it to the map and the README", rel, from)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			to := top(strings.TrimPrefix(p, module))
			if to == from {
				continue
			}
			if lt, ok := layerOf(to); !ok || lt >= lf {
				t.Errorf("%s (layer %v) imports %s (layer %v): imports must point down", rel, lf, p, lt)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("not at the module root:", err)
	}
}
