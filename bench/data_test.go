package bench

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/tensor"
)

var (
	recordFiles     sync.Once
	recordDir       string
	recordFilesErr  error
	recordFileBytes int64
)

// tfrecordFiles writes (once per run) 256 MiB of 1 KiB records, plain and
// GZIP-compressed, to a temporary directory.
func tfrecordFiles(b *testing.B) (plain, gz string) {
	recordFiles.Do(func() {
		recordDir, recordFilesErr = os.MkdirTemp("", "eagerflow-bench-")
		if recordFilesErr != nil {
			return
		}
		payload := bytes.Repeat([]byte("0123456789abcdef"), 64) // 1 KiB, compressible like real features
		for _, name := range []string{"r.tfrecord", "r.tfrecord.gz"} {
			w, err := data.CreateWriter(filepath.Join(recordDir, name), data.WriterOptions{})
			if err != nil {
				recordFilesErr = err
				return
			}
			for range 256 << 10 {
				w.Write(payload)
			}
			if recordFilesErr = w.Close(); recordFilesErr != nil {
				return
			}
		}
		st, _ := os.Stat(filepath.Join(recordDir, "r.tfrecord"))
		recordFileBytes = st.Size()
	})
	if recordFilesErr != nil {
		b.Fatal(recordFilesErr)
	}
	return filepath.Join(recordDir, "r.tfrecord"), filepath.Join(recordDir, "r.tfrecord.gz")
}

// BenchmarkTFRecordRead reads every record of a 256 MiB file of 1 KiB
// records (framing and both CRCs); MB/s are of the decompressed stream.
// "copy+crc" is the baseline: reading the same bytes and computing their
// CRC-32C, with no framing.
func BenchmarkTFRecordRead(b *testing.B) {
	plain, gz := tfrecordFiles(b)
	for _, c := range []struct{ name, path string }{{"none", plain}, {"gzip", gz}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(recordFileBytes)
			for b.Loop() {
				r, err := data.OpenReader(c.path, data.ReaderOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := r.Next(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				r.Close()
			}
		})
	}
	b.Run("copy+crc", func(b *testing.B) {
		table := crc32.MakeTable(crc32.Castagnoli)
		buf := make([]byte, 256<<10)
		b.SetBytes(recordFileBytes)
		for b.Loop() {
			f, _ := os.Open(plain)
			var crc uint32
			for {
				n, err := f.Read(buf)
				crc = crc32.Update(crc, table, buf[:n])
				if err != nil {
					break
				}
			}
			f.Close()
		}
	})
}

// mnistLike returns 64 serialized Examples of 784 floats and an int64
// label.
func mnistLike() [][]byte {
	rng := tensor.NewRNG(21)
	px := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, 0, 1, 64*784))
	recs := make([][]byte, 64)
	for i := range recs {
		e := &data.Example{Features: map[string]*data.Feature{
			"image": {Kind: data.KindFloat, Floats: px[i*784 : (i+1)*784]},
			"label": {Kind: data.KindInt64, Int64s: []int64{int64(i % 10)}},
		}}
		recs[i] = e.Marshal()
	}
	return recs
}

// BenchmarkParseExampleBatch parses 64 Examples into a [64 784] Float32 and
// a [64] Int64 tensor: "parser" is the batch parser, "generic" decodes each
// Example and copies its values (the baseline the issue compares with).
// Reports examples/s.
func BenchmarkParseExampleBatch(b *testing.B) {
	recs := mnistLike()
	b.Run("parser", func(b *testing.B) {
		p, err := data.NewParser(data.ParseSpec{
			"image": data.FixedLen{Shape: []int{784}, DType: tensor.Float32},
			"label": data.FixedLen{Shape: []int{}, DType: tensor.Int64},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Parse(recs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "examples/s")
	})
	b.Run("generic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			img := make([]float32, 0, 64*784)
			lab := make([]int64, 0, 64)
			for _, r := range recs {
				e, err := data.UnmarshalExample(r)
				if err != nil {
					b.Fatal(err)
				}
				img = append(img, e.Features["image"].Floats...)
				lab = append(lab, e.Features["label"].Int64s...)
			}
			tensor.FromSlice(img, 64, 784)
			tensor.FromSlice(lab)
		}
		b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "examples/s")
	})
}

var (
	pipelineFiles []string
	pipelineDir   string
	pipelineOnce  sync.Once
)

// TestMain removes the files the data benchmarks write.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{recordDir, pipelineDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// BenchmarkPipeline runs TFRecord shards -> parallel parse -> shuffle ->
// batch -> prefetch: 4 shards of 1024 MNIST-like Examples (784 floats and
// a label), batches of 64, reporting batches/s.
func BenchmarkPipeline(b *testing.B) {
	pipelineOnce.Do(func() {
		dir, err := os.MkdirTemp("", "eagerflow-pipeline-")
		if err != nil {
			b.Fatal(err)
		}
		pipelineDir = dir
		recs := mnistLike()
		for s := range 4 {
			name := filepath.Join(dir, fmt.Sprintf("shard-%d.tfrecord", s))
			w, err := data.CreateWriter(name, data.WriterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 1024 {
				w.Write(recs[i%len(recs)])
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			pipelineFiles = append(pipelineFiles, name)
		}
	})
	p, err := data.NewParser(data.ParseSpec{
		"image": data.FixedLen{Shape: []int{784}, DType: tensor.Float32},
		"label": data.FixedLen{Shape: []int{}, DType: tensor.Int64},
	})
	if err != nil {
		b.Fatal(err)
	}
	ds := data.TFRecordFiles(pipelineFiles, data.TFRecordOptions{Parallel: 2, ShuffleFiles: true, Seed: 1}).
		Map(data.ParseWith(p), data.MapOptions{Parallel: 2}).
		Shuffle(256, 1, true).
		Batch(64, true).
		Prefetch(2)
	batches := 0
	for b.Loop() {
		for _, err := range ds.All(context.Background()) {
			if err != nil {
				b.Fatal(err)
			}
			batches++
		}
	}
	b.ReportMetric(float64(batches)/b.Elapsed().Seconds(), "batches/s")
}
