package cuda

import (
	"fmt"
	"strings"
	"sync"
)

// The embedded modules (ptx/<family>.ptx) are loaded a kernel at a time:
// the driver compiles a module's PTX whole when it is loaded, and a
// family's module holds hundreds of kernels (binary.ptx, 54 thousand
// lines, took 4.9 s on an H200 for the first eager Add of a process,
// 2026-11-28). A kernel's module is its family's header (.version,
// .target, .address_size and any .extern declarations) and its own
// entry, so a program compiles only the kernels it runs.

// kernelTexts indexes one family's PTX: the header and each entry's text.
type kernelTexts struct {
	header  string
	entries map[string]string
}

// families caches each embedded family's index, made on its first use.
var families sync.Map // family -> *kernelTexts (a module that fails to split is not kept)

// kernelModule returns the PTX of a module holding kernel name of
// family alone.
func kernelModule(family, name string) (string, error) {
	v, ok := families.Load(family)
	if !ok {
		src, err := modules.ReadFile("ptx/" + family + ".ptx")
		if err != nil {
			return "", fmt.Errorf("cuda: no kernel module %q: %v", family, err)
		}
		t, err := splitModule(string(src))
		if err != nil {
			return "", fmt.Errorf("cuda: module %q: %v", family, err)
		}
		v, _ = families.LoadOrStore(family, t)
	}
	t := v.(*kernelTexts)
	e, ok := t.entries[name]
	if !ok {
		return "", fmt.Errorf("cuda: module %q has no kernel %s", family, name)
	}
	return t.header + e, nil
}

// splitModule indexes a module as ptxgen writes them: a header of
// top-level directives, then entries, each from its ".visible .entry"
// line to the "}" that closes it at the start of a line.
func splitModule(src string) (*kernelTexts, error) {
	const entry = ".visible .entry "
	first := strings.Index(src, entry)
	if first < 0 {
		return nil, fmt.Errorf("no entries")
	}
	t := &kernelTexts{header: src[:first], entries: map[string]string{}}
	for rest := src[first:]; rest != ""; {
		end := strings.Index(rest, "\n}\n")
		if !strings.HasPrefix(rest, entry) || end < 0 {
			return nil, fmt.Errorf("an entry does not start or end as ptxgen writes them: %.60q", rest)
		}
		text := rest[:end+3]
		name, _, ok := strings.Cut(text[len(entry):], "(")
		if !ok {
			return nil, fmt.Errorf("an entry without parameters: %.60q", text)
		}
		t.entries[strings.TrimSpace(name)] = text
		rest = strings.TrimLeft(rest[end+3:], "\n")
	}
	return t, nil
}
