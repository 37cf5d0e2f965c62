package nn

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/eagerflow/eagerflow/backend"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/atomicfile"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Checkpoints are safetensors files (huggingface's format: an 8-byte
// little-endian header length, a JSON header of name -> dtype, shape and
// byte range, then the raw little-endian data), so weights open in PyTorch
// and JAX tools. Optimizer state is saved beside the variables under
// "optimizer/<slot>/<variable>", its step count in the metadata.

// ErrCheckpoint wraps every checkpoint error.
var ErrCheckpoint = errors.New("checkpoint")

var safetensorsDType = map[tensor.DType]string{
	tensor.Float32: "F32", tensor.Float64: "F64", tensor.Int32: "I32",
	tensor.Int64: "I64", tensor.Uint8: "U8", tensor.Bool: "BOOL",
	tensor.BFloat16: "BF16", tensor.Float16: "F16", tensor.Float8E4M3: "F8_E4M3", tensor.Float8E5M2: "F8_E5M2",
}

type headerEntry struct {
	DType   string `json:"dtype"`
	Shape   []int  `json:"shape"`
	Offsets [2]int `json:"data_offsets"`
}

// SaveCheckpoint writes vars (and the optimizer's state, if opt is not nil)
// to path atomically: a temporary file in the same directory, synced, then
// renamed over path, so a crash mid-save never corrupts the last good
// checkpoint. metadata is stored as the file's __metadata__.
func SaveCheckpoint(path string, vars []*tape.Variable, opt Optimizer, metadata map[string]string) error {
	return saveCheckpoint(path, vars, opt, metadata, nil)
}

// saveCheckpoint is SaveCheckpoint with a hook on the file's writer (tests
// use it to fail mid-write).
func saveCheckpoint(path string, vars []*tape.Variable, opt Optimizer, metadata map[string]string, wrap func(io.Writer) io.Writer) (err error) {
	if err := nilArg("SaveCheckpoint", arg{"vars", vars}); err != nil {
		return err
	}
	all := vars
	meta := map[string]string{}
	for k, v := range metadata {
		meta[k] = v
	}
	if opt != nil {
		all = append(append([]*tape.Variable{}, vars...), opt.Slots()...)
		meta["optimizer_steps"] = strconv.Itoa(opt.Steps())
		if m, ok := opt.(interface{ checkpointMeta() map[string]string }); ok {
			for k, v := range m.checkpointMeta() {
				meta[k] = v
			}
		}
	}
	header := map[string]any{"__metadata__": meta}
	at := 0
	seen := map[string]bool{}
	for _, v := range all {
		t := v.Value()
		if seen[v.Name()] {
			return fmt.Errorf("nn: %w: two variables are named %q", ErrCheckpoint, v.Name())
		}
		seen[v.Name()] = true
		n := t.NumElements() * t.DType().Size()
		header[v.Name()] = headerEntry{DType: safetensorsDType[t.DType()], Shape: t.Shape().Clone(), Offsets: [2]int{at, at + n}}
		at += n
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("nn: %w: %v", ErrCheckpoint, err)
	}
	for len(hj)%8 != 0 { // the data starts 8-byte aligned
		hj = append(hj, ' ')
	}
	removeStaleTemps(path)
	if err := atomicfile.CheckPath(path); err != nil {
		return fmt.Errorf("nn: SaveCheckpoint: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("nn: %w: %v", ErrCheckpoint, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = lockTemp(f); err != nil {
		return fmt.Errorf("nn: %w: locking %s: %v", ErrCheckpoint, f.Name(), err)
	}
	var w io.Writer = f
	if wrap != nil {
		w = wrap(w)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var size [8]byte
	binary.LittleEndian.PutUint64(size[:], uint64(len(hj)))
	bw.Write(size[:])
	bw.Write(hj)
	for _, v := range all {
		var h *tensor.Tensor // a variable trained on a GPU is read from it
		if h, err = backend.OnHost(v.Value()); err != nil {
			return fmt.Errorf("nn: %w: variable %q: %v", ErrCheckpoint, v.Name(), err)
		}
		bw.Write(h.HostBytes())
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("nn: %w: writing %s: %v", ErrCheckpoint, path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("nn: %w: syncing %s: %v", ErrCheckpoint, path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("nn: %w: %v", ErrCheckpoint, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("nn: %w: %v", ErrCheckpoint, err)
	}
	return nil
}

// LoadCheckpoint reads every tensor of a safetensors file and its metadata.
// A truncated or malformed file is an error naming the problem, never a
// panic: the header must be a JSON object whose __metadata__ maps strings
// to strings, every tensor must have a known dtype, a valid shape and a
// byte range of exactly its size, and the ranges must tile the data with
// no gap or overlap (as the safetensors library requires). Temporaries of
// saves to path that were killed midway are removed first.
func LoadCheckpoint(path string) (map[string]*tensor.Tensor, map[string]string, error) {
	removeStaleTemps(path)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("nn: %w: %v", ErrCheckpoint, err)
	}
	return decodeSafetensors(raw, path)
}

// decodeSafetensors decodes a whole safetensors file; name is for errors.
func decodeSafetensors(raw []byte, name string) (map[string]*tensor.Tensor, map[string]string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("nn: %w: %s: %s", ErrCheckpoint, name, fmt.Sprintf(format, args...))
	}
	if len(raw) < 8 {
		return nil, nil, bad("%d bytes is too short for a safetensors file", len(raw))
	}
	n := binary.LittleEndian.Uint64(raw[:8])
	if n > uint64(len(raw)-8) {
		return nil, nil, bad("header of %d bytes in a %d-byte file", n, len(raw))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &header); err != nil {
		return nil, nil, bad("header: %v", err)
	}
	body := raw[8+n:]
	meta := map[string]string{}
	type entry struct {
		name string
		dt   tensor.DType
		e    headerEntry
	}
	var entries []entry
	for tn, msg := range header {
		if tn == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, bad("__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, nil, bad("tensor %q: %v", tn, err)
		}
		dt := tensor.Invalid
		for d, s := range safetensorsDType {
			if s == e.DType {
				dt = d
			}
		}
		if dt == tensor.Invalid {
			return nil, nil, bad("tensor %q has dtype %q, which eagerflow does not read", tn, e.DType)
		}
		size, ok := tensor.ByteSize(dt, e.Shape)
		if !ok {
			return nil, nil, bad("tensor %q has shape %v: a negative dimension or more elements than an int can count", tn, e.Shape)
		}
		if e.Offsets[0] < 0 || e.Offsets[1] > len(body) || e.Offsets[0] > e.Offsets[1] || e.Offsets[1]-e.Offsets[0] != size {
			return nil, nil, bad("tensor %q: bytes %v do not hold %v%v in a %d-byte body", tn, e.Offsets, dt, tensor.Shape(e.Shape), len(body))
		}
		entries = append(entries, entry{tn, dt, e})
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].e.Offsets, entries[j].e.Offsets
		return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1])
	})
	at := 0
	for _, en := range entries {
		if en.e.Offsets[0] != at {
			what := "overlaps the one before"
			if en.e.Offsets[0] > at {
				what = "leaves a gap after the one before"
			}
			return nil, nil, bad("tensor %q: bytes %v %s (which ends at %d)", en.name, en.e.Offsets, what, at)
		}
		at = en.e.Offsets[1]
	}
	if at != len(body) {
		return nil, nil, bad("the tensors' bytes end at %d, the data has %d", at, len(body))
	}
	out := make(map[string]*tensor.Tensor, len(entries))
	for _, en := range entries {
		t, err := tensor.Empty(device.Host(), en.dt, tensor.Shape(en.e.Shape).Clone())
		if err != nil {
			return nil, nil, bad("tensor %q: %v", en.name, err)
		}
		b := t.HostBytes()
		copy(b, body[en.e.Offsets[0]:en.e.Offsets[1]])
		if en.dt == tensor.Bool {
			if i := slices.IndexFunc(b, func(v byte) bool { return v > 1 }); i >= 0 {
				return nil, nil, bad("tensor %q: BOOL element %d holds the byte %#02x; a BOOL holds 0 or 1", en.name, i, b[i])
			}
		}
		out[en.name] = t
	}
	return out, meta, nil
}

// RestoreCheckpoint loads path into vars (by name) and, if opt is not nil,
// the optimizer's state. A variable missing from the file, or saved with
// another shape or dtype, is an error naming it; nothing is changed then.
func RestoreCheckpoint(path string, vars []*tape.Variable, opt Optimizer) (map[string]string, error) {
	if err := nilArg("RestoreCheckpoint", arg{"vars", vars}); err != nil {
		return nil, err
	}
	saved, meta, err := LoadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	return meta, restoreFrom(path, saved, meta, vars, opt)
}

// restoreFrom is RestoreCheckpoint of the tensors and metadata loaded
// from path (the name errors give).
func restoreFrom(path string, saved map[string]*tensor.Tensor, meta map[string]string, vars []*tape.Variable, opt Optimizer) error {
	byName := map[string]*tape.Variable{}
	for _, v := range vars { // check everything before changing anything
		t, ok := saved[v.Name()]
		if !ok {
			return fmt.Errorf("nn: %w: %s has no variable %q", ErrCheckpoint, path, v.Name())
		}
		if t.DType() != v.Value().DType() || !t.Shape().Equal(v.Value().Shape()) {
			return fmt.Errorf("nn: %w: variable %q is %s in the model and %s in %s",
				ErrCheckpoint, v.Name(), tensor.Describe(v.Value()), tensor.Describe(t), path)
		}
		byName[v.Name()] = v
	}
	// Optimizer slots "optimizer/<slot>/<variable>" must fit their
	// variable (a slot of another shape would fail the next update); slots
	// of variables not being restored are left out.
	var slotNames []string
	steps := -1
	if opt != nil {
		for name, t := range saved {
			rest, ok := strings.CutPrefix(name, "optimizer/")
			if !ok {
				continue
			}
			_, varName, ok := strings.Cut(rest, "/")
			v := byName[varName]
			if !ok || v == nil {
				continue
			}
			if t.DType() != v.Value().DType() || !t.Shape().Equal(v.Value().Shape()) {
				return fmt.Errorf("nn: %w: optimizer slot %q is %s in %s, its variable %s",
					ErrCheckpoint, name, tensor.Describe(t), path, tensor.Describe(v.Value()))
			}
			slotNames = append(slotNames, name)
		}
		sort.Strings(slotNames)
		if s, ok := meta["optimizer_steps"]; ok {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return fmt.Errorf("nn: %w: %s: optimizer_steps %q is not a count", ErrCheckpoint, path, s)
			}
			steps = n
		}
	}
	// Each value goes to its variable's device (a model on a GPU) before
	// anything changes.
	onto := func(name string, v *tape.Variable) error {
		dev := v.Value().Device()
		if saved[name].Device() == dev {
			return nil
		}
		moved, err := saved[name].To(dev)
		if err != nil {
			return fmt.Errorf("nn: %w: %q to %s: %v", ErrCheckpoint, name, dev.Name(), err)
		}
		saved[name] = moved
		return nil
	}
	for _, v := range vars {
		if err := onto(v.Name(), v); err != nil {
			return err
		}
	}
	for _, name := range slotNames {
		_, varName, _ := strings.Cut(strings.TrimPrefix(name, "optimizer/"), "/")
		if err := onto(name, byName[varName]); err != nil {
			return err
		}
	}
	var restoreOpt func() // the optimizer's own state from the metadata, checked before anything changes
	if r, ok := opt.(interface {
		restoreMeta(map[string]string) (func(), error)
	}); ok {
		var err error
		if restoreOpt, err = r.restoreMeta(meta); err != nil {
			return fmt.Errorf("nn: %w: %s: %v", ErrCheckpoint, path, err)
		}
	}
	for _, v := range vars {
		v.Assign(saved[v.Name()])
	}
	if opt != nil {
		if s, ok := opt.(interface{ setSlot(string, *tensor.Tensor) }); ok {
			for _, name := range slotNames {
				s.setSlot(name, saved[name])
			}
		}
		if steps >= 0 {
			opt.SetSteps(steps)
		}
		if restoreOpt != nil {
			restoreOpt()
		}
	}
	return nil
}

// setSlot restores a slot variable by its full name.
func (s *slots) setSlot(key string, t *tensor.Tensor) {
	if s.vars == nil {
		s.vars = map[string]*tape.Variable{}
	}
	if sv, ok := s.vars[key]; ok && sv.Value().Shape().Equal(t.Shape()) {
		sv.Assign(t)
		return
	}
	sv := tape.NewVariable(key, t)
	s.vars[key] = sv
	s.order = append(s.order, sv)
}
