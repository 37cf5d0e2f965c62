// Package callsite finds where a call into eagerflow came from: the first
// stack frame outside the library, as its typed errors name it. It imports
// nothing of the module, so that package tensor (below internal in the
// layering) may import it.
package callsite

import (
	"fmt"
	"runtime"
	"strings"
)

const modulePrefix = "github.com/eagerflow/eagerflow/"

// Caller returns file:line of the first stack frame outside the eagerflow
// library (test files and examples count as outside), "" when there is
// none.
func Caller() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		inLib := strings.HasPrefix(f.Function, modulePrefix) && !strings.HasSuffix(f.File, "_test.go") &&
			!strings.Contains(f.Function, "/examples/")
		if !inLib && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s:%d", shortFile(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

func shortFile(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		if j := strings.LastIndexByte(p[:i], '/'); j >= 0 {
			return p[j+1:]
		}
	}
	return p
}
