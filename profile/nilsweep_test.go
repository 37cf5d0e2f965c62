package profile_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/profile"
)

// Every exported function and the Profile's methods, given nil and zero
// arguments, fail cleanly.
func TestNilArgumentsAreReported(t *testing.T) {
	empty := &profile.Profile{}
	fns := []nilsweep.Func{
		{Name: "Profile.WriteTrace", Fn: empty.WriteTrace},
		{Name: "Profile.WriteTraceFile", Fn: empty.WriteTraceFile},
	}
	noArg := "no argument"
	nilsweep.Covered(t, ".", fns, map[string]string{"Start": noArg, "Stop": noArg, "WriteEnv": noArg,
		"Profile.Table": noArg, "Profile.Totals": noArg, "Profile.String": noArg}, "Profile")
	nilsweep.Sweep(t, fns)
}
