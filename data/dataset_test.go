package data

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/tensor"
	"github.com/google/go-cmp/cmp"
)

func ints(t *testing.T, ds *Dataset) []int64 {
	t.Helper()
	els, err := ds.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range els {
		out = append(out, tensor.ToSlice[int64](e[0])...)
	}
	return out
}

func seq(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

func double(e Element) (Element, error) {
	v := tensor.ToSlice[int64](e[0])
	for i := range v {
		v[i] *= 2
	}
	return Element{tensor.FromSlice(v, e[0].Shape()...)}, nil
}

func TestPipelineBasics(t *testing.T) {
	ds := Range(0, 10, 1).Map(double).Filter(func(e Element) (bool, error) { return e[0].Item().(int64)%3 != 0, nil }).Batch(3, false)
	if got := ints(t, ds); !cmp.Equal(got, []int64{2, 4, 8, 10, 14, 16}) {
		t.Errorf("map/filter/batch: %v", got)
	}
	if got := ints(t, Range(0, 10, 1).Batch(4, true)); !cmp.Equal(got, seq(8)) {
		t.Errorf("drop remainder: %v", got)
	}
	if got := ints(t, Range(0, 10, 1).Skip(2).Take(3)); !cmp.Equal(got, []int64{2, 3, 4}) {
		t.Errorf("skip/take: %v", got)
	}
	if got := ints(t, Range(0, 3, 1).Repeat(2)); !cmp.Equal(got, []int64{0, 1, 2, 0, 1, 2}) {
		t.Errorf("repeat: %v", got)
	}
	if got := ints(t, Range(5, 8, 1).Enumerate().Map(func(e Element) (Element, error) { return Element{e[0]}, nil })); !cmp.Equal(got, []int64{0, 1, 2}) {
		t.Errorf("enumerate: %v", got)
	}
	z, _ := Zip(Range(0, 5, 1), Range(10, 13, 1)).Collect(context.Background())
	if len(z) != 3 || z[2][1].Item().(int64) != 12 {
		t.Errorf("zip: %v", z)
	}
	m := tensor.FromSlice([]int64{1, 2, 3, 4, 5, 6}, 3, 2)
	sl, err := FromSlices(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := ints(t, sl.Batch(2, false).Unbatch()); !cmp.Equal(got, []int64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("batch/unbatch: %v", got)
	}
	gen := FromGenerator(func(yield func(Element) bool) error {
		for i := range 4 {
			if !yield(Element{tensor.FromSlice(seq(int64(i + 1)))}) {
				return nil
			}
		}
		return nil
	})
	pb, err := gen.PaddedBatch(4, false, -1).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, -1, -1, -1, 0, 1, -1, -1, 0, 1, 2, -1, 0, 1, 2, 3}; !cmp.Equal(tensor.ToSlice[int64](pb[0][0]), want) {
		t.Errorf("padded batch: %v", pb[0][0])
	}
	if _, err := gen.Batch(4, false).Collect(context.Background()); err == nil || !strings.Contains(err.Error(), "Batch") {
		t.Errorf("ragged Batch: %v", err)
	}
}

// Epoch n runs the pipeline as the n-th pass of a Repeat does: a
// reshuffling Shuffle draws that pass's order (FromSlices' row
// permutation and the buffered shuffle alike), All is epoch 0, and a
// negative epoch panics.
func TestEpochs(t *testing.T) {
	epoch := func(ds *Dataset, n int) []int64 {
		var out []int64
		for e, err := range ds.Epoch(context.Background(), n) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tensor.ToSlice[int64](e[0])...)
		}
		return out
	}
	rows, err := FromSlices(tensor.FromSlice(seq(20), 20))
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range []*Dataset{Range(0, 20, 1).Shuffle(8, 3, true), rows.Shuffle(20, 3, true)} {
		three := ints(t, ds.Repeat(3))
		for n := range 3 {
			if got := epoch(ds, n); !cmp.Equal(got, three[20*n:20*(n+1)]) {
				t.Errorf("%s: epoch %d %v, Repeat(3)'s pass %d %v", ds.stage, n, got, n, three[20*n:20*(n+1)])
			}
		}
		if !cmp.Equal(epoch(ds, 0), ints(t, ds)) {
			t.Errorf("%s: epoch 0 is not All", ds.stage)
		}
	}
	if err := tensor.Catch(func() { Range(0, 2, 1).Epoch(context.Background(), -1) }); err == nil || !strings.Contains(err.Error(), "epoch -1 is negative") {
		t.Errorf("a negative epoch: %v", err)
	}
}

func TestShuffleIsDeterministic(t *testing.T) {
	a := ints(t, Range(0, 100, 1).Shuffle(16, 7, false))
	b := ints(t, Range(0, 100, 1).Shuffle(16, 7, false))
	if !cmp.Equal(a, b) {
		t.Error("same seed, different order")
	}
	if cmp.Equal(a, seq(100)) {
		t.Error("not shuffled")
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if !cmp.Equal(sorted, seq(100)) {
		t.Error("shuffle lost or duplicated elements")
	}
	two := ints(t, Range(0, 20, 1).Shuffle(20, 3, true).Repeat(2))
	if cmp.Equal(two[:20], two[20:]) {
		t.Error("reshuffleEachEpoch gave the same order twice")
	}
	same := ints(t, Range(0, 20, 1).Shuffle(20, 3, false).Repeat(2))
	if !cmp.Equal(same[:20], same[20:]) {
		t.Error("without reshuffle the epochs differ")
	}
}

func TestParallelMapAndInterleave(t *testing.T) {
	slow := func(e Element) (Element, error) {
		if e[0].Item().(int64)%7 == 0 {
			time.Sleep(time.Millisecond) // finish out of order
		}
		return double(e)
	}
	want := ints(t, Range(0, 200, 1).Map(double))
	if got := ints(t, Range(0, 200, 1).Map(slow, MapOptions{Parallel: 4})); !cmp.Equal(got, want) {
		t.Error("ordered parallel map differs from sequential")
	}
	got := ints(t, Range(0, 200, 1).Map(slow, MapOptions{Parallel: 4, Unordered: true}))
	slices.Sort(got)
	if !cmp.Equal(got, want) {
		t.Error("unordered parallel map lost elements")
	}
	sub := func(e Element) (*Dataset, error) {
		base := e[0].Item().(int64) * 10
		return Range(base, base+3, 1), nil
	}
	for _, par := range []bool{false, true} {
		got := ints(t, Range(0, 3, 1).Interleave(sub, InterleaveOptions{Cycle: 2, Block: 2, Parallel: par}))
		if want := []int64{0, 1, 10, 11, 2, 12, 20, 21, 22}; !cmp.Equal(got, want) {
			t.Errorf("interleave parallel=%v: %v", par, got)
		}
	}
	calls := 0
	cached := Range(0, 5, 1).Map(func(e Element) (Element, error) { calls++; return e, nil }).Cache()
	if got := ints(t, cached.Repeat(3)); len(got) != 15 || calls != 5 {
		t.Errorf("cache: %d elements, %d calls", len(got), calls)
	}
}

func TestTFRecordPipelineAndErrors(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for s := range 3 {
		name := filepath.Join(dir, fmt.Sprintf("shard-%d.tfrecord", s))
		w, err := CreateWriter(name, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			e := &Example{Features: map[string]*Feature{
				"id": {Kind: KindInt64, Int64s: []int64{int64(s*100 + i)}},
				"x":  {Kind: KindFloat, Floats: []float32{float32(i), float32(s)}},
			}}
			w.Write(e.Marshal())
		}
		w.Close()
		files = append(files, name)
	}
	p, _ := NewParser(ParseSpec{"id": FixedLen{Shape: []int{}, DType: tensor.Int64}, "x": FixedLen{Shape: []int{2}, DType: tensor.Float32}})
	ds := TFRecordFiles(files, TFRecordOptions{Parallel: 2}).Map(ParseWith(p), MapOptions{Parallel: 2}).Batch(4, false).Prefetch(2)
	els, err := ds.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range els {
		ids = append(ids, tensor.ToSlice[int64](e[0])...)
		if e[1].Dim(1) != 2 {
			t.Errorf("x shape %v", e[1].Shape())
		}
	}
	if want := []int64{0, 100, 1, 101, 2, 102, 3, 103, 4, 104, 200, 201, 202, 203, 204}; !cmp.Equal(ids, want) {
		t.Errorf("interleaved ids %v", ids)
	}
	a := ints(t, TFRecordFiles(files, TFRecordOptions{ShuffleFiles: true, Seed: 5}).Map(ParseWith(p)).Map(func(e Element) (Element, error) { return e[:1], nil }))
	b := ints(t, TFRecordFiles(files, TFRecordOptions{ShuffleFiles: true, Seed: 5}).Map(ParseWith(p)).Map(func(e Element) (Element, error) { return e[:1], nil }))
	if !cmp.Equal(a, b) || len(a) != 15 {
		t.Error("file shuffle not deterministic")
	}
	// A stage error names the stage; a corrupt file names the record.
	boom := errors.New("boom")
	_, err = Range(0, 10, 1).Map(func(e Element) (Element, error) { return nil, boom }, MapOptions{Parallel: 3}).Collect(context.Background())
	var se *StageError
	if !errors.As(err, &se) || se.Stage != "Map" || !errors.Is(err, boom) {
		t.Errorf("map error: %v", err)
	}
	bad := filepath.Join(corpusDir, "files", "corrupt", "bad_data_payload.tfrecord")
	_, err = TFRecordFiles([]string{bad}, TFRecordOptions{}).Prefetch(4).Collect(context.Background())
	if exists(corpusDir) && (!errors.Is(err, ErrDataCRCMismatch) || !strings.Contains(err.Error(), "record 10 at offset 997")) {
		t.Errorf("corrupt file: %v", err)
	}
}

// exists reports whether a file or directory is there.
func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Cancelling, or leaving a loop early, stops every stage's goroutines.
func TestCancellationLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	ds := Range(0, 1<<40, 1).Map(double, MapOptions{Parallel: 4}).Prefetch(8).Interleave(func(e Element) (*Dataset, error) {
		return Range(0, 3, 1), nil
	}, InterleaveOptions{Cycle: 2, Parallel: true}).Prefetch(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for _, err := range ds.All(ctx) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 50 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("after cancel: %v", last)
	}
	for range Range(0, 1<<40, 1).Map(double, MapOptions{Parallel: 3, Unordered: true}).Prefetch(4).All(context.Background()) {
		break
	}
	waitGoroutines(t, before)
}

func TestCacheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.tfrecord")
	calls := 0
	src := Range(0, 6, 1).Map(func(e Element) (Element, error) {
		calls++
		return Element{e[0], tensor.FromSlice([]float32{float32(calls), 0.5}, 1, 2)}, nil
	})
	// An interrupted first run leaves no cache.
	for range src.CacheFile(path).All(context.Background()) {
		break
	}
	if exists(path) {
		t.Fatal("an incomplete run left a cache file")
	}
	first, err := src.CacheFile(path).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := calls
	again, err := src.CacheFile(path).Collect(context.Background()) // a new dataset, as a later process would build
	if err != nil {
		t.Fatal(err)
	}
	if calls != before {
		t.Errorf("the cached run ran the pipeline (%d calls, then %d)", before, calls)
	}
	if len(again) != 6 || !cmp.Equal(tensor.ToSlice[float32](again[5][1]), tensor.ToSlice[float32](first[5][1])) ||
		!again[5][1].Shape().Equal(tensor.Shape{1, 2}) || again[5][0].Item().(int64) != 5 {
		t.Errorf("cached elements differ: %v", again[5])
	}
}

// The same seed gives the same order whatever the map workers, the
// prefetch depth and the number of cores. (How many files are read at
// once is the interleave's cycle length, which does define the order.)
func TestSameSeedSameOrderOnAnyParallelism(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for s := range 3 {
		name := filepath.Join(dir, fmt.Sprintf("s%d.tfrecord", s))
		w, _ := CreateWriter(name, WriterOptions{})
		for i := range 40 {
			w.Write((&Example{Features: map[string]*Feature{"v": {Kind: KindInt64, Int64s: []int64{int64(s*1000 + i)}}}}).Marshal())
		}
		w.Close()
		files = append(files, name)
	}
	p, _ := NewParser(ParseSpec{"v": FixedLen{Shape: []int{}, DType: tensor.Int64}})
	order := func(par, procs int) []int64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		ds := TFRecordFiles(files, TFRecordOptions{ShuffleFiles: true, Seed: 9, Parallel: 2}).
			Map(ParseWith(p), MapOptions{Parallel: par}).Shuffle(32, 9, true).Batch(7, false).Prefetch(par).Repeat(2)
		return ints(t, ds)
	}
	want := order(1, 1)
	for _, c := range [][2]int{{4, 2}, {3, 1}, {2, 2}} {
		if got := order(c[0], c[1]); !cmp.Equal(got, want) {
			t.Errorf("%d map workers on %d cores changed the order", c[0], c[1])
		}
	}
}
