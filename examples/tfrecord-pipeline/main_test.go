package main

import (
	"path/filepath"
	"testing"
)

func TestTrainingOnTheRecordsLearns(t *testing.T) {
	cfg := config{epochs: 6, shards: 4, perShard: 600}
	if testing.Short() {
		cfg = config{epochs: 4, shards: 2, perShard: 300}
	}
	res, err := run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.loss >= res.firstLoss || res.accuracy < 0.85 {
		t.Errorf("loss %.4f after %.4f, accuracy %.2f: want a falling loss and at least 85%%", res.loss, res.firstLoss, res.accuracy)
	}
	if _, err := run(config{epochs: 0}, nil); err == nil {
		t.Error("zero epochs accepted")
	}
	dir := t.TempDir()
	if _, err := run(config{epochs: 1, shards: 1, perShard: 64, dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"curves.png", "logs/events.out.tfevents.*", "blobs-*.tfrecord"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) != 1 {
			t.Errorf("%s: %v", pattern, m)
		}
	}
}
