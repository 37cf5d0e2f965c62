package data

import (
	"context"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// sliceDatasets returns FromSlices over [n 2] int64 rows (10*i, 10*i+1)
// and the same elements through an identity Map, which has no random
// access: the generic stages run on the second.
func sliceDatasets(t *testing.T, n int) (rows, generic *Dataset) {
	t.Helper()
	vals := make([]int64, 2*n)
	for i := range n {
		vals[2*i], vals[2*i+1] = int64(10*i), int64(10*i+1)
	}
	ds, err := FromSlices(tensor.FromSlice(vals, n, 2), tensor.Arange[int32](0, int32(n), 1))
	if err != nil {
		t.Fatal(err)
	}
	if ds.rows == nil {
		t.Fatal("FromSlices has no random access")
	}
	return ds, ds.Map(func(e Element) (Element, error) { return e, nil })
}

func elementsEqual(t *testing.T, what string, a, b *Dataset) {
	t.Helper()
	ea, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ea) != len(eb) {
		t.Fatalf("%s: %d elements, the generic stages give %d", what, len(ea), len(eb))
	}
	for i := range ea {
		for c := range ea[i] {
			if !ea[i][c].Shape().Equal(eb[i][c].Shape()) || !slices.Equal(ea[i][c].HostBytes(), eb[i][c].HostBytes()) {
				t.Fatalf("%s: element %d component %d is %v, the generic stages give %v", what, i, c, ea[i][c], eb[i][c])
			}
		}
	}
}

func TestRowSourceTakeSkipBatchMatchGeneric(t *testing.T) {
	rows, generic := sliceDatasets(t, 23)
	for _, c := range []struct {
		name string
		f    func(*Dataset) *Dataset
	}{
		{"Take", func(d *Dataset) *Dataset { return d.Take(5) }},
		{"Take beyond", func(d *Dataset) *Dataset { return d.Take(50) }},
		{"Skip", func(d *Dataset) *Dataset { return d.Skip(20) }},
		{"Skip all", func(d *Dataset) *Dataset { return d.Skip(30) }},
		{"Skip Take", func(d *Dataset) *Dataset { return d.Skip(4).Take(9).Skip(2) }},
		{"Batch", func(d *Dataset) *Dataset { return d.Batch(5, false) }},
		{"Batch drop", func(d *Dataset) *Dataset { return d.Batch(5, true) }},
		{"Skip Batch Repeat", func(d *Dataset) *Dataset { return d.Skip(3).Batch(7, false).Repeat(2) }},
	} {
		elementsEqual(t, c.name, c.f(rows), c.f(generic))
	}
}

func TestRowSourceShuffleIsAPermutation(t *testing.T) {
	rows, _ := sliceDatasets(t, 50)
	second := func(d *Dataset) []int32 {
		els, err := d.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []int32
		for _, e := range els {
			out = append(out, tensor.ToSlice[int32](e[1])...)
		}
		return out
	}
	a := second(rows.Skip(10).Shuffle(40, 7, true))
	if got := slices.Sorted(slices.Values(a)); !slices.Equal(got, tensor.ToSlice[int32](tensor.Arange[int32](10, 50, 1))) {
		t.Fatalf("shuffled rows %v are not a permutation of 10..49", a)
	}
	if slices.IsSorted(a) {
		t.Error("Shuffle left the rows in order")
	}
	if b := second(rows.Skip(10).Shuffle(40, 7, true)); !slices.Equal(a, b) {
		t.Error("the same seed gave another order")
	}
	two := second(rows.Shuffle(50, 3, true).Repeat(2))
	if slices.Equal(two[:50], two[50:]) {
		t.Error("reshuffleEachEpoch gave the same order twice")
	}
	same := second(rows.Shuffle(50, 3, false).Repeat(2))
	if !slices.Equal(same[:50], same[50:]) {
		t.Error("without reshuffle the epochs differ")
	}
	batched := second(rows.Shuffle(50, 3, false).Batch(8, false))
	if !slices.Equal(batched, same[:50]) {
		t.Error("batching the shuffled rows changed their order")
	}
	// A buffer smaller than the dataset keeps tf.data's buffered draws.
	if small := rows.Shuffle(10, 3, false); small.rows != nil {
		t.Error("a partial shuffle claims random access")
	}
}

func TestFromSlicesTransposedInput(t *testing.T) {
	x := ops.Transpose(tensor.Arange[float32](0, 6, 1).View(tensor.Shape{2, 3}, nil)) // [3 2]: rows (0 3) (1 4) (2 5)
	ds, err := FromSlices(x)
	if err != nil {
		t.Fatal(err)
	}
	els, err := ds.Batch(2, false).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := tensor.ToSlice[float32](els[0][0]); !slices.Equal(got, []float32{0, 3, 1, 4}) {
		t.Errorf("first batch %v, want [0 3 1 4]", got)
	}
	if got := tensor.ToSlice[float32](els[1][0]); !slices.Equal(got, []float32{2, 5}) {
		t.Errorf("second batch %v, want [2 5]", got)
	}
}

// Shard splits a dataset among workers, each element to exactly one, in
// order; over FromSlices (after a Shuffle too) as the generic stage does.
func TestShard(t *testing.T) {
	rows, generic := sliceDatasets(t, 23)
	for _, n := range []int{1, 2, 3, 5} {
		for i := range n {
			elementsEqual(t, "Shard", rows.Shard(n, i), generic.Shard(n, i))
			elementsEqual(t, "Shuffle Shard", rows.Shuffle(23, 4, false).Shard(n, i), rows.Shuffle(23, 4, false).Map(func(e Element) (Element, error) { return e, nil }).Shard(n, i))
		}
	}
	var all []int64
	for i := range 3 {
		all = append(all, ints(t, Range(0, 10, 1).Shard(3, i))...)
	}
	if slices.Sort(all); !slices.Equal(all, seq(10)) {
		t.Errorf("the shards' union is %v", all)
	}
	if got := ints(t, Range(0, 10, 1).Shard(3, 1)); !slices.Equal(got, []int64{1, 4, 7}) {
		t.Errorf("Shard(3, 1) = %v", got)
	}
	for _, bad := range [][2]int{{0, 0}, {3, 3}, {3, -1}} {
		if got := ints(t, Range(0, 10, 1).Shard(bad[0], bad[1])); len(got) != 0 {
			t.Errorf("Shard(%d, %d) = %v, want nothing", bad[0], bad[1], got)
		}
	}
}
