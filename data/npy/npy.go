// Package npy reads NumPy's array files: .npy (one array) and .npz (a zip
// archive of .npy files, compressed or stored), as NumPy's np.save and
// np.savez write them (format versions 1.0, 2.0 and 3.0).
//
//	x, err := npy.ReadFile("images.npy")          // a tensor on the host
//	arrays, err := npy.ReadArchiveFile("data.npz") // by name: "x", "y", ...
//	ds, err := npy.Dataset("images.npy")           // its rows, for a pipeline
//
// The element types are those eagerflow has: float32 (<f4), float64 (<f8),
// float16 (<f2), int32 (<i4), int64 (<i8), uint8 (|u1) and bool (|b1),
// little- or big-endian (NumPy has no bfloat16). Fortran-ordered arrays are transposed into row-major order.
// Anything else (object arrays, strings, other widths, structured dtypes)
// is an error naming the dtype; corrupt files are errors naming the file
// and what was wrong, never a panic.
package npy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// ErrFormat is wrapped by every error about a file that is not a valid
// .npy array eagerflow can hold.
var ErrFormat = errors.New("npy: not a valid array")

// magic opens every .npy file.
const magic = "\x93NUMPY"

// hostBigEndian says how the host stores numbers.
var hostBigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// maxHeader bounds the header a reader accepts (NumPy's own limit is 10000
// bytes for reading untrusted files).
const maxHeader = 1 << 16

// ReadFile reads the .npy file at path.
func ReadFile(path string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Dataset is a data.Dataset of the rows (slices along the first
// dimension) of the .npy array at path.
func Dataset(path string) (*data.Dataset, error) {
	t, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return data.FromSlices(t)
}

// header is what a .npy header says.
type header struct {
	dtype   tensor.DType
	big     bool // big-endian elements
	fortran bool
	shape   tensor.Shape
}

// Read reads one .npy array from r into a tensor on the host.
func Read(r io.Reader) (*tensor.Tensor, error) {
	if r == nil {
		return nil, errors.New("npy: Read: the reader is nil")
	}
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	nbytes, ok := tensor.ByteSize(h.dtype, h.shape)
	if !ok {
		return nil, fmt.Errorf("%w: shape %v has more bytes than an int can count", ErrFormat, h.shape)
	}
	// Read what is there before allocating what the header claims.
	raw, err := io.ReadAll(io.LimitReader(r, int64(nbytes)))
	if err != nil {
		return nil, err
	}
	if len(raw) < nbytes {
		return nil, fmt.Errorf("%w: the data of %v%v needs %d bytes, the file has %d: %w", ErrFormat, h.dtype, h.shape, nbytes, len(raw), io.ErrUnexpectedEOF)
	}
	return build(h, raw)
}

// readHeader reads the magic, version and header dictionary.
func readHeader(r io.Reader) (header, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return header{}, fmt.Errorf("%w: reading the preamble: %w", ErrFormat, err)
	}
	if string(pre[:6]) != magic {
		return header{}, fmt.Errorf("%w: no .npy magic (the file starts %q)", ErrFormat, pre[:6])
	}
	var n int
	switch major := pre[6]; major {
	case 1:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return header{}, fmt.Errorf("%w: reading the header length: %w", ErrFormat, err)
		}
		n = int(binary.LittleEndian.Uint16(l[:]))
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return header{}, fmt.Errorf("%w: reading the header length: %w", ErrFormat, err)
		}
		n = int(binary.LittleEndian.Uint32(l[:]))
	default:
		return header{}, fmt.Errorf("%w: format version %d.%d (1.0 to 3.0 are known)", ErrFormat, major, pre[7])
	}
	if n > maxHeader {
		return header{}, fmt.Errorf("%w: a header of %d bytes (at most %d accepted)", ErrFormat, n, maxHeader)
	}
	text := make([]byte, n)
	if _, err := io.ReadFull(r, text); err != nil {
		return header{}, fmt.Errorf("%w: reading the %d-byte header: %w", ErrFormat, n, err)
	}
	return parseHeader(string(text))
}

// parseHeader reads the Python dict literal {'descr': '<f4',
// 'fortran_order': False, 'shape': (2, 3), }.
func parseHeader(s string) (header, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return header{}, fmt.Errorf("%w: the header %q is not a dictionary", ErrFormat, s)
	}
	var h header
	seen := map[string]bool{}
	p := &parser{s: s[1 : len(s)-1]}
	for {
		p.space()
		if p.done() {
			break
		}
		key, err := p.str()
		if err != nil {
			return header{}, err
		}
		if err := p.expect(':'); err != nil {
			return header{}, err
		}
		switch key {
		case "descr":
			descr, err := p.str()
			if err != nil {
				return header{}, err
			}
			if h.dtype, h.big, err = dtypeOf(descr); err != nil {
				return header{}, err
			}
		case "fortran_order":
			if h.fortran, err = p.boolean(); err != nil {
				return header{}, err
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return header{}, err
			}
		default:
			return header{}, fmt.Errorf("%w: unknown header key %q", ErrFormat, key)
		}
		seen[key] = true
		p.space()
		if !p.done() {
			if err := p.expect(','); err != nil {
				return header{}, err
			}
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return header{}, fmt.Errorf("%w: the header has no %q", ErrFormat, k)
		}
	}
	return h, nil
}

// dtypeOf maps a NumPy type string to a dtype and whether its elements
// are big-endian.
func dtypeOf(descr string) (tensor.DType, bool, error) {
	if len(descr) < 2 {
		return 0, false, fmt.Errorf("%w: dtype %q", ErrFormat, descr)
	}
	big := false
	switch descr[0] {
	case '<', '|':
	case '=':
		big = hostBigEndian
	case '>':
		big = true
	default:
		return 0, false, fmt.Errorf("%w: dtype %q has no byte order", ErrFormat, descr)
	}
	switch descr[1:] {
	case "f4":
		return tensor.Float32, big, nil
	case "f2":
		return tensor.Float16, big, nil
	case "f8":
		return tensor.Float64, big, nil
	case "i4":
		return tensor.Int32, big, nil
	case "i8":
		return tensor.Int64, big, nil
	case "u1":
		return tensor.Uint8, big, nil
	case "b1":
		return tensor.Bool, big, nil
	case "O":
		return 0, false, fmt.Errorf("%w: an object array (dtype %q) holds Python objects, not numbers", ErrFormat, descr)
	}
	return 0, false, fmt.Errorf("%w: dtype %q: eagerflow holds float16, float32, float64, int32, int64, uint8 and bool (convert with astype first)", ErrFormat, descr)
}

// build makes the host tensor of h from its data bytes: byte-swapped to
// the host's order, Fortran order transposed to row-major.
func build(h header, raw []byte) (*tensor.Tensor, error) {
	shape := h.shape
	if h.fortran {
		shape = reversed(h.shape)
	}
	t, err := tensor.Empty(device.Host(), h.dtype, shape)
	if err != nil {
		return nil, err
	}
	b := t.HostBytes()
	copy(b, raw)
	if size := h.dtype.Size(); size > 1 && h.big != hostBigEndian {
		for i := 0; i < len(b); i += size {
			for j := 0; j < size/2; j++ {
				b[i+j], b[i+size-1-j] = b[i+size-1-j], b[i+j]
			}
		}
	}
	if h.dtype == tensor.Bool {
		for i, v := range b {
			if v > 1 {
				t.Release()
				return nil, fmt.Errorf("%w: bool element %d holds %d", ErrFormat, i, v)
			}
		}
	}
	if !h.fortran || shape.Rank() < 2 {
		return t, nil
	}
	// The data of a Fortran-ordered [a, b, c] is row-major [c, b, a]: a
	// view of h.shape whose first dimension is the fastest (minor-to-major
	// 0, 1, 2, ...), copied into row-major order.
	minorToMajor := make(tensor.Layout, shape.Rank())
	for i := range minorToMajor {
		minorToMajor[i] = i
	}
	out := t.View(h.shape, minorToMajor).Contiguous()
	t.Release()
	return out, nil
}

func reversed(s tensor.Shape) tensor.Shape {
	r := make(tensor.Shape, len(s))
	for i, v := range s {
		r[len(s)-1-i] = v
	}
	return r
}

// parser reads the header dictionary's Python literals.
type parser struct {
	s string
	i int
}

func (p *parser) done() bool { return p.i >= len(p.s) }

func (p *parser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *parser) fail(what string) error {
	return fmt.Errorf("%w: header at byte %d: %s in %q", ErrFormat, p.i, what, p.s)
}

func (p *parser) expect(c byte) error {
	p.space()
	if p.done() || p.s[p.i] != c {
		return p.fail(fmt.Sprintf("expected %q", c))
	}
	p.i++
	return nil
}

// str reads a quoted string ('...' or "...").
func (p *parser) str() (string, error) {
	p.space()
	if p.done() || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", p.fail("expected a string")
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.fail("an unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

func (p *parser) boolean() (bool, error) {
	p.space()
	for _, w := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return w == "True", nil
		}
	}
	return false, p.fail("expected True or False")
}

// tuple reads (), (n,) or (n, m, ...) of non-negative integers.
func (p *parser) tuple() (tensor.Shape, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	shape := tensor.Shape{}
	for {
		p.space()
		if !p.done() && p.s[p.i] == ')' {
			p.i++
			return shape, nil
		}
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(strings.TrimSuffix(p.s[p.i:j], "L"))
		if err != nil || j == p.i {
			return nil, p.fail("expected a dimension")
		}
		p.i = j
		if j < len(p.s) && p.s[j] == 'L' { // Python 2's long suffix
			p.i++
		}
		shape = append(shape, n)
		p.space()
		if !p.done() && p.s[p.i] == ',' {
			p.i++
		}
	}
}
