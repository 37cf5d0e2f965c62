package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eagerflow/eagerflow/internal/atomicfile"
)

// OpTotal is one op's records summed (Totals).
type OpTotal struct {
	Op, Device string
	Calls      int
	Host       time.Duration // summed over the calls
	Timed      int           // calls the device timed
	DeviceTime time.Duration // summed over the timed calls
}

// Totals sums the records per op and device, heaviest first: by device
// time where the device timed the op, else by host time.
func (p *Profile) Totals() []OpTotal {
	index := map[[2]string]int{}
	var out []OpTotal
	for _, r := range p.Records {
		key := [2]string{r.Op, r.Device}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, OpTotal{Op: r.Op, Device: r.Device})
		}
		t := &out[i]
		t.Calls++
		t.Host += r.Host
		if r.Timed {
			t.Timed++
			t.DeviceTime += r.DeviceTime
		}
	}
	weight := func(t OpTotal) time.Duration {
		if t.Timed > 0 {
			return t.DeviceTime
		}
		return t.Host
	}
	slices.SortStableFunc(out, func(a, b OpTotal) int { return int(weight(b) - weight(a)) })
	return out
}

// Table is Totals as text: an op a row, with its calls, host time (total,
// mean, share of all ops' host time) and device time where timed.
func (p *Profile) Table() string {
	totals := p.Totals()
	var host, dev time.Duration
	timed := false
	for _, t := range totals {
		host += t.Host
		dev += t.DeviceTime
		timed = timed || t.Timed > 0
	}
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	header := "op\tdevice\tcalls\thost total\thost mean\thost %\t"
	if timed {
		header += "device total\tdevice mean\tdevice %\t"
	}
	fmt.Fprintln(w, header)
	for _, t := range totals {
		fmt.Fprintf(w, "%s\t%s\t%d\t%v\t%v\t%.1f\t", t.Op, t.Device, t.Calls, round(t.Host), round(t.Host/time.Duration(t.Calls)), share(t.Host, host))
		if timed {
			if t.Timed > 0 {
				fmt.Fprintf(w, "%v\t%v\t%.1f\t", round(t.DeviceTime), round(t.DeviceTime/time.Duration(t.Timed)), share(t.DeviceTime, dev))
			} else {
				fmt.Fprint(w, "\t\t\t")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "all\t\t%d\t%v\t\t\t", len(p.Records), round(host))
	if timed {
		fmt.Fprintf(w, "%v\t\t\t", round(dev))
	}
	fmt.Fprintln(w)
	w.Flush()
	return b.String()
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	}
	return d
}

func share(d, all time.Duration) float64 {
	if all == 0 {
		return 0
	}
	return 100 * float64(d) / float64(all)
}

// traceEvent is one event of Chrome's trace format (its "complete"
// events, ph "X"; times in microseconds).
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteTrace writes the profile in Chrome's trace format: process 1 is
// the host, an op an event (its inputs in args); each timed device is a
// process of its own whose events are its ops' work, laid on the host's
// time from the first op the device timed (the two clocks are not
// otherwise joined).
func (p *Profile) WriteTrace(w io.Writer) error {
	if w == nil {
		return errors.New("profile: WriteTrace to a nil writer")
	}
	events := []any{map[string]any{"name": "process_name", "ph": "M", "pid": 1, "args": map[string]string{"name": "host"}}}
	devices := map[string]int{}
	origin := map[string]time.Duration{}
	for _, r := range p.Records {
		events = append(events, traceEvent{Name: r.Op, Cat: "op", Ph: "X", Ts: us(r.Start), Dur: us(r.Host), Pid: 1, Tid: 1,
			Args: map[string]any{"device": r.Device, "inputs": r.Inputs}})
		if !r.Timed {
			continue
		}
		pid, ok := devices[r.Device]
		if !ok {
			pid = 2 + len(devices)
			devices[r.Device] = pid
			origin[r.Device] = r.Start - r.DeviceStart
			events = append(events, map[string]any{"name": "process_name", "ph": "M", "pid": pid, "args": map[string]string{"name": r.Device}})
		}
		events = append(events, traceEvent{Name: r.Op, Cat: "device", Ph: "X", Ts: us(origin[r.Device] + r.DeviceStart), Dur: us(r.DeviceTime),
			Pid: pid, Tid: 1, Args: map[string]any{"inputs": r.Inputs}})
	}
	enc := json.NewEncoder(w)
	return enc.Encode(map[string]any{"traceEvents": events, "displayTimeUnit": "ns"})
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// WriteTraceFile writes the trace to path, whole or not at all.
func (p *Profile) WriteTraceFile(path string) error {
	var b bytes.Buffer
	if err := p.WriteTrace(&b); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b.Bytes()); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	return nil
}

// String is the table.
func (p *Profile) String() string { return strings.TrimRight(p.Table(), "\n") }
