package main

import (
	"path/filepath"
	"testing"
)

func TestLossFalls(t *testing.T) {
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	res, err := run(config{steps: steps, hidden: 32, lr: 0.05, seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.final > res.first/4 {
		t.Errorf("mse went from %.4f to %.4f; want a fall by 4x or more", res.first, res.final)
	}
	if _, err := run(config{steps: 0, hidden: 1, lr: 1}, nil); err == nil {
		t.Error("zero steps accepted")
	}
	dir := t.TempDir()
	if _, err := run(config{steps: 20, hidden: 4, lr: 0.05, seed: 1, dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"loss.png", "logs/events.out.tfevents.*"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) != 1 {
			t.Errorf("%s: %v", pattern, m)
		}
	}
}
