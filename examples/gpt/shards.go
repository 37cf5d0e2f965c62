package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The corpus as TFRecord shards of tf.train.Examples, written once and
// read back through a Dataset pipeline: each record is a window of
// context+1 bytes (feature "window", a bytes_list), the windows taken
// every context bytes, so that a window's ids and next bytes overlap by
// all but one. The windows of the first nine tenths of the text go to the
// training shards in turn, those of the last tenth (other packages: the
// source is read in path order) to the validation shard. A manifest names
// the source, its size and checksum and the context; shards whose
// manifest differs are written again.

const (
	trainShards = 4
	manifest    = "MANIFEST"
	shardLayout = 2 // the manifest's version of how windows go to shards
)

// shardFiles returns the training and validation shards for text under
// dir, writing them when the manifest there is not describe's.
func shardFiles(dir, describe string, text []byte, context int) (train, val []string, err error) {
	for i := range trainShards {
		train = append(train, filepath.Join(dir, fmt.Sprintf("train-%05d-of-%05d.tfrecord", i, trainShards)))
	}
	val = []string{filepath.Join(dir, "val-00000-of-00001.tfrecord")}
	if have, err := os.ReadFile(filepath.Join(dir, manifest)); err == nil && string(have) == describe {
		return train, val, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	writers := make([]*data.Writer, 0, trainShards+1)
	abort := func(err error) ([]string, []string, error) {
		for _, w := range writers {
			w.Abort()
		}
		return nil, nil, err
	}
	for _, f := range append(append([]string(nil), train...), val...) {
		w, err := data.CreateWriter(f, data.WriterOptions{})
		if err != nil {
			return abort(err)
		}
		writers = append(writers, w)
	}
	n := 0
	for at := 0; at+context+1 <= len(text); at += context {
		w := writers[trainShards] // the validation shard
		if isTrain(at, len(text), context) {
			w = writers[n%trainShards]
		}
		e := &data.Example{Features: map[string]*data.Feature{
			"window": {Kind: data.KindBytes, Bytes: [][]byte{text[at : at+context+1]}},
		}}
		if err := w.Write(e.Marshal()); err != nil {
			return abort(err)
		}
		n++
	}
	for _, w := range writers {
		if err := w.Close(); err != nil {
			return abort(err)
		}
	}
	writers = nil
	// The manifest last, atomically: shards without one are written again.
	tmp := filepath.Join(dir, manifest+".tmp")
	if err := os.WriteFile(tmp, []byte(describe), 0o644); err != nil {
		return nil, nil, err
	}
	return train, val, os.Rename(tmp, filepath.Join(dir, manifest))
}

// isTrain reports whether the window at at of a text of n bytes is a
// training one: it lies in the first nine tenths.
func isTrain(at, n, context int) bool { return at+context+1 <= n*9/10 }

// windowCounts is how many training and validation windows a text of n
// bytes makes.
func windowCounts(n, context int) (train, val int) {
	for at := 0; at+context+1 <= n; at += context {
		if isTrain(at, n, context) {
			train++
		} else {
			val++
		}
	}
	return train, val
}

// windows is the dataset of batches of n windows from files, as ids [n,
// context] and next bytes [n, context] (Int32): shuffled with seed (the
// files' order too, each epoch anew), repeated forever, parsed two at a
// time and prefetched.
func windows(files []string, context, n int, seed uint64) (*data.Dataset, error) {
	parser, err := data.NewParser(data.ParseSpec{"window": data.FixedLen{Shape: []int{context + 1}, DType: tensor.Uint8}})
	if err != nil {
		return nil, err
	}
	split := func(e data.Element) (data.Element, error) {
		var out data.Element
		err := tensor.Catch(func() {
			w := ops.Cast(e[0], tensor.Int32)
			out = data.Element{
				ops.Slice(w, []int{0, 0}, []int{w.Dim(0), context}, nil),
				ops.Slice(w, []int{0, 1}, []int{w.Dim(0), context + 1}, nil),
			}
		})
		return out, err
	}
	return data.TFRecordFiles(files, data.TFRecordOptions{ShuffleFiles: true, Seed: seed, Parallel: 2}).
		Map(data.ParseWith(parser), data.MapOptions{Parallel: 2}).
		Shuffle(4096, seed, true).
		Batch(n, true).
		Map(split).
		Repeat(-1).
		Prefetch(2), nil
}

// batches pulls batches from ds, one per call of the function it returns;
// stop ends the pipeline.
func batches(ds *data.Dataset) (next func() (x, y *tensor.Tensor, err error), stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	pull, done := iter.Pull2(ds.All(ctx))
	return func() (*tensor.Tensor, *tensor.Tensor, error) {
		e, err, ok := pull()
		if !ok {
			return nil, nil, errors.New("the data pipeline ended")
		}
		if err != nil {
			return nil, nil, err
		}
		return e[0], e[1], nil
	}, func() { done(); cancel() }
}

// cacheDir is where the shards of a source go by default: the user's
// cache directory, else the system's temporary one.
func cacheDir(root string, context int) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	name := strings.NewReplacer(string(filepath.Separator), "_", ":", "_").Replace(filepath.Clean(root))
	return filepath.Join(base, "eagerflow", "gpt", fmt.Sprintf("%s-ctx%d", strings.Trim(name, "_"), context))
}
