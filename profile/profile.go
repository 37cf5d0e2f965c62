// Package profile records what a program's ops cost, as torch.profiler
// does for PyTorch: each op's host time (its checks, dispatch and kernel,
// or on a GPU the kernel's launch) and, on a device that times its queue
// (device.Timer: a GPU, through CUDA events), the time its work took
// there. Stop returns the records: Table sums them per op, heaviest
// first; WriteTrace writes Chrome's trace format, which chrome://tracing
// and Perfetto (ui.perfetto.dev) open, a track for the host and one per
// timed device.
//
//	profile.Start()
//	... train a few steps ...
//	p, err := profile.Stop()
//	fmt.Print(p.Table())
//	err = p.WriteTraceFile("steps.json")
//
// EAGERFLOW_PROFILE=FILE records from the start of a program that imports
// the package (package nn does) and writes the trace to FILE, with the
// table beside it (FILE.txt), when nn.Fit returns or WriteEnv is called.
//
// Ops run by a traced graph are recorded too, one record an op. While no
// profile runs an op pays one atomic load. Device times make each op wait
// for nothing on the host, but marking the queue costs a few
// microseconds an op: compare ops with each other, and time whole steps
// with benchmarks.
package profile

import (
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/atomicfile"
	"github.com/eagerflow/eagerflow/tensor"
)

// Record is one op's run.
type Record struct {
	Op     string // the op's name (eager.Op.Name)
	Device string // where it ran
	Inputs string // the inputs' dtypes and shapes
	// Start is when the op began on the host, from the profile's start;
	// Host is how long it took there.
	Start, Host time.Duration
	// Timed reports whether the device timed the op's work: DeviceStart is
	// when that work began on the device, from the device's first timed
	// op; DeviceTime is how long it took there.
	Timed                   bool
	DeviceStart, DeviceTime time.Duration
}

// Profile is what Stop returns: the records in the order the ops began.
type Profile struct {
	Began   time.Time
	Records []Record
}

// ErrRunning and ErrNotRunning are the errors of Start while a profile
// runs and of Stop while none does.
var (
	ErrRunning    = errors.New("profile: a profile is running already")
	ErrNotRunning = errors.New("profile: no profile is running")
)

// EnvVar names the file a profile from the program's start is written to.
const EnvVar = "EAGERFLOW_PROFILE"

// recorder is the running profile: the eager hook.
type recorder struct {
	mu      sync.Mutex
	began   time.Time
	records []Record
	marks   []marks // per record, its device marks
	open    []bool  // per record, whether End is yet to come
}

type marks struct {
	timer      device.Timer
	begin, end device.Mark
	ok         bool
}

var (
	mu      sync.Mutex
	running *recorder
)

func init() {
	if os.Getenv(EnvVar) != "" {
		_ = Start()
	}
}

// Start begins recording every op; it fails with ErrRunning while a
// profile runs.
func Start() error {
	mu.Lock()
	defer mu.Unlock()
	if running != nil {
		return ErrRunning
	}
	running = &recorder{began: time.Now()}
	eager.SetProfileHook(running)
	return nil
}

// Stop ends the profile and returns it, once every timed device has done
// the work the profile saw; it fails with ErrNotRunning where none runs.
// A device's error reading its times is returned with the profile (whose
// records of that device are then untimed).
func Stop() (*Profile, error) {
	mu.Lock()
	r := running
	running = nil
	if r != nil {
		eager.SetProfileHook(nil)
	}
	mu.Unlock()
	if r == nil {
		return nil, ErrNotRunning
	}
	return r.finish()
}

// Begin records the start of an op (eager.ProfileHook).
func (r *recorder) Begin(c *eager.Call) int {
	rec := Record{Op: c.Op.Name, Inputs: describe(c.Inputs)}
	if c.Device != nil {
		rec.Device = c.Device.Name()
	}
	var m marks
	if t, ok := c.Device.(device.Timer); ok {
		if b, err := t.Mark(); err == nil {
			m = marks{timer: t, begin: b}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec.Start = time.Since(r.began)
	r.records = append(r.records, rec)
	r.marks = append(r.marks, m)
	r.open = append(r.open, true)
	return len(r.records) - 1
}

// End records the end of the op Begin numbered id.
func (r *recorder) End(id int) {
	now := time.Since(r.began)
	r.mu.Lock()
	m := r.marks[id]
	r.mu.Unlock()
	if m.timer != nil {
		if e, err := m.timer.Mark(); err == nil {
			m.end, m.ok = e, true
		} else {
			m.timer.Forget(m.begin)
			m = marks{}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[id].Host = now - r.records[id].Start
	r.marks[id] = m
	r.open[id] = false
}

// finish reads the devices' times and forgets their marks.
func (r *recorder) finish() (*Profile, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	first := map[device.Timer]device.Mark{}
	broken := map[device.Timer]bool{}
	for i, m := range r.marks {
		if r.open[i] || !m.ok || broken[m.timer] { // open: still running on another goroutine at Stop
			continue
		}
		f, seen := first[m.timer]
		if !seen {
			first[m.timer], f = m.begin, m.begin
		}
		start, err1 := m.timer.Between(f, m.begin)
		took, err2 := m.timer.Between(m.begin, m.end)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, err)
			broken[m.timer] = true
			continue
		}
		r.records[i].Timed, r.records[i].DeviceStart, r.records[i].DeviceTime = true, start, took
	}
	for i, m := range r.marks {
		if m.timer != nil {
			if first[m.timer] != m.begin {
				m.timer.Forget(m.begin)
			}
			if m.ok {
				m.timer.Forget(m.end)
			}
		}
		r.marks[i] = marks{}
	}
	for t, f := range first {
		t.Forget(f)
	}
	for i := range r.records {
		if !r.records[i].Timed {
			r.records[i].DeviceStart, r.records[i].DeviceTime = 0, 0
		}
	}
	return &Profile{Began: r.began, Records: r.records}, errors.Join(errs...)
}

// describe is the inputs' dtypes and shapes, "float32[2 3], int32[2]".
func describe(xs []*tensor.Tensor) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		if x == nil {
			b.WriteString("nil")
			continue
		}
		b.WriteString(x.DType().String())
		b.WriteString(x.Shape().String())
	}
	return b.String()
}

// WriteEnv stops the profile EAGERFLOW_PROFILE started and writes it to
// the file the variable names (the trace) and to FILE.txt (the table);
// it does nothing where the variable is unset or that profile was stopped
// already. nn.Fit calls it when it returns.
func WriteEnv() error {
	path := os.Getenv(EnvVar)
	if path == "" {
		return nil
	}
	p, err := Stop()
	if errors.Is(err, ErrNotRunning) {
		return nil
	}
	if p == nil {
		return err
	}
	return errors.Join(err, p.WriteTraceFile(path), atomicfile.WriteFile(path+".txt", []byte(p.Table())))
}
