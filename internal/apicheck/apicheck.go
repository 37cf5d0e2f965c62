// Package apicheck lists the exported API of eagerflow's packages, one
// line per name (as Go's own cmd/api does), so that a release can record
// it (api/vX.Y.Z.txt) and a later change can be checked against it: a
// line of the release that is gone (a name removed, a signature or a
// type changed) is an incompatible change, which CHANGELOG.md must list
// under "Unreleased". Its test is part of `go test ./...`.
package apicheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Module is the module path whose packages are listed.
const Module = "github.com/eagerflow/eagerflow"

// listed reports whether the package at import path is part of the API:
// a library package (not a command, an example, a benchmark or internal).
func listed(path string, name string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, Module), "/")
	for _, part := range strings.Split(rel, "/") {
		if part == "internal" || part == "cmd" || part == "testdata" {
			return false
		}
	}
	top := strings.SplitN(rel, "/", 2)[0]
	return name != "main" && top != "examples" && top != "bench"
}

// API returns the API lines of the module's listed packages, sorted. dir
// is the module's root; the packages are compiled (go list -export) and
// read from their export data.
func API(dir string) ([]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Name,Export,Module,Dir,GoFiles", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("apicheck: go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var pkgs []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Name, Export, Dir string
			GoFiles                       []string
			Module                        *struct{ Path string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == Module && listed(p.ImportPath, p.Name) {
			pkgs = append(pkgs, p.ImportPath)
			// Read by go list, not by this process: stat them so that a
			// cached test result is dropped when a source file changes.
			for _, f := range p.GoFiles {
				os.Stat(filepath.Join(p.Dir, f))
			}
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("apicheck: no export data for %s", path)
		}
		return os.Open(f)
	})
	var lines []string
	for _, path := range pkgs {
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, err
		}
		lines = append(lines, packageAPI(pkg)...)
	}
	sort.Strings(lines)
	return lines, nil
}

// packageAPI is one package's lines.
func packageAPI(pkg *types.Package) []string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg.Path(), Module), "/")
	if rel == "" {
		rel = "."
	}
	prefix := "pkg " + rel + ", "
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	str := func(t types.Type) string { return types.TypeString(t, qual) }
	var out []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			out = append(out, prefix+"const "+name+" "+str(o.Type()))
		case *types.Var:
			out = append(out, prefix+"var "+name+" "+str(o.Type()))
		case *types.Func:
			out = append(out, prefix+"func "+name+signature(o.Type().(*types.Signature), str))
		case *types.TypeName:
			out = append(out, typeAPI(prefix, o, str)...)
		}
	}
	return out
}

// typeAPI lists a type: its kind (an interface whole, on one line, since
// adding a method breaks its implementations), its exported fields one
// per line, and its exported methods. An alias of a named type is listed
// as that type under the alias' name (a type that moves and leaves an
// alias behind changes nothing for its users); an alias of anything else
// by what it names.
func typeAPI(prefix string, o *types.TypeName, str func(types.Type) string) []string {
	name := o.Name()
	named, _ := types.Unalias(o.Type()).(*types.Named)
	if o.IsAlias() && named == nil {
		return []string{prefix + "type " + name + " = " + str(types.Unalias(o.Type()))}
	}
	tparams := ""
	if named != nil && named.TypeParams().Len() > 0 {
		var ps []string
		for i := range named.TypeParams().Len() {
			p := named.TypeParams().At(i)
			ps = append(ps, p.Obj().Name()+" "+str(p.Constraint()))
		}
		tparams = "[" + strings.Join(ps, ", ") + "]"
	}
	var out []string
	switch u := o.Type().Underlying().(type) {
	case *types.Struct:
		out = append(out, prefix+"type "+name+tparams+" struct")
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() {
				out = append(out, prefix+"type "+name+" struct, "+f.Name()+" "+str(f.Type()))
			}
		}
	case *types.Interface:
		out = append(out, prefix+"type "+name+tparams+" "+str(u))
	default:
		out = append(out, prefix+"type "+name+tparams+" "+str(u))
	}
	if named == nil {
		return out
	}
	for i := range named.NumMethods() {
		m := named.Method(i)
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := name
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			recv = "*" + name
		}
		out = append(out, prefix+"method ("+recv+") "+m.Name()+signature(sig, str))
	}
	return out
}

// signature prints sig without parameter names (renaming a parameter is
// no change to callers): "[T tensor.Float](int, ...T) (T, error)".
func signature(sig *types.Signature, str func(types.Type) string) string {
	var b strings.Builder
	if tp := sig.TypeParams(); tp.Len() > 0 {
		var ps []string
		for i := range tp.Len() {
			ps = append(ps, tp.At(i).Obj().Name()+" "+str(tp.At(i).Constraint()))
		}
		b.WriteString("[" + strings.Join(ps, ", ") + "]")
	}
	typ := func(t types.Type) string {
		if s, ok := t.(*types.Signature); ok { // a function argument: its names go too
			return "func" + signature(s, str)
		}
		return str(t)
	}
	list := func(t *types.Tuple, variadic bool) []string {
		out := make([]string, t.Len())
		for i := range t.Len() {
			out[i] = typ(t.At(i).Type())
			if variadic && i == t.Len()-1 {
				out[i] = "..." + typ(t.At(i).Type().(*types.Slice).Elem())
			}
		}
		return out
	}
	b.WriteString("(" + strings.Join(list(sig.Params(), sig.Variadic()), ", ") + ")")
	switch res := list(sig.Results(), false); len(res) {
	case 0:
	case 1:
		b.WriteString(" " + res[0])
	default:
		b.WriteString(" (" + strings.Join(res, ", ") + ")")
	}
	return b.String()
}

// Key names a line's subject as CHANGELOG.md names it: "control.NewFunction",
// "tensor.Tensor.SetFlags", "nn.FitConfig.Comm".
func Key(line string) string {
	pkg, rest, _ := strings.Cut(strings.TrimPrefix(line, "pkg "), ", ")
	short := pkg[strings.LastIndex(pkg, "/")+1:]
	if pkg == "." {
		short = "eagerflow"
	}
	kind, rest, _ := strings.Cut(rest, " ")
	switch kind {
	case "method": // (*T) M(...)
		recv, m, _ := strings.Cut(rest, ") ")
		return short + "." + strings.TrimPrefix(strings.TrimPrefix(recv, "("), "*") + "." + identAt(m)
	case "type":
		name := identAt(rest)
		if _, field, ok := strings.Cut(rest, " struct, "); ok {
			return short + "." + name + "." + identAt(field)
		}
		return short + "." + name
	}
	return short + "." + identAt(rest)
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

func identAt(s string) string { return ident.FindString(s) }

// Removed returns the lines of old that current lacks: the incompatible
// changes since old.
func Removed(old, current []string) []string {
	var out []string
	for _, l := range old {
		if _, found := slices.BinarySearch(current, l); !found {
			out = append(out, l)
		}
	}
	return out
}

// ReadLines reads an API file (blank lines and "#" comments skipped).
func ReadLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out, sc.Err()
}

// Latest returns the API file of the latest release in dir (api/), by
// semantic version, and its version; "" when there is none.
func Latest(dir string) (path, version string) {
	files, _ := filepath.Glob(filepath.Join(dir, "v*.txt"))
	best := [3]int{-1}
	for _, f := range files {
		var v [3]int
		if n, _ := fmt.Sscanf(filepath.Base(f), "v%d.%d.%d.txt", &v[0], &v[1], &v[2]); n != 3 {
			continue
		}
		if slices.Compare(v[:], best[:]) > 0 {
			best, path = v, f
		}
	}
	if path == "" {
		return "", ""
	}
	return path, fmt.Sprintf("v%d.%d.%d", best[0], best[1], best[2])
}

// Unreleased returns the text of CHANGELOG.md's "## Unreleased" section.
func Unreleased(changelog string) string {
	_, after, ok := strings.Cut(changelog, "\n## Unreleased")
	if !ok {
		return ""
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	return after
}
