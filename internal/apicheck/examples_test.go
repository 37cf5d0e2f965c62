package apicheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every package of the API has a runnable Example (one with an Output
// comment, which go test runs and checks), so that go doc shows each one
// at work (issue 31).
func TestEveryPackageHasARunnableExample(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{.Dir}}", root+"/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		// conformance is a harness for a backend's tests: its Example
		// shows the call, which needs a *testing.T.
		if len(f) != 3 || !listed(f[0], f[1]) || f[0] == Module+"/conformance" {
			continue
		}
		tests, _ := filepath.Glob(filepath.Join(f[2], "*_test.go"))
		found := false
		for _, p := range tests {
			b, _ := os.ReadFile(p)
			s := string(b)
			found = found || (strings.Contains(s, "\nfunc Example") && strings.Contains(s, "// Output:"))
		}
		if !found {
			t.Errorf("package %s has no runnable Example (a func Example... with an // Output: comment)", f[0])
		}
	}
}
