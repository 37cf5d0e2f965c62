package difftest

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	flagCases    = flag.Int("difftest.cases", 120, "op programs per seed")
	flagSeeds    = flag.String("difftest.seeds", "1,2,3", "comma-separated seeds")
	flagGPUCases = flag.Int("difftest.gpucases", 60, "op programs per seed on the GPU (gpu_test.go)")
	flagGPUSeeds = flag.String("difftest.gpuseeds", "1,2", "comma-separated seeds of the GPU programs")
)

// python is the interpreter with PyTorch: Debian's, as bench/ uses, or
// EAGERFLOW_PYTHON's (the GPU machine's, with pip's PyTorch).
var python = cmp.Or(os.Getenv("EAGERFLOW_PYTHON"), "/usr/bin/python3")

// installHint says how to get the interpreter the suite needs.
const installHint = "apt-get install python3-torch python3-numpy (scripts/install-test-deps does it)"

// seeds returns the seeds to run (-difftest.seeds).
func seeds(t *testing.T) []uint64 { return parseSeeds(t, *flagSeeds) }

// parseSeeds reads a comma-separated list of seeds.
func parseSeeds(t *testing.T, list string) []uint64 {
	var out []uint64
	for _, f := range strings.Split(list, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("seeds %q: %v", list, err)
		}
		out = append(out, s)
	}
	return out
}

// needTorch skips t unless python can import torch.
func needTorch(t *testing.T) {
	t.Helper()
	needModules(t, "torch, numpy, mpmath")
}

// needNumPy is needTorch for the suites that compare with NumPy alone.
func needNumPy(t *testing.T) {
	t.Helper()
	needModules(t, "numpy")
}

// needModules skips t, or fails it where EAGERFLOW_REQUIRE_TORCH says the
// suite must run, unless python imports modules.
func needModules(t *testing.T, modules string) {
	t.Helper()
	if err := exec.Command(python, "-c", "import "+modules).Run(); err != nil {
		if os.Getenv("EAGERFLOW_REQUIRE_TORCH") != "" {
			t.Fatalf("%s cannot import %s (%v); install it: %s", python, modules, err, installHint)
		}
		t.Skipf("%s cannot import %s (%v); to run the differential suite: %s", python, modules, err, installHint)
	}
}

// torchResult is what torch_eval.py reports for a case.
type torchResult struct {
	ID     int      `json:"id"`
	Error  string   `json:"error"`
	Values []*Array `json:"values"`
	Grads  []*Array `json:"grads"`
	Second []*Array `json:"second"`
	// SecondError says why an op program has no Hessian-vector product:
	// an op whose gradient PyTorch does not differentiate.
	SecondError string `json:"second_error"`
}

// resultOf is res's result id, for program p; it fails t, naming p, and
// returns nil where PyTorch gave none or an error.
func resultOf(t *testing.T, res map[int]*torchResult, id int, p *Program) *torchResult {
	t.Helper()
	r := res[id]
	if r == nil || r.Error != "" {
		t.Errorf("program %d (reference case %d): PyTorch failed: %v\n%s", p.ID, id, r, describe(p))
		return nil
	}
	return r
}

// runTorch evaluates cases (each marshalled as torch_eval.py reads them)
// in one PyTorch process and returns the results by case ID.
func runTorch(t *testing.T, cases any) map[int]*torchResult {
	return runCases(t, "torch_eval.py", cases, func(r *torchResult) int { return r.ID })
}

// runCases runs script on cases and decodes its output, one JSON result
// per line, by the case ID id reads from each.
func runCases[R any](t *testing.T, script string, cases any, id func(*R) int) map[int]*R {
	t.Helper()
	res := map[int]*R{}
	for _, line := range runScript(t, script, cases) {
		r := new(R)
		if err := json.Unmarshal(line, r); err != nil {
			t.Fatalf("%s output: %v", script, err)
		}
		res[id(r)] = r
	}
	return res
}

// runScript runs a Python script of this directory on {"cases": cases}
// (JSON on its standard input, one thread) and returns its output lines.
func runScript(t *testing.T, script string, cases any) [][]byte {
	t.Helper()
	in, err := json.Marshal(map[string]any{"cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		lines = append(lines, slices.Clone(sc.Bytes()))
	}
	return lines
}

// tol is the agreement asked of float64 values: relative to the larger
// magnitude (or 1): a few hundred ulps of rounding that two correct
// implementations may order differently.
const tol = 1e-9

// compare returns "" when got (nil meaning zeros) equals want to tol, or
// what differs.
func compare(got T, want *Array) string { return compareWithin(got, want, tol) }

// compareWithin is compare to a tolerance of rel, relative to the larger
// magnitude (or to 1 below it).
func compareWithin(got T, want *Array, rel float64) string { return compareAbove(got, want, rel, 1) }

// compareAbove is compareWithin relative to floor below it: the scale of
// a whole result whose elements may be rounding noise around 0 (a
// Hessian-vector product's, where the function barely depends on an
// input).
func compareAbove(got T, want *Array, rel, floor float64) string {
	if want == nil && got == nil {
		return ""
	}
	var w []float64
	var shape []int
	if want != nil {
		var err error
		if w, err = want.decode(); err != nil {
			return err.Error()
		}
		shape = want.Shape
	}
	var g []float64
	if got != nil {
		g = values(got)
		if want != nil && !got.Shape().Equal(shape) {
			return fmt.Sprintf("shape %v, want %v", got.Shape(), shape)
		}
	}
	n := max(len(g), len(w))
	for i := range n {
		a, b := 0.0, 0.0
		if g != nil {
			a = g[i]
		}
		if w != nil {
			b = w[i]
		}
		if !closeAbove(a, b, rel, floor) {
			return fmt.Sprintf("element %d of %d is %.17g, want %.17g", i, n, a, b)
		}
	}
	return ""
}

// closeWithin reports whether a and b agree to rel (relative to the
// larger magnitude, or to 1 below it; NaNs agree with NaNs, infinities
// with themselves).
func closeWithin(a, b, rel float64) bool { return closeAbove(a, b, rel, 1) }

// closeAbove is closeWithin relative to floor below it.
func closeAbove(a, b, rel, floor float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= rel*math.Max(floor, math.Max(math.Abs(a), math.Abs(b)))
}
