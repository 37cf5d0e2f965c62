package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results holds every sample of every benchmark: name (without the
// "Benchmark" prefix and the -N processor suffix) -> unit -> samples.
type results map[string]map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads Go benchmark lines ("BenchmarkX-2  100  123 ns/op  4.5
// GFLOP/s ..."); other lines are skipped. A line that starts like a
// result but does not parse is an error naming the file and line.
func (r results) parse(in io.Reader, file string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a benchmark's own log line
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		if len(f)%2 != 0 {
			return fmt.Errorf("%s:%d: value without a unit in %q", file, line, sc.Text())
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%s:%d: %q is not a number", file, line, f[i])
			}
			if r[name] == nil {
				r[name] = map[string][]float64{}
			}
			r[name][f[i+1]] = append(r[name][f[i+1]], v)
		}
	}
	return sc.Err()
}

// samples is the number of samples of one benchmark in the outputs.
func (r results) samples(name, unit string) int { return len(r[name][unit]) }

// median returns the median sample of a benchmark in a unit, and whether
// there was any.
func (r results) median(name, unit string) (float64, bool) {
	s := slices.Clone(r[name][unit])
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// peerNames are the table's peer columns, in order.
var peerNames = []string{"PyTorch", "NumPy", "gonum", "Gorgonia", "GoMLX"}

// row is one line of the table: a benchmark and where each library's
// figure for the same work comes from.
type row struct {
	title string
	ours  string
	unit  string // "ns/op" (lower is better), or a rate such as "GFLOP/s"
	peers map[string]string
}

func torchNumPy(torch, numpy string) map[string]string {
	m := map[string]string{"PyTorch": torch}
	if numpy != "" {
		m["NumPy"] = numpy
	}
	return m
}

// rows are the benchmarks issue 8 lists, with their peers' names.
var rows = []row{
	{"eager add, 1 float32", "EagerAddScalar", "ns/op", torchNumPy("TorchEagerAddScalar", "NumPyAddScalar")},
	{"eager add, 1 float32, taped", "EagerAddScalarTaped", "ns/op", torchNumPy("TorchEagerAddScalarTaped", "")},
	{"eager add, 1000 float32", "EagerAdd1K", "ns/op", torchNumPy("TorchEagerAdd1K", "NumPyAdd1K")},
	{"eager add, 1000 float32, taped", "EagerAddTaped1K", "ns/op", torchNumPy("TorchEagerAddTaped1K", "")},
	{"add (result dropped), 1K float32", "EagerMid/Add/1024", "ns/op", torchNumPy("TorchMid/Add/1024", "NumPyMid/Add/1024")},
	{"add (result dropped), 4K float32", "EagerMid/Add/4096", "ns/op", torchNumPy("TorchMid/Add/4096", "NumPyMid/Add/4096")},
	{"add (result dropped), 16K float32", "EagerMid/Add/16384", "ns/op", torchNumPy("TorchMid/Add/16384", "NumPyMid/Add/16384")},
	{"add (result dropped), 64K float32", "EagerMid/Add/65536", "ns/op", torchNumPy("TorchMid/Add/65536", "NumPyMid/Add/65536")},
	{"add (result released), 1K float32", "EagerMid/AddReleased/1024", "ns/op", torchNumPy("TorchMid/Add/1024", "NumPyMid/Add/1024")},
	{"add (result released), 4K float32", "EagerMid/AddReleased/4096", "ns/op", torchNumPy("TorchMid/Add/4096", "NumPyMid/Add/4096")},
	{"add (result released), 16K float32", "EagerMid/AddReleased/16384", "ns/op", torchNumPy("TorchMid/Add/16384", "NumPyMid/Add/16384")},
	{"add (result released), 64K float32", "EagerMid/AddReleased/65536", "ns/op", torchNumPy("TorchMid/Add/65536", "NumPyMid/Add/65536")},
	{"mul by a scalar, 1K float32", "EagerMid/Mul/1024", "ns/op", torchNumPy("TorchMid/Mul/1024", "NumPyMid/Mul/1024")},
	{"mul by a scalar, 4K float32", "EagerMid/Mul/4096", "ns/op", torchNumPy("TorchMid/Mul/4096", "NumPyMid/Mul/4096")},
	{"mul by a scalar, 16K float32", "EagerMid/Mul/16384", "ns/op", torchNumPy("TorchMid/Mul/16384", "NumPyMid/Mul/16384")},
	{"mul by a scalar, 64K float32", "EagerMid/Mul/65536", "ns/op", torchNumPy("TorchMid/Mul/65536", "NumPyMid/Mul/65536")},
	{"exp, 1K float32", "EagerMid/Exp/1024", "ns/op", torchNumPy("TorchMid/Exp/1024", "NumPyMid/Exp/1024")},
	{"exp, 4K float32", "EagerMid/Exp/4096", "ns/op", torchNumPy("TorchMid/Exp/4096", "NumPyMid/Exp/4096")},
	{"exp, 16K float32", "EagerMid/Exp/16384", "ns/op", torchNumPy("TorchMid/Exp/16384", "NumPyMid/Exp/16384")},
	{"exp, 64K float32", "EagerMid/Exp/65536", "ns/op", torchNumPy("TorchMid/Exp/65536", "NumPyMid/Exp/65536")},
	{"sum, 1K float32", "EagerMid/Sum/1024", "ns/op", torchNumPy("TorchMid/Sum/1024", "NumPyMid/Sum/1024")},
	{"sum, 4K float32", "EagerMid/Sum/4096", "ns/op", torchNumPy("TorchMid/Sum/4096", "NumPyMid/Sum/4096")},
	{"sum, 16K float32", "EagerMid/Sum/16384", "ns/op", torchNumPy("TorchMid/Sum/16384", "NumPyMid/Sum/16384")},
	{"sum, 64K float32", "EagerMid/Sum/65536", "ns/op", torchNumPy("TorchMid/Sum/65536", "NumPyMid/Sum/65536")},
	{"row sums [n/64 64], 1K float32", "EagerMid/SumRows/1024", "ns/op", torchNumPy("TorchMid/SumRows/1024", "NumPyMid/SumRows/1024")},
	{"row sums [n/64 64], 4K float32", "EagerMid/SumRows/4096", "ns/op", torchNumPy("TorchMid/SumRows/4096", "NumPyMid/SumRows/4096")},
	{"row sums [n/64 64], 16K float32", "EagerMid/SumRows/16384", "ns/op", torchNumPy("TorchMid/SumRows/16384", "NumPyMid/SumRows/16384")},
	{"row sums [n/64 64], 64K float32", "EagerMid/SumRows/65536", "ns/op", torchNumPy("TorchMid/SumRows/65536", "NumPyMid/SumRows/65536")},
	{"transposed copy [n/64 64], 1K float32", "EagerMid/Transpose/1024", "ns/op", torchNumPy("TorchMid/Transpose/1024", "NumPyMid/Transpose/1024")},
	{"transposed copy [n/64 64], 4K float32", "EagerMid/Transpose/4096", "ns/op", torchNumPy("TorchMid/Transpose/4096", "NumPyMid/Transpose/4096")},
	{"transposed copy [n/64 64], 16K float32", "EagerMid/Transpose/16384", "ns/op", torchNumPy("TorchMid/Transpose/16384", "NumPyMid/Transpose/16384")},
	{"transposed copy [n/64 64], 64K float32", "EagerMid/Transpose/65536", "ns/op", torchNumPy("TorchMid/Transpose/65536", "NumPyMid/Transpose/65536")},
	{"add, 4M float32", "Add4M", "GB/s", map[string]string{"PyTorch": "TorchAdd4M", "NumPy": "NumPyAdd4M", "GoMLX": "GoMLXAdd4M"}},
	{"tanh, 4M float32", "Tanh4M", "GB/s", map[string]string{"PyTorch": "TorchTanh4M", "NumPy": "NumPyTanh4M", "GoMLX": "GoMLXTanh4M"}},
	{"sum, 4M float32", "Sum4M", "GB/s", map[string]string{"PyTorch": "TorchSum4M", "NumPy": "NumPySum4M", "GoMLX": "GoMLXSum4M"}},
	{"MatMul 128 float32", "MatMul128", "GFLOP/s", matmulPeers(128)},
	{"MatMul 512 float32", "MatMul512", "GFLOP/s", matmulPeers(512)},
	{"MatMul 1024 float32", "MatMul1024", "GFLOP/s", matmulPeers(1024)},
	{"MatMul 2048 float32", "MatMul2048", "GFLOP/s", torchNumPy("TorchMatMul2048", "NumPyMatMul2048")},
	{"MatMul 1024 float64", "MatMulFloat64_1024", "GFLOP/s", map[string]string{"PyTorch": "TorchMatMulFloat64_1024", "NumPy": "NumPyMatMulFloat64_1024", "gonum": "GonumMatMul/float64/1024"}},
	{"MLP train step", "MLPStep", "ns/op", map[string]string{"PyTorch": "TorchMLPStep", "Gorgonia": "GorgoniaMLPStep"}},
	{"Conv2D train step", "Conv2DTrainStep", "ns/op", torchNumPy("TorchConv2DTrainStep", "")},
	{"MaxPool train step", "MaxPoolTrainStep", "ns/op", torchNumPy("TorchMaxPoolTrainStep", "")},
	{"CNN train step (examples/cnn)", "CNNTrainStep", "ns/op", torchNumPy("TorchCNNTrainStep", "")},
	{"Fashion-MNIST CNN train step, NHWC", "FashionCNNTrainStep/NHWC/eager", "ns/op", torchNumPy("TorchFashionCNNTrainStep/NHWC", "")},
	{"Fashion-MNIST CNN train step, NCHW", "FashionCNNTrainStep/NCHW/eager", "ns/op", torchNumPy("TorchFashionCNNTrainStep/NCHW", "")},
	{"GPT train step (examples/gpt: 4 blocks of 128, batch 16x128)", "GPTStep/eager", "ns/op", torchNumPy("TorchGPTStep", "")},
	{"GPT train step, traced (no clipping)", "GPTStep/traced", "ns/op", torchNumPy("TorchGPTStep", "")},
	{"GPT train step, mixed bfloat16", "GPTStep/eager/mixed_bfloat16", "ns/op", torchNumPy("TorchGPTStep", "")},
	{"GPT generation, 128 bytes with the KV cache", "GPTGenerate/eager", "ns/op", torchNumPy("TorchGPTGenerate", "")},
	{"GPT generation, traced (one While)", "GPTGenerate/traced", "ns/op", torchNumPy("TorchGPTGenerate", "")},
	{"RNN loop gradient, 50 steps", "RNNLoopGrad", "ns/op", torchNumPy("TorchRNNLoopGrad", "")},
	{"RNN loop forward, 50 steps", "RNNLoopForward", "ns/op", torchNumPy("TorchRNNLoopForward", "")},
	{"traced elementwise chain, 1000 float32", "TraceElementwiseChain1K/traced", "ns/op", map[string]string{"PyTorch": "TorchElementwiseChain1K/jit.trace", "NumPy": "NumPyElementwiseChain1K"}},
	{"TFRecord read, no compression", "TFRecordRead/none", "MB/s", nil},
	{"Example parse, batch of 64", "ParseExampleBatch/parser", "ns/op", nil},
}

func matmulPeers(n int) map[string]string {
	return map[string]string{
		"PyTorch": fmt.Sprintf("TorchMatMul%d", n),
		"NumPy":   fmt.Sprintf("NumPyMatMul%d", n),
		"gonum":   fmt.Sprintf("GonumMatMul/float32/%d", n),
		"GoMLX":   fmt.Sprintf("GoMLXMatMul/float32/%d", n),
	}
}

// line is one row's medians.
type line struct {
	row   row
	ours  float64
	have  bool
	peers map[string]float64
}

type table struct{ lines []line }

func buildTable(res results, rs []row) *table {
	t := &table{}
	for _, r := range rs {
		l := line{row: r, peers: map[string]float64{}}
		l.ours, l.have = res.median(r.ours, r.unit)
		for p, name := range r.peers {
			if v, ok := res.median(name, r.unit); ok {
				l.peers[p] = v
			}
		}
		t.lines = append(t.lines, l)
	}
	return t
}

// ratio returns eagerflow's speed over the best peer's (above 1: faster
// than every peer) and that peer, or ok false without both figures.
func (l line) ratio() (float64, string, bool) {
	best, who := math.NaN(), ""
	lower := l.row.unit == "ns/op"
	for _, p := range peerNames {
		v, ok := l.peers[p]
		if !ok || v <= 0 {
			continue
		}
		if math.IsNaN(best) || (lower && v < best) || (!lower && v > best) {
			best, who = v, p
		}
	}
	if !l.have || math.IsNaN(best) || l.ours <= 0 {
		return 0, "", false
	}
	if lower {
		return best / l.ours, who, true
	}
	return l.ours / best, who, true
}

// format writes a figure in its unit, times scaled to ns, µs or ms.
func format(v float64, unit string) string {
	if unit != "ns/op" {
		if v >= 100 {
			return fmt.Sprintf("%.0f %s", v, unit)
		}
		return fmt.Sprintf("%.3g %s", v, unit)
	}
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g ms", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3g µs", v/1e3)
	}
	return fmt.Sprintf("%.3g ns", v)
}

// cells returns the table as strings, header first.
func (t *table) cells() [][]string {
	head := append([]string{"benchmark", "eagerflow"}, peerNames...)
	head = append(head, "vs best peer")
	out := [][]string{head}
	for _, l := range t.lines {
		r := []string{l.row.title, "—"}
		if l.have {
			r[1] = format(l.ours, l.row.unit)
		}
		for _, p := range peerNames {
			if v, ok := l.peers[p]; ok {
				r = append(r, format(v, l.row.unit))
			} else {
				r = append(r, "")
			}
		}
		if x, who, ok := l.ratio(); ok {
			r = append(r, fmt.Sprintf("%.2fx (%s)", x, who))
		} else {
			r = append(r, "")
		}
		out = append(out, r)
	}
	return out
}
