package apicheck

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var write = flag.String("apicheck.write", "", "write the current API as api/`VERSION`.txt (a release's record) instead of checking")

const root = "../.."

// The API has no incompatible change since the latest release that
// CHANGELOG.md's "Unreleased" section does not list (each removed or
// changed name in backquotes: `control.NewFunction`). A name that moves
// keeps a deprecated forwarder instead, which is no change at all.
func TestAPICompatibility(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every package's export data")
	}
	current, err := API(root)
	if err != nil {
		t.Fatal(err)
	}
	if *write != "" {
		path := filepath.Join(root, "api", *write+".txt")
		text := fmt.Sprintf("# eagerflow %s: the exported API, as internal/apicheck lists it\n%s\n", *write, strings.Join(current, "\n"))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d lines)", path, len(current))
		return
	}
	path, version := Latest(filepath.Join(root, "api"))
	if path == "" {
		t.Fatal("no release's API in api/ (api/vX.Y.Z.txt): scripts/release writes one")
	}
	old, err := ReadLines(path)
	if err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	unreleased := Unreleased(string(changelog))
	var unlisted []string
	for _, l := range Removed(old, current) {
		if k := Key(l); !strings.Contains(unreleased, "`"+k+"`") {
			unlisted = append(unlisted, fmt.Sprintf("%s\n\t(list `%s` in CHANGELOG.md under \"## Unreleased\", or keep the name with a Deprecated: forwarder)", l, k))
		}
	}
	if len(unlisted) > 0 {
		t.Errorf("%d incompatible changes since %s that CHANGELOG.md does not list:\n%s", len(unlisted), version, strings.Join(unlisted, "\n"))
	}
}

func TestKey(t *testing.T) {
	for line, want := range map[string]string{
		"pkg control, func NewFunction(fn func(args []*tensor.Tensor) []*tensor.Tensor) *trace.Function": "control.NewFunction",
		"pkg tensor, method (*Tensor) SetFlags(uint32)":                                                  "tensor.Tensor.SetFlags",
		"pkg nn, type FitConfig struct, Comm collective.Comm":                                            "nn.FitConfig.Comm",
		"pkg nn, type FitConfig struct":                                                                  "nn.FitConfig",
		"pkg control/graph, const OpNode NodeKind":                                                       "graph.OpNode",
		"pkg ., var X int": "eagerflow.X",
	} {
		if got := Key(line); got != want {
			t.Errorf("Key(%q) = %q, want %q", line, got, want)
		}
	}
	if got := Unreleased("# Changes\n\n## Unreleased\n- `a.B` gone\n\n## v0.1.0\n- `c.D`\n"); !strings.Contains(got, "a.B") || strings.Contains(got, "c.D") {
		t.Errorf("Unreleased: %q", got)
	}
}
