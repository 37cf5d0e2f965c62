// Package nilsweep is a test generator for bad input: it calls a package's
// exported functions with nil (and zero) arguments, one argument at a time
// beside valid ones, and fails a call that crashes with a runtime error (a
// nil dereference, an index out of range) instead of reporting what was
// wrong. A function that returns an error must return one; one that does
// not must panic with a *tensor.Error (the library's convention for
// programmer errors, which tensor.Catch recovers).
//
// Coverage grows by itself: Exported lists a package's exported functions
// from its source, and a package's sweep test fails when one is neither
// swept nor skipped with a reason.
package nilsweep

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// Func is one function to sweep: its name, its value, and optionally
// valid arguments (one per parameter; for a variadic function, the
// variadic part as a slice). With valid arguments, each argument that can
// be nil is replaced by nil in turn (and each nil-able element of a
// variadic slice, and the first element of any other slice of nil-able
// elements); without, every argument is its zero value, and a
// variadic one is a single zero element.
type Func struct {
	Name  string
	Fn    any
	Valid []any
	// Registration marks a function that backends call from init
	// (registering a device, an op, a kernel): it may panic with a plain
	// message naming what was nil, as database/sql.Register does, and
	// must leave the registry usable.
	Registration bool
}

// Sweep runs every call that fns and their arguments give. A call that
// leaves a file in the working directory (a path made of a zero string)
// fails too.
func Sweep(t *testing.T, fns []Func) {
	t.Helper()
	before := entries(t)
	defer func() {
		for name := range entries(t) {
			if !before[name] {
				t.Errorf("the sweep left %q in the working directory", name)
				os.Remove(name)
			}
		}
	}()
	for _, f := range fns {
		ft := reflect.TypeOf(f.Fn)
		if ft == nil || ft.Kind() != reflect.Func {
			t.Fatalf("%s: not a function", f.Name)
		}
		for _, args := range calls(t, f) {
			res, msg := call(reflect.ValueOf(f.Fn), args, f.Registration)
			if msg != "" {
				t.Errorf("%s(%s): %s", f.Name, describe(args), msg)
				continue
			}
			// A function it made (a train step, a schedule) is called in
			// turn with zero arguments: the nil it was given must be
			// reported there if not before.
			for k, r := range res {
				if r.Kind() != reflect.Func || r.IsNil() {
					continue
				}
				zargs := calls(t, Func{Name: f.Name, Fn: r.Interface()})[0]
				if _, msg := call(r, zargs, false); msg != "" {
					t.Errorf("result %d of %s(%s), called with (%s): %s", k, f.Name, describe(args), describe(zargs), msg)
				}
			}
		}
	}
}

// entries are the names in the working directory.
func entries(t *testing.T) map[string]bool {
	t.Helper()
	list, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range list {
		names[e.Name()] = true
	}
	return names
}

// calls returns the argument lists to try for f.
func calls(t *testing.T, f Func) [][]reflect.Value {
	ft := reflect.TypeOf(f.Fn)
	n := ft.NumIn()
	if f.Valid == nil {
		args := make([]reflect.Value, n)
		for i := range n {
			args[i] = zero(ft.In(i))
			if ft.IsVariadic() && i == n-1 {
				args[i] = reflect.MakeSlice(ft.In(i), 1, 1) // one zero element
			}
		}
		return [][]reflect.Value{args}
	}
	if len(f.Valid) != n {
		t.Fatalf("%s: %d valid arguments for %d parameters", f.Name, len(f.Valid), n)
	}
	valid := make([]reflect.Value, n)
	for i, v := range f.Valid {
		valid[i] = reflect.New(ft.In(i)).Elem()
		if v != nil {
			valid[i].Set(reflect.ValueOf(v))
		}
	}
	var out [][]reflect.Value
	for i := range n {
		if ft.IsVariadic() && i == n-1 {
			s := valid[i]
			for k := range s.Len() {
				if nilable(s.Index(k).Kind()) {
					c := slices.Clone(valid)
					ns := reflect.MakeSlice(s.Type(), s.Len(), s.Len())
					reflect.Copy(ns, s)
					ns.Index(k).SetZero()
					c[i] = ns
					out = append(out, c)
				}
			}
			continue
		}
		if nilable(ft.In(i).Kind()) && !ft.In(i).Implements(contextType) {
			c := slices.Clone(valid)
			c[i] = reflect.Zero(ft.In(i))
			out = append(out, c)
		}
		if s := valid[i]; s.Kind() == reflect.Slice && s.Len() > 0 && nilable(s.Type().Elem().Kind()) {
			// A list holding a nil: its first element.
			c := slices.Clone(valid)
			ns := reflect.MakeSlice(s.Type(), s.Len(), s.Len())
			reflect.Copy(ns, s)
			ns.Index(0).SetZero()
			c[i] = ns
			out = append(out, c)
		}
	}
	return out
}

var (
	contextType = reflect.TypeFor[context.Context]()
	errorType   = reflect.TypeFor[error]()
)

// zero is t's zero value, but a live context for a context.Context (a nil
// one is a misuse the standard library itself panics on).
func zero(t reflect.Type) reflect.Value {
	if t == contextType {
		return reflect.ValueOf(context.Background())
	}
	return reflect.Zero(t)
}

func nilable(k reflect.Kind) bool {
	switch k {
	case reflect.Pointer, reflect.Func, reflect.Interface, reflect.Map, reflect.Chan, reflect.Slice:
		return true
	}
	return false
}

// call calls fn with args and says what was wrong with how it failed, or
// "" when it failed well (or did not fail).
func call(fn reflect.Value, args []reflect.Value, plainOK bool) (res []reflect.Value, msg string) {
	ft := fn.Type()
	returnsErr := ft.NumOut() > 0 && ft.Out(ft.NumOut()-1) == errorType
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		var te *tensor.Error
		e, isErr := r.(error)
		switch {
		case isErr && errors.As(e, &te) && !errors.Is(e, tensor.ErrInternal):
			if returnsErr {
				msg = fmt.Sprintf("panicked with %v; it returns an error and should return this one", r)
			}
		case isErr && isRuntime(e):
			msg = fmt.Sprintf("crashed: %v", r)
		case plainOK:
		default:
			msg = fmt.Sprintf("panicked with %T %v, not a *tensor.Error", r, r)
		}
	}()
	if ft.IsVariadic() {
		return fn.CallSlice(args), ""
	}
	return fn.Call(args), ""
}

func isRuntime(e error) bool {
	var re runtime.Error
	return errors.As(e, &re)
}

func describe(args []reflect.Value) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch {
		case nilable(a.Kind()) && a.IsNil():
			parts[i] = "nil"
		case a.Kind() == reflect.Slice:
			elems := make([]string, a.Len())
			for k := range a.Len() {
				elems[k] = describe([]reflect.Value{a.Index(k)})
			}
			parts[i] = "[" + strings.Join(elems, " ") + "]"
		default:
			parts[i] = a.Type().String()
		}
	}
	return strings.Join(parts, ", ")
}

// Exported returns the names of the exported functions declared in the
// non-test Go files of the package in dir, and of the exported methods of
// the named types as "Type.Method".
func Exported(t *testing.T, dir string, types ...string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() || fd.Type.TypeParams != nil {
				continue
			}
			if fd.Recv == nil {
				names = append(names, fd.Name.Name)
				continue
			}
			recv := fd.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if id, ok := recv.(*ast.Ident); ok && slices.Contains(types, id.Name) {
				names = append(names, id.Name+"."+fd.Name.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Covered fails t for each exported function of the package in dir, and
// each exported method of the named types, that fns does not sweep and
// skip does not name (with its reason). A Func's name is the function's,
// or "Type.Method", optionally followed by a space and what it varies.
func Covered(t *testing.T, dir string, fns []Func, skip map[string]string, types ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, f := range fns {
		have[strings.SplitN(f.Name, " ", 2)[0]] = true
	}
	for _, name := range Exported(t, dir, types...) {
		if !have[name] && skip[name] == "" {
			t.Errorf("%s.%s is not swept with nil arguments: add it to the sweep, or to its skips with a reason", dir, name)
		}
	}
}
