package nn

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A pipeline's checkpoint: a file per stage, read back on any layout.

// PipelineCheckpointPath is the file of stage s of size of the pipeline
// checkpoint at path: path + ".stage-<s>-of-<size>".
func PipelineCheckpointPath(path string, s, size int) string {
	return fmt.Sprintf("%s.stage-%d-of-%d", path, s, size)
}

// SavePipelineCheckpoint writes stage s of size's variables (and opt's
// state, if opt is not nil) to its file of the pipeline checkpoint at
// path (PipelineCheckpointPath), as SaveCheckpoint does: every rank of a
// pipeline saves its own stage.
func SavePipelineCheckpoint(path string, s, size int, vars []*tape.Variable, opt Optimizer, metadata map[string]string) error {
	if s < 0 || s >= size {
		return fmt.Errorf("nn: %w: SavePipelineCheckpoint: stage %d of %d", ErrCheckpoint, s, size)
	}
	return SaveCheckpoint(PipelineCheckpointPath(path, s, size), vars, opt, metadata)
}

// RestorePipelineCheckpoint restores vars (by name) and opt's state for
// them from the pipeline checkpoint at path, whatever its layout: the
// stage files of one save (every stage of one size present) are read and
// each variable taken from the file that holds it, so that a model saved
// by 2 stages resumes on 3, or in one process. It returns the metadata
// (the first stage's). A missing stage file, files of two layouts, or a
// variable no file holds is an error naming it; nothing is changed then.
func RestorePipelineCheckpoint(path string, vars []*tape.Variable, opt Optimizer) (map[string]string, error) {
	if err := nilArg("RestorePipelineCheckpoint", arg{"vars", vars}); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(path + ".stage-*-of-*")
	if err != nil {
		return nil, fmt.Errorf("nn: %w: %v", ErrCheckpoint, err)
	}
	size := 0
	for _, f := range files {
		var s, n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(f, path), ".stage-%d-of-%d", &s, &n); err != nil || PipelineCheckpointPath(path, s, n) != f {
			continue // a temporary of a save, or another name
		}
		if size != 0 && n != size {
			return nil, fmt.Errorf("nn: %w: %s has stage files of %d and of %d stages", ErrCheckpoint, path, size, n)
		}
		size = n
	}
	if size == 0 {
		return nil, fmt.Errorf("nn: %w: no stage files %s.stage-*-of-*", ErrCheckpoint, path)
	}
	saved := map[string]*tensor.Tensor{}
	var meta map[string]string
	for s := range size {
		f := PipelineCheckpointPath(path, s, size)
		t, m, err := LoadCheckpoint(f)
		if err != nil {
			return nil, err
		}
		if s == 0 {
			meta = m
		}
		maps.Copy(saved, t)
	}
	return meta, restoreFrom(path+".stage-*-of-"+fmt.Sprint(size), saved, meta, vars, opt)
}
