package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
)

// A short run on a slice of the data learns: 3000 training images, one
// epoch, validation and a test on 2000 held-out images.
func TestFashionMNISTLearns(t *testing.T) {
	cfg := config{dataDir: "/usr/share/datasets/fashion-mnist", epochs: 1, train: 3000, test: 2000, progress: io.Discard, dir: t.TempDir()}
	if _, err := os.Stat(cfg.dataDir); err != nil {
		if os.Getenv("EAGERFLOW_REQUIRE_TORCH") != "" {
			t.Fatalf("%v: scripts/install-test-deps installs dataset-fashion-mnist", err)
		}
		t.Skipf("%v: install Debian's dataset-fashion-mnist (scripts/install-test-deps does)", err)
	}
	res, err := run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.history.Epochs) != 1 || res.history.Epochs[0]["val_accuracy"] < 0.6 {
		t.Errorf("history %+v", res.history)
	}
	if res.tested != 2000 || res.accuracy < 0.65 {
		t.Errorf("test accuracy %.3f on %d images", res.accuracy, res.tested)
	}
	for _, name := range []string{"curves.png", "test-images.png", "checkpoint.safetensors"} {
		if _, err := os.Stat(filepath.Join(cfg.dir, name)); err != nil {
			t.Error(err)
		}
	}
}

// The same short run in mixed bfloat16 learns as well.
func TestFashionMNISTLearnsInMixedBFloat16(t *testing.T) {
	cfg := config{dataDir: "/usr/share/datasets/fashion-mnist", epochs: 1, train: 3000, test: 2000, progress: io.Discard, policy: nn.MixedBFloat16}
	if _, err := os.Stat(cfg.dataDir); err != nil {
		t.Skipf("%v: install Debian's dataset-fashion-mnist (scripts/install-test-deps does)", err)
	}
	res, err := run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.tested != 2000 || res.accuracy < 0.65 {
		t.Errorf("test accuracy %.3f on %d images", res.accuracy, res.tested)
	}
}

func TestMissingDataSaysHowToInstall(t *testing.T) {
	_, err := run(config{dataDir: t.TempDir(), epochs: 1, train: 10, test: 10, progress: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "install Debian's dataset-fashion-mnist") {
		t.Errorf("error %v", err)
	}
}
