package eager

import (
	"sync"

	"github.com/eagerflow/eagerflow/device"
)

// Fusion of elementwise chains on devices whose backend compiles code at
// run time (a GPU): where no host loops are registered for a kind
// (RegisterElementwise), a graph optimiser asks the kind's Fuser for one
// kernel that runs a whole chain of float32 elementwise ops in one pass.

// FuseOperand is where one operand of a fused step comes from: the chain
// (the previous step's value), or input Input of the fused node, either
// full (the output's shape) or a single value broadcast to it.
type FuseOperand struct {
	Chain  bool
	Input  int
	Single bool
}

// FuseStep is one op of a fused chain: the op's name and its operands (one
// or two).
type FuseStep struct {
	Op   string
	Args []FuseOperand
}

// Fuser compiles chains of float32 elementwise ops for devices of one kind.
type Fuser interface {
	// CanFuse reports whether the op named op, with that many inputs, can
	// be a step of a chain.
	CanFuse(op string, inputs int) bool
	// Fuse returns a kernel computing the chain steps (a float32 output of
	// the full inputs' shape), or an error where it cannot.
	Fuse(steps []FuseStep) (Kernel, error)
}

var fusers struct {
	sync.RWMutex
	byKind map[device.Kind]Fuser
}

// RegisterFuser makes f the Fuser of devices of kind, replacing any other.
func RegisterFuser(kind device.Kind, f Fuser) {
	fusers.Lock()
	defer fusers.Unlock()
	if fusers.byKind == nil {
		fusers.byKind = map[device.Kind]Fuser{}
	}
	fusers.byKind[kind] = f
}

// FuserFor returns the Fuser of devices of kind, or nil.
func FuserFor(kind device.Kind) Fuser {
	fusers.RLock()
	defer fusers.RUnlock()
	return fusers.byKind[kind]
}
