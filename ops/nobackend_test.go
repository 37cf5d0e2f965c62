package ops_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program of tensor and ops alone links no backend; its first op tells
// it what to import.
func TestAProgramWithoutABackendIsToldWhichToImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	out, err := exec.Command("go", "run", "./testdata/nobackend").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./testdata/nobackend: %v\n%s", err, out)
	}
	want := `no CPU backend is linked into this program: import _ "github.com/eagerflow/eagerflow/backend/cpu"`
	if !strings.Contains(string(out), want) {
		t.Errorf("the program printed %q, want it to say %q", out, want)
	}
}
