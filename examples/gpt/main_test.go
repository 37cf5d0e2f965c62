package main

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A short run on a slice of Go's source learns (the loss falls from
// ln 256) and samples the asked number of bytes after its prompt.
func TestGPTLearns(t *testing.T) {
	src := filepath.Join(runtime.GOROOT(), "src", "strings")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no Go source tree at %s: %v", src, err)
	}
	c := defaults()
	c.steps, c.layers, c.heads, c.dim, c.context, c.batch, c.sample = 150, 2, 2, 32, 32, 8, 40
	c.source, c.maxBytes, c.progress = src, 200000, io.Discard
	c.dataDir, c.out = t.TempDir(), t.TempDir()
	res, err := run(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"gpt.ckpt", "curves.png"} {
		if _, err := os.Stat(filepath.Join(c.out, f)); err != nil {
			t.Error(err)
		}
	}
	if len(res.history.Epochs) != 3 { // steps 50, 100 and 150
		t.Errorf("%d validations in 150 steps, want 3", len(res.history.Epochs))
	}
	// A second run reuses the shards (the manifest matches) and, the
	// same seeds, learns the same.
	stamp, err := os.Stat(filepath.Join(c.dataDir, "train-00000-of-00004.tfrecord"))
	if err != nil {
		t.Fatal(err)
	}
	c.steps, c.out = 20, ""
	again, err := run(c)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := os.Stat(filepath.Join(c.dataDir, "train-00000-of-00004.tfrecord")); !s.ModTime().Equal(stamp.ModTime()) {
		t.Error("the shards were written again")
	}
	if again.first != res.first {
		t.Errorf("first loss %v, then %v from the same seed", res.first, again.first)
	}
	if !(res.first > 5 && res.last < 3.6 && res.val < 3.8) {
		t.Errorf("loss %.3f -> %.3f, validation %.3f", res.first, res.last, res.val)
	}
	if !strings.HasPrefix(res.sample, "func ") || len(res.sample) != len("func ")+40 {
		t.Errorf("sample %q", res.sample)
	}
}

// pick draws among the k likeliest bytes only, the likeliest most often.
func TestPickTopK(t *testing.T) {
	logits := make([]float32, 256)
	logits['a'], logits['b'], logits['c'] = 5, 4, 3
	r := rand.New(rand.NewPCG(1, 1))
	seen := map[byte]int{}
	for range 1000 {
		seen[pick(logits, 1, 2, r)]++
	}
	if len(seen) != 2 || seen['a'] <= seen['b'] {
		t.Errorf("drew %v from the top 2", seen)
	}
}

// A source too small for a batch of validation windows is an error, not a
// pipeline that never yields.
func TestGPTTooLittleSource(t *testing.T) {
	src := filepath.Join(runtime.GOROOT(), "src", "strings")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no Go source tree at %s: %v", src, err)
	}
	c := defaults()
	c.source, c.maxBytes, c.dataDir, c.context, c.batch = src, 1500, t.TempDir(), 32, 8
	if _, err := run(c); err == nil || !strings.Contains(err.Error(), "fewer than a batch") {
		t.Errorf("error %v", err)
	}
}
