package cuda

import (
	"fmt"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
)

// Step takes an optimizer's step over ts in place (device.Stepper): one
// launch per kernels.OptimSlots tensors (a kernel of 8 slots where they
// fit), a block per chunk of kernels.OptimChunk elements, each rule's
// formula backend/cpu's in-place kernel's to the bit.
func (d *Device) Step(elem int, ts []device.StepTensor, s device.StepSettings) error {
	return d.step(elem, ts, s, nil)
}

// StepAt is Step whose kernels read their constants from consts when
// they run (device.StepRecorder): the _at twins of Step's.
func (d *Device) StepAt(elem int, ts []device.StepTensor, s device.StepSettings, consts device.Buffer) error {
	cb, err := bufOf(consts, d, "constants")
	if err != nil {
		return err
	}
	if cb.size < device.StepConstBytes {
		return fmt.Errorf("cuda: a step's constants in a %d-byte buffer, below %d", cb.size, device.StepConstBytes)
	}
	return d.step(elem, ts, s, &cb.ptr)
}

// SetStepConstants queues optim_consts, writing s's constants into
// consts as StepAt's kernels read them (device.StepRecorder).
func (d *Device) SetStepConstants(elem int, s device.StepSettings, consts device.Buffer) error {
	if err := checkStepElem(elem); err != nil {
		return err
	}
	_, vals, _, err := stepRule(s)
	if err != nil {
		return err
	}
	cb, err := bufOf(consts, d, "constants")
	if err != nil {
		return err
	}
	if cb.size < device.StepConstBytes {
		return fmt.Errorf("cuda: a step's constants in a %d-byte buffer, below %d", cb.size, device.StepConstBytes)
	}
	args := newArgs().Ptr(cb.ptr)
	for i := range kernels.OptimConstWords {
		var w uint64
		if i < len(vals) {
			w = math.Float64bits(vals[i])
			if elem == 4 {
				w = uint64(math.Float32bits(float32(vals[i])))
			}
		}
		args.U64(w)
	}
	return d.launchBlocks("optim", "optim_consts", 1, 32, args)
}

func checkStepElem(elem int) error {
	if elem != 4 && elem != 8 {
		return fmt.Errorf("cuda: an optimizer step of %d-byte elements: float32 or float64 only", elem)
	}
	return nil
}

// step is Step, or StepAt where at is the constants' address.
func (d *Device) step(elem int, ts []device.StepTensor, s device.StepSettings, at *cu.Ptr) error {
	if err := checkStepElem(elem); err != nil {
		return err
	}
	rule, consts, slotNames, err := stepRule(s)
	if err != nil {
		return err
	}
	// A table a format of gradients (the value's dtype, or a half type
	// with the half copy's address after the gradient's).
	tabs := [3][]kernels.OptimTensor{make([]kernels.OptimTensor, 0, len(ts))}
	// Every tensor's addresses, rule.Tensors a slot and the copy's; and
	// the name of a slot's k-th buffer, for errors.
	per := rule.Tensors + 1
	all := make([]uint64, per*len(ts))
	name := func(k int) string {
		return append(append([]string{"value"}, slotNames...), "gradient", "half copy")[k]
	}
	halves := 0
	for i, t := range ts {
		if t.Half != device.StepNoHalf {
			halves++
		}
		if t.Half > device.StepFloat16 || t.Half != device.StepNoHalf && elem != 4 {
			return fmt.Errorf("cuda: %s step, tensor %d: half gradients (format %d) of %d-byte values: float32's bfloat16 or float16 only", rule.Name, i, t.Half, elem)
		}
		var bufs [5]device.Buffer // value, the rule's slots, gradient, half copy
		bufs[0] = t.W
		copy(bufs[1:], t.Slots[:len(slotNames)])
		bufs[rule.Tensors-1] = t.G
		bufs[rule.Tensors] = t.Copy
		ptrs := all[i*per : (i+1)*per]
		for k, b := range bufs[:per] {
			if k == rule.Tensors && (t.Half == device.StepNoHalf || b == nil) {
				continue // no copy: address 0
			}
			gb, ok := b.(*buffer)
			if !ok || gb.dev != d {
				_, err := bufOf(b, d, name(k))
				return fmt.Errorf("cuda: %s step, tensor %d: %w", rule.Name, i, err)
			}
			size := elem
			if t.Half != device.StepNoHalf && k >= rule.Tensors-1 {
				size = 2
			}
			if gb.size < t.N*size {
				return fmt.Errorf("cuda: %s step, tensor %d: a %d-byte buffer (the %s) for %d elements", rule.Name, i, gb.size, name(k), t.N)
			}
			ptrs[k] = uint64(gb.ptr)
		}
		if t.N > 0 {
			tabs[t.Half] = append(tabs[t.Half], kernels.OptimTensor{Ptrs: ptrs, N: t.N})
		}
	}
	if at != nil && halves > 0 {
		return fmt.Errorf("cuda: %s step: a recorded step takes no half gradients", rule.Name)
	}
	var factor cu.Ptr // 0: none
	if s.GradFactor != nil {
		fb, err := bufOf(s.GradFactor, d, "gradient factor")
		if err != nil {
			return fmt.Errorf("cuda: %s step: %w", rule.Name, err)
		}
		if fb.size < elem {
			return fmt.Errorf("cuda: %s step: the gradient factor in a %d-byte buffer, below a %d-byte element", rule.Name, fb.size, elem)
		}
		factor = fb.ptr
	}
	for h, tab := range tabs {
		half := []kernels.DType{"", kernels.BF16, kernels.F16}[h]
		if half == "" {
			for i := range tab {
				tab[i].Ptrs = tab[i].Ptrs[:rule.Tensors]
			}
		}
		err := eachTable(tab, func(slots int, table []byte, blocks, _ int) error {
			name := kernels.OptimName(rule, slots, map[int]kernels.DType{4: kernels.F32, 8: kernels.F64}[elem], at != nil, half)
			args := newArgs().Bytes(table, 8)
			switch {
			case at != nil:
				args.Ptr(*at)
			case elem == 4:
				for _, v := range consts {
					args.F32(float32(v))
				}
			default:
				for _, v := range consts {
					args.F64(v)
				}
			}
			args.Ptr(factor)
			return d.launchBlocks("optim", name, blocks, blockSize, args)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachTable calls launch for tab's tensors in groups of at most
// kernels.OptimSlots: the smallest slot count that holds the group, its
// table (kernels.OptimTable), the blocks it needs and the blocks of the
// groups before it.
func eachTable(tab []kernels.OptimTensor, launch func(slots int, table []byte, blocks, before int) error) error {
	before := 0
	for len(tab) > 0 {
		part := tab[:min(len(tab), kernels.OptimSlots)]
		tab = tab[len(part):]
		slots := kernels.OptimSlotCounts[slices.IndexFunc(kernels.OptimSlotCounts, func(n int) bool { return n >= len(part) })]
		table, blocks := kernels.OptimTable(part)
		if err := launch(slots, table, blocks, before); err != nil {
			return err
		}
		before += blocks
	}
	return nil
}

// stepRule returns the kernels of s's rule, their constants (rounded to
// the dtype by the caller, as backend/cpu's kernels round them) and the
// names of the slots each tensor has.
func stepRule(s device.StepSettings) (kernels.OptimRule, []float64, []string, error) {
	gs := s.GradScale
	if gs == 0 {
		gs = 1
	}
	switch s.Rule {
	case device.StepAdam:
		return kernels.OptimRules["adam_multi"], []float64{s.Beta1, 1 - s.Beta1, s.Beta2, 1 - s.Beta2, 1 / s.C1, 1 / s.C2, s.Eps, s.LR, s.WeightDecay, gs},
			[]string{"first moment", "second moment"}, nil
	case device.StepMomentum:
		name := "momentum_multi"
		if s.Nesterov {
			name = "nesterov_multi"
		}
		return kernels.OptimRules[name], []float64{s.Momentum, s.LR, gs}, []string{"velocity"}, nil
	case device.StepRMSProp:
		if s.Momentum > 0 {
			return kernels.OptimRules["rmsprop_mom_multi"], []float64{s.Rho, 1 - s.Rho, s.Eps, s.LR, s.Momentum, gs}, []string{"mean square", "momentum"}, nil
		}
		return kernels.OptimRules["rmsprop_multi"], []float64{s.Rho, 1 - s.Rho, s.Eps, s.LR, gs}, []string{"mean square"}, nil
	}
	return kernels.OptimRule{}, nil, nil, fmt.Errorf("cuda: an optimizer step by rule %d, which the device does not take", s.Rule)
}

var _ device.StepRecorder = (*Device)(nil)
