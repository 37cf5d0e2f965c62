package nn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/tensor"
	"github.com/google/go-cmp/cmp"
)

// safetensors builds a file from a JSON header and a body.
func safetensors(header string, body []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), body...)
}

// Malformed headers are errors naming the problem, never panics or silent
// loads.
func TestDecodeSafetensorsRefusesMalformedHeaders(t *testing.T) {
	body := make([]byte, 16)
	body[3] = 7 // read as F32 it is a denormal; as BOOL, neither true nor false
	cases := []struct{ name, header, want string }{
		{"negative dim", `{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,16]}}`, "negative dimension"},
		{"overflowing shape", `{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}}`, "more elements than an int"},
		{"overlap", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}}`, "overlaps"},
		{"same bytes twice", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, "overlaps"},
		{"gap", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, "gap"},
		{"short of the body", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, "end at 8"},
		{"reversed range", `{"a":{"dtype":"U8","shape":[0],"data_offsets":[16,0]}}`, "do not hold"},
		{"metadata not strings", `{"__metadata__":{"steps":3},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, "__metadata__"},
		{"unknown dtype", `{"a":{"dtype":"C64","shape":[2],"data_offsets":[0,16]}}`, "C64"},
		{"not an object", `[1,2]`, "header"},
		{"BOOL byte 7", `{"a":{"dtype":"BOOL","shape":[16],"data_offsets":[0,16]}}`, `tensor "a": BOOL element 3 holds the byte 0x07`},
	}
	for _, c := range cases {
		_, _, err := decodeSafetensors(safetensors(c.header, body), c.name)
		if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	got, meta, err := decodeSafetensors(safetensors(`{"__metadata__":{"k":"v"},"b":{"dtype":"I32","shape":[2],"data_offsets":[8,16]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, body), "ok")
	if err != nil || len(got) != 2 || meta["k"] != "v" || !got["b"].Shape().Equal(tensor.Shape{2}) {
		t.Errorf("a valid file: %v %v %v", got, meta, err)
	}
}

// Optimizer slots restored from a file must fit their variables; a
// mismatch changes nothing.
func TestRestoreRefusesSlotsOfAnotherShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	m := model(1, 5)
	opt := &Adam{LR: Constant(0.01)}
	trainSteps(m, opt, 2)
	if err := SaveCheckpoint(path, AllVariables(m), opt, nil); err != nil {
		t.Fatal(err)
	}
	saved, meta, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite one slot with another shape.
	var vars []*tensorVar
	for name, v := range saved {
		if strings.HasPrefix(name, "optimizer/") && strings.HasSuffix(name, "dense1/kernel") {
			v = tensor.Zeros(v.DType(), 3)
		}
		vars = append(vars, &tensorVar{name, v})
	}
	writeRaw(t, path, vars, meta)
	fresh := model(2, 5)
	freshOpt := &Adam{LR: Constant(0.01)}
	before := tensor.ToSlice[float32](fresh.Variables()[0].Value())
	_, err = RestoreCheckpoint(path, AllVariables(fresh), freshOpt)
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "dense1/kernel") || !strings.Contains(err.Error(), "float32[3]") {
		t.Fatalf("got %v", err)
	}
	if !cmp.Equal(before, tensor.ToSlice[float32](fresh.Variables()[0].Value())) || len(freshOpt.Slots()) != 0 {
		t.Error("a refused restore changed the model or the optimizer")
	}
}

type tensorVar struct {
	name string
	t    *tensor.Tensor
}

// writeRaw writes a safetensors file of the given tensors as they are.
func writeRaw(t *testing.T, path string, vars []*tensorVar, meta map[string]string) {
	t.Helper()
	header := "{"
	first := true
	at := 0
	var body []byte
	if len(meta) > 0 {
		header += `"__metadata__":{`
		i := 0
		for k, v := range meta {
			if i > 0 {
				header += ","
			}
			header += fmt.Sprintf("%q:%q", k, v)
			i++
		}
		header += "}"
		first = false
	}
	for _, v := range vars {
		b := v.t.HostBytes()
		if !first {
			header += ","
		}
		first = false
		header += fmt.Sprintf(`%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, v.name, safetensorsDType[v.t.DType()],
			strings.ReplaceAll(fmt.Sprint([]int(v.t.Shape())), " ", ","), at, at+len(b))
		at += len(b)
		body = append(body, b...)
	}
	header += "}"
	if err := os.WriteFile(path, safetensors(header, body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Temporaries of saves killed midway are removed by the next save or
// load of the same target; a live save's temporary and other files stay.
func TestStaleTemporariesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	dead := filepath.Join(dir, tempPrefix(path)+"123")
	other := filepath.Join(dir, tempPrefix(filepath.Join(dir, "other.safetensors"))+"9")
	for _, f := range []string{dead, other} {
		if err := os.WriteFile(f, []byte("half a checkpoint"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	live, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := lockTemp(live); err != nil {
		t.Fatal(err)
	}
	if err := SaveCheckpoint(path, AllVariables(model(1, 3)), nil, nil); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{dead: false, other: true, live.Name(): true} {
		if _, err := os.Stat(f); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(f), err == nil, want)
		}
	}
	os.WriteFile(dead, nil, 0o644)
	if _, _, err := LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("a load left a dead save's temporary")
	}
}

// A process killed while it saves, again and again, never leaves a
// checkpoint that fails to load, and the temporaries it leaves are gone
// after the next load.
func TestSaveKilledBySIGKILL(t *testing.T) {
	if dir := os.Getenv("EAGERFLOW_SAVE_LOOP"); dir != "" {
		m := model(1, 256)
		for i := 0; ; i++ {
			if err := SaveCheckpoint(filepath.Join(dir, "ckpt.safetensors"), AllVariables(m), nil, map[string]string{"i": fmt.Sprint(i)}); err != nil {
				panic(err)
			}
		}
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 8 {
		cmd := exec.Command(exe, "-test.run", "^TestSaveKilledBySIGKILL$")
		cmd.Env = append(os.Environ(), "EAGERFLOW_SAVE_LOOP="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+rand.IntN(150)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if _, err := os.Stat(path); err != nil {
			continue // killed before its first save
		}
		if _, _, err := LoadCheckpoint(path); err != nil {
			t.Fatalf("round %d: the checkpoint does not load: %v", round, err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("round %d: after a load the folder holds %d files", round, len(entries))
		}
	}
}
