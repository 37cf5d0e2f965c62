package emu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The PTX the emulator reads: a module of .visible .entry kernels with
// typed scalar and byte-array parameters, .reg and .shared declarations,
// labels, and instructions with an optional predicate guard. The parser
// accepts the text as the backend's generator writes it (and as people
// write it by hand); anything else is an error naming the line.

// module is a parsed PTX module.
type module struct {
	version, target string
	kernels         map[string]*kernel
}

// param is one kernel parameter: a scalar of size bytes, or a byte array
// (array set) of size bytes.
type param struct {
	name  string
	typ   string // u32, s32, u64, s64, f32, f64, b8
	size  int
	array bool
	align int
}

// kernel is one .entry: its parameters, registers, shared variables and
// statements.
type kernel struct {
	name   string
	params []param
	regs   map[string]regInfo // by full name, %r3
	nregs  int
	shared map[string]sharedVar
	shSize int
	// maxThreads is the .maxntid directive's threads a block, 0 where
	// the kernel has none.
	maxThreads int
	// dynBase is where the module's dynamic shared array starts (after
	// the static variables), -1 where the module declares none.
	dynBase int
	labels  map[string]int // label -> statement index
	stmts   []stmt
	// locals are the .param variables of the body (a call's arguments),
	// held in registers of the same names; externs the functions the
	// module declared.
	locals  map[string]bool
	externs map[string]bool
}

type regInfo struct {
	index int
	typ   string // pred, b32, b64, f32, f64 (u/s collapse to b)
	bits  int    // the declared width: 16 for a .b16 register held as b32
}

type sharedVar struct{ offset, size int }

// dynamicShared is a module's .extern .shared array: dynamic shared
// memory, sized by each launch (cuLaunchKernel's sharedMemBytes), which
// a kernel finds after its static shared variables, aligned.
type dynamicShared struct {
	name  string
	align int
}

// stmt is one instruction as written.
type stmt struct {
	line     int
	text     string
	guard    string // predicate register, or ""
	negGuard bool
	op       string   // opcode with modifiers, "ld.global.f32"
	args     []string // operands as written
}

// parseModule parses PTX text.
func parseModule(src string) (*module, error) {
	m := &module{kernels: map[string]*kernel{}}
	p := &parser{lines: strings.Split(src, "\n"), externs: map[string]bool{}}
	for {
		tok, line, ok := p.next()
		if !ok {
			break
		}
		switch {
		case strings.HasPrefix(tok, ".version"):
			m.version = strings.TrimSpace(strings.TrimPrefix(tok, ".version"))
		case strings.HasPrefix(tok, ".target"):
			m.target = strings.TrimSpace(strings.TrimPrefix(tok, ".target"))
		case strings.HasPrefix(tok, ".address_size"):
			if strings.TrimSpace(strings.TrimPrefix(tok, ".address_size")) != "64" {
				return nil, fmt.Errorf("line %d: only .address_size 64 is supported", line)
			}
		case strings.HasPrefix(tok, ".extern .shared"):
			if err := p.declareDynamic(tok); err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
		case strings.HasPrefix(tok, ".extern .func"):
			name, err := parseExtern(tok)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			p.externs[name] = true
		case strings.HasPrefix(tok, ".visible .entry") || strings.HasPrefix(tok, ".entry"):
			k, err := p.kernel(tok, line)
			if err != nil {
				return nil, err
			}
			if _, dup := m.kernels[k.name]; dup {
				return nil, fmt.Errorf("line %d: kernel %s defined twice", line, k.name)
			}
			m.kernels[k.name] = k
		default:
			return nil, fmt.Errorf("line %d: unsupported module-level statement %q", line, tok)
		}
	}
	if m.version == "" || m.target == "" {
		return nil, fmt.Errorf("the module has no .version or no .target directive")
	}
	return m, nil
}

// parser splits the text into statements: directives and instructions end
// with ';' or a newline before '{', labels with ':'; braces are their own
// tokens.
type parser struct {
	externs map[string]bool // the functions declared so far
	dynamic *dynamicShared  // the module's .extern .shared array, if any
	lines   []string
	line    int    // index of the current line
	rest    string // what is left of it
}

func (p *parser) next() (string, int, bool) {
	var acc strings.Builder
	start := -1
	for {
		for strings.TrimSpace(p.rest) == "" {
			if p.line >= len(p.lines) {
				if acc.Len() > 0 {
					return strings.TrimSpace(acc.String()), start + 1, true
				}
				return "", p.line, false
			}
			p.rest = p.lines[p.line]
			if i := strings.Index(p.rest, "//"); i >= 0 {
				p.rest = p.rest[:i]
			}
			p.line++
			if acc.Len() > 0 {
				acc.WriteByte(' ')
			}
		}
		if start < 0 {
			start = p.line - 1
		}
		s := strings.TrimLeft(p.rest, " \t")
		if acc.Len() == 0 && lineDirective(s) {
			// .version, .target and .address_size end with their line.
			p.rest = ""
			return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), ";")), start + 1, true
		}
		if acc.Len() == 0 && (s[0] == '{' || s[0] == '}') {
			p.rest = s[1:]
			return s[:1], p.line, true
		}
		i := strings.IndexAny(s, ";{}:")
		if i < 0 {
			acc.WriteString(s)
			p.rest = ""
			continue
		}
		switch s[i] {
		case ';':
			acc.WriteString(s[:i])
			p.rest = s[i+1:]
			return strings.TrimSpace(acc.String()), start + 1, true
		case ':':
			acc.WriteString(s[:i+1])
			p.rest = s[i+1:]
			return strings.TrimSpace(acc.String()), start + 1, true
		case '{':
			// A vector access's {list} of registers, on the statement's line;
			// otherwise the brace opens a block and ends the statement.
			if j := strings.IndexByte(s[i:], '}'); j > 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:i+j]), "%") {
				acc.WriteString(s[:i+j+1])
				p.rest = s[i+j+1:]
				continue
			}
			fallthrough
		default: // a brace ends the statement before it
			acc.WriteString(s[:i])
			p.rest = s[i:]
			if t := strings.TrimSpace(acc.String()); t != "" {
				return t, start + 1, true
			}
			acc.Reset()
			start = -1
		}
	}
}

func lineDirective(s string) bool {
	for _, d := range []string{".version", ".target", ".address_size"} {
		if strings.HasPrefix(s, d) {
			return true
		}
	}
	return false
}

// parseMaxntid reads a .maxntid directive's dimensions ("1024, 1, 1":
// one to three positive integers) and returns their product.
func parseMaxntid(dims string) (int, error) {
	fields := strings.Split(dims, ",")
	if len(fields) > 3 {
		return 0, fmt.Errorf(".maxntid takes at most three dimensions, got %q", dims)
	}
	n := 1
	for _, f := range fields {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return 0, fmt.Errorf(".maxntid: %q is not a positive dimension", f)
		}
		n *= v
	}
	return n, nil
}

// kernel parses an entry from its header statement through its closing
// brace.
func (p *parser) kernel(header string, line int) (*kernel, error) {
	k := &kernel{regs: map[string]regInfo{}, shared: map[string]sharedVar{}, labels: map[string]int{},
		locals: map[string]bool{}, externs: p.externs}
	if at := strings.LastIndex(header, ".maxntid"); at > strings.LastIndex(header, ")") {
		n, err := parseMaxntid(header[at+len(".maxntid"):])
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		k.maxThreads, header = n, strings.TrimSpace(header[:at])
	}
	open := strings.Index(header, "(")
	if open < 0 || !strings.HasSuffix(header, ")") {
		return nil, fmt.Errorf("line %d: an entry needs its parameter list in parentheses", line)
	}
	fields := strings.Fields(header[:open])
	k.name = fields[len(fields)-1]
	if list := strings.TrimSpace(header[open+1 : len(header)-1]); list != "" {
		for _, ps := range strings.Split(list, ",") {
			pm, err := parseParam(strings.TrimSpace(ps))
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", line, k.name, err)
			}
			k.params = append(k.params, pm)
		}
	}
	if tok, l, ok := p.next(); !ok || tok != "{" {
		return nil, fmt.Errorf("line %d: %s: expected '{'", l, k.name)
	}
	for {
		tok, l, ok := p.next()
		if !ok {
			return nil, fmt.Errorf("%s: no closing brace", k.name)
		}
		switch {
		case tok == "}":
			k.dynBase = -1
			if d := p.dynamic; d != nil {
				if _, dup := k.shared[d.name]; dup {
					return nil, fmt.Errorf("line %d: %s: shared variable %s is declared extern and in the kernel", l, k.name, d.name)
				}
				k.dynBase = (k.shSize + d.align - 1) / d.align * d.align
				k.shared[d.name] = sharedVar{offset: k.dynBase}
			}
			return k, nil
		case tok == "{":
			return nil, fmt.Errorf("line %d: %s: nested blocks are not supported", l, k.name)
		case strings.HasSuffix(tok, ":"):
			name := strings.TrimSuffix(tok, ":")
			if _, dup := k.labels[name]; dup {
				return nil, fmt.Errorf("line %d: label %s defined twice", l, name)
			}
			k.labels[name] = len(k.stmts)
		case strings.HasPrefix(tok, ".reg"):
			if err := k.declareRegs(tok); err != nil {
				return nil, fmt.Errorf("line %d: %v", l, err)
			}
		case strings.HasPrefix(tok, ".param"):
			pm, err := parseParam(tok)
			if err != nil || pm.array {
				return nil, fmt.Errorf("line %d: %s: a local parameter must be a scalar: %q", l, k.name, tok)
			}
			class := "b32"
			if pm.size == 8 {
				class = "b64"
			}
			k.addReg(pm.name, class, 8*pm.size)
			k.locals[pm.name] = true
		case strings.HasPrefix(tok, ".shared"):
			if err := k.declareShared(tok); err != nil {
				return nil, fmt.Errorf("line %d: %v", l, err)
			}
		default:
			st, err := parseStmt(tok, l)
			if err != nil {
				return nil, err
			}
			k.stmts = append(k.stmts, st)
		}
	}
}

// setConditional is the one device function the emulator provides:
// cudaGraphSetConditional(handle .b64, value .b32), which sets a CUDA
// graph's condition (graph.go).
const setConditional = "cudaGraphSetConditional"

// parseExtern reads ".extern .func name (.param .b64 a, .param .b32 b)"
// and returns the name: only setConditional's declaration is accepted.
func parseExtern(s string) (string, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(s, ".extern .func"))
	open := strings.Index(rest, "(")
	if open < 0 || !strings.HasSuffix(rest, ")") {
		return "", fmt.Errorf("bad declaration %q", s)
	}
	name := strings.TrimSpace(rest[:open])
	if name != setConditional {
		return "", fmt.Errorf("the emulator has no device function %s", name)
	}
	var types []string
	for _, ps := range strings.Split(rest[open+1:len(rest)-1], ",") {
		pm, err := parseParam(strings.TrimSpace(ps))
		if err != nil {
			return "", fmt.Errorf("%s: %v", name, err)
		}
		types = append(types, pm.typ)
	}
	if len(types) != 2 || sizeOf(types[0]) != 8 || sizeOf(types[1]) != 4 {
		return "", fmt.Errorf("%s takes (.b64, .b32), declared (%s)", name, strings.Join(types, ", "))
	}
	return name, nil
}

// parseParam reads ".param .u64 name" or ".param .align 8 .b8 name[24]".
func parseParam(s string) (param, error) {
	f := strings.Fields(s)
	if len(f) < 3 || f[0] != ".param" {
		return param{}, fmt.Errorf("bad parameter %q", s)
	}
	pm := param{align: 0}
	i := 1
	if f[i] == ".align" {
		if len(f) < 5 {
			return param{}, fmt.Errorf("bad parameter %q", s)
		}
		a, err := strconv.Atoi(f[i+1])
		if err != nil {
			return param{}, fmt.Errorf("bad alignment in %q", s)
		}
		pm.align = a
		i += 2
	}
	pm.typ = strings.TrimPrefix(f[i], ".")
	name := f[i+1]
	if j := strings.Index(name, "["); j >= 0 {
		n, err := strconv.Atoi(strings.TrimSuffix(name[j+1:], "]"))
		if err != nil || pm.typ != "b8" {
			return param{}, fmt.Errorf("bad array parameter %q", s)
		}
		pm.name, pm.size, pm.array = name[:j], n, true
		if pm.align == 0 {
			pm.align = 1
		}
		return pm, nil
	}
	pm.name = name
	switch pm.typ {
	case "u32", "s32", "f32", "b32":
		pm.size = 4
	case "u64", "s64", "f64", "b64":
		pm.size = 8
	default:
		return param{}, fmt.Errorf("parameter type .%s is not supported", pm.typ)
	}
	pm.align = pm.size
	return pm, nil
}

// declareRegs reads ".reg .f32 %f<12>" (twelve registers %f0..%f11) or
// ".reg .b32 %r1, %r2".
func (k *kernel) declareRegs(s string) error {
	f := strings.Fields(strings.ReplaceAll(s, ",", " "))
	if len(f) < 3 {
		return fmt.Errorf("bad register declaration %q", s)
	}
	typ := strings.TrimPrefix(f[1], ".")
	class, bits := "", 0
	switch typ {
	case "pred":
		class, bits = "pred", 1
	case "b16", "u16", "s16":
		class, bits = "b32", 16
	case "b32", "u32", "s32", "f32":
		class, bits = classOf(typ), 32
	case "b64", "u64", "s64", "f64":
		class, bits = classOf(typ), 64
	default:
		return fmt.Errorf("register type .%s is not supported", typ)
	}
	for _, name := range f[2:] {
		if i := strings.Index(name, "<"); i >= 0 {
			n, err := strconv.Atoi(strings.TrimSuffix(name[i+1:], ">"))
			if err != nil {
				return fmt.Errorf("bad register range %q", name)
			}
			for j := 0; j < n; j++ {
				k.addReg(fmt.Sprintf("%s%d", name[:i], j), class, bits)
			}
			continue
		}
		k.addReg(name, class, bits)
	}
	return nil
}

func (k *kernel) addReg(name, class string, bits int) {
	if _, ok := k.regs[name]; ok {
		return
	}
	k.regs[name] = regInfo{index: k.nregs, typ: class, bits: bits}
	k.nregs++
}

// declareDynamic reads ".extern .shared .align 16 .b8 name[]", a module's
// one dynamic shared array.
func (p *parser) declareDynamic(s string) error {
	f := strings.Fields(strings.TrimPrefix(s, ".extern"))
	if len(f) != 5 || f[0] != ".shared" || f[1] != ".align" || f[3] != ".b8" || !strings.HasSuffix(f[4], "[]") {
		return fmt.Errorf("a dynamic shared array is declared \".extern .shared .align N .b8 name[]\": %q", s)
	}
	align, err := strconv.Atoi(f[2])
	if err != nil || align < 1 || align&(align-1) != 0 {
		return fmt.Errorf("bad alignment in %q", s)
	}
	if p.dynamic != nil {
		return fmt.Errorf("a second dynamic shared array %q (the module has %s)", s, p.dynamic.name)
	}
	p.dynamic = &dynamicShared{name: strings.TrimSuffix(f[4], "[]"), align: align}
	return nil
}

// declareShared reads ".shared .align 8 .b8 name[4096]".
func (k *kernel) declareShared(s string) error {
	f := strings.Fields(s)
	align := 1
	i := 1
	if i < len(f) && f[i] == ".align" {
		if i+1 >= len(f) {
			return fmt.Errorf("bad shared declaration %q", s)
		}
		a, err := strconv.Atoi(f[i+1])
		if err != nil {
			return fmt.Errorf("bad alignment in %q", s)
		}
		align = a
		i += 2
	}
	if i+1 >= len(f) || f[i] != ".b8" {
		return fmt.Errorf("shared variables are declared as .b8 arrays: %q", s)
	}
	name := f[i+1]
	j := strings.Index(name, "[")
	if j < 0 {
		return fmt.Errorf("bad shared declaration %q", s)
	}
	n, err := strconv.Atoi(strings.TrimSuffix(name[j+1:], "]"))
	if err != nil || n <= 0 {
		return fmt.Errorf("bad shared size in %q", s)
	}
	// A kernel's parameters and shared variables share one scope: ptxas
	// refuses a second definition of a name ("Duplicate definition").
	if _, dup := k.shared[name[:j]]; dup {
		return fmt.Errorf("shared variable %s is defined twice", name[:j])
	}
	for _, p := range k.params {
		if p.name == name[:j] {
			return fmt.Errorf("shared variable %s has the name of a parameter (ptxas: duplicate definition)", name[:j])
		}
	}
	off := (k.shSize + align - 1) / align * align
	k.shared[name[:j]] = sharedVar{offset: off, size: n}
	k.shSize = off + n
	return nil
}

// parseStmt splits "@!%p1 bra $L_done" into guard, opcode and operands.
func parseStmt(s string, line int) (stmt, error) {
	st := stmt{line: line, text: s}
	if strings.HasPrefix(s, "@") {
		sp := strings.IndexAny(s, " \t")
		if sp < 0 {
			return st, fmt.Errorf("line %d: a guard with no instruction: %q", line, s)
		}
		g := s[1:sp]
		if strings.HasPrefix(g, "!") {
			st.negGuard, g = true, g[1:]
		}
		st.guard = g
		s = strings.TrimSpace(s[sp:])
	}
	sp := strings.IndexAny(s, " \t")
	if sp < 0 {
		st.op = s
		return st, nil
	}
	st.op = s[:sp]
	for _, a := range splitOperands(s[sp:]) {
		st.args = append(st.args, a)
	}
	return st, nil
}

// splitOperands splits on commas outside brackets and braces.
func splitOperands(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

// parseImm reads an immediate: a decimal or hex integer, or a float in
// PTX's exact forms 0fXXXXXXXX (float32 bits) and 0dXXXXXXXXXXXXXXXX
// (float64 bits), or a decimal float.
func parseImm(s string, class string) (uint64, bool) {
	switch {
	case strings.HasPrefix(s, "0f") || strings.HasPrefix(s, "0F"):
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			return 0, false
		}
		if class == "f64" {
			return math.Float64bits(float64(math.Float32frombits(uint32(v)))), true
		}
		return v, true
	case strings.HasPrefix(s, "0d") || strings.HasPrefix(s, "0D"):
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return 0, false
		}
		if class == "f32" {
			return uint64(math.Float32bits(float32(math.Float64frombits(v)))), true
		}
		return v, true
	}
	if class == "f32" || class == "f64" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		if class == "f32" {
			return uint64(math.Float32bits(float32(f))), true
		}
		return math.Float64bits(f), true
	}
	if v, err := strconv.ParseInt(s, 0, 64); err == nil {
		return uint64(v), true
	}
	if v, err := strconv.ParseUint(s, 0, 64); err == nil {
		return v, true
	}
	return 0, false
}
