// Package csv reads comma-separated tables into tensors, one tensor per
// column, typed by a schema.
//
//	cols, err := csv.ReadFile("iris.csv", csv.Schema{Columns: []csv.Column{
//		{Name: "sepal_length", DType: tensor.Float32},
//		{Name: "petal_width", DType: tensor.Float32, Default: 0.0},
//		{Name: "species", DType: tensor.Int64},
//	}})
//	// cols[0], cols[1]: float32 [rows]; cols[2]: int64 [rows]
//	ds, err := csv.Dataset("iris.csv", schema) // rows for a pipeline
//
// The syntax is RFC 4180's as Go's encoding/csv reads it (Python's csv
// module writes it by default): quoted fields may hold the separator,
// quotes (doubled) and line breaks. Columns are chosen by their header
// cell, or by position when the file has no header (Schema.NoHeader).
// A cell is missing when it is empty (after trimming spaces) or equals
// one of Schema.Missing ("NA", "?"...); a missing cell takes its column's
// Default, and is an error when the column has none. Every error about
// the text names the line and column and wraps ErrFormat; a file that
// is not readable is never a panic.
package csv

import (
	stdcsv "encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/tensor"
)

// ErrFormat is wrapped by every error about a table's text: a cell that
// does not parse as its column's dtype, a missing cell without default, a
// row of the wrong length, malformed quoting, a header without a column
// the schema names.
var ErrFormat = errors.New("csv: not a valid table")

// Column is one column of the table, read into one tensor.
type Column struct {
	// Name selects the column by its header cell (exact match). With
	// Schema.NoHeader, or when empty, Index selects it instead.
	Name string
	// Index is the column's position, from 0.
	Index int
	// DType is the tensor's element type: Float32 (the default, when
	// zero), Float64, Int32, Int64, Uint8 or Bool. Numbers parse as Go's
	// strconv does in base 10 ("1e3", "-0.5", "NaN", "Inf" for floats);
	// bools are 1, 0, t, f, true, false in any case.
	DType tensor.DType
	// Default is the value of a missing cell: a Go number or bool. A
	// float column rounds it to its dtype; an integer column needs an
	// integer in its range. Nil makes a missing cell an error.
	Default any
}

// Schema says which columns to read and how the text is laid out.
type Schema struct {
	// Columns are read in this order. Empty: every column of the file,
	// as float32 with no default.
	Columns []Column
	// Comma separates fields: ',' when zero.
	Comma rune
	// Comment, when not zero, starts a line to skip.
	Comment rune
	// NoHeader says the first line is data; columns are chosen by Index.
	NoHeader bool
	// Missing lists the cells, besides the empty one, that mean "no
	// value" (compared after trimming spaces).
	Missing []string
}

// ReadFile reads the table at path into one tensor of shape [rows] per
// column of the schema, on the host.
func ReadFile(path string, s Schema) ([]*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cols, err := Read(f, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cols, nil
}

// Read reads a table from r into one tensor of shape [rows] per column of
// the schema, on the host.
func Read(r io.Reader, s Schema) ([]*tensor.Tensor, error) {
	if r == nil {
		return nil, errors.New("csv: Read: the reader is nil")
	}
	tb, err := open(r, s)
	if err != nil {
		return nil, err
	}
	builders := make([]builder, len(tb.cols))
	for {
		row, line, err := tb.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		vals, err := tb.cells(row, line)
		if err != nil {
			return nil, err
		}
		for i, c := range tb.cols {
			builders[i].add(c.DType, vals[i])
		}
	}
	out := make([]*tensor.Tensor, len(builders))
	for i := range builders {
		out[i] = builders[i].tensor(tb.cols[i].DType)
	}
	return out, nil
}

// Dataset is a data.Dataset of the table's rows, read from path afresh
// each epoch without holding the file in memory: each element holds one
// scalar per column of the schema (batch them with Dataset.Batch). The
// header and schema are checked now; errors in later lines end the
// pipeline with an error naming the line.
func Dataset(path string, s Schema) (*data.Dataset, error) {
	check := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := open(f, s); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	if err := check(); err != nil {
		return nil, err
	}
	return data.FromGenerator(func(yield func(data.Element) bool) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		tb, err := open(f, s)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for {
			row, line, err := tb.next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			vals, err := tb.cells(row, line)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			elem := make(data.Element, len(tb.cols))
			for i, c := range tb.cols {
				elem[i] = scalar(c.DType, vals[i])
			}
			if !yield(elem) {
				return nil
			}
		}
	}), nil
}

// table is an open table: its reader, the columns resolved to positions
// and their parsed defaults.
type table struct {
	r        *stdcsv.Reader
	cols     []Column
	pos      []int
	defaults []value // ok false: no default
	missing  []string
	width    int // fields per record, from the first one read
}

// open reads the header (unless NoHeader) and resolves the schema.
func open(r io.Reader, s Schema) (*table, error) {
	cr := stdcsv.NewReader(r)
	if s.Comma != 0 {
		cr.Comma = s.Comma
	}
	cr.Comment = s.Comment
	cr.FieldsPerRecord = 0 // every record as long as the first
	cr.ReuseRecord = true
	tb := &table{r: cr, missing: s.Missing}
	var header []string
	if !s.NoHeader {
		h, err := cr.Read()
		if err == io.EOF {
			return nil, fmt.Errorf("%w: no header line", ErrFormat)
		}
		if err != nil {
			return nil, syntaxError(err)
		}
		header = slices.Clone(h)
		for i := range header {
			header[i] = strings.TrimSpace(header[i])
		}
		tb.width = len(header)
	}
	tb.cols = s.Columns
	if len(tb.cols) == 0 {
		if s.NoHeader {
			return nil, fmt.Errorf("csv: a schema without columns needs a header to take them from")
		}
		tb.cols = make([]Column, len(header))
		for i, h := range header {
			tb.cols[i] = Column{Name: h, Index: i}
		}
	}
	tb.cols = slices.Clone(tb.cols)
	for i := range tb.cols {
		c := &tb.cols[i]
		if c.DType == tensor.Invalid {
			c.DType = tensor.Float32
		}
		if !c.DType.Valid() {
			return nil, fmt.Errorf("csv: column %s: dtype %v", c.label(), c.DType)
		}
		p := c.Index
		if c.Name != "" && !s.NoHeader {
			p = slices.Index(header, c.Name)
			if p < 0 {
				return nil, fmt.Errorf("%w: no column %q in the header %q", ErrFormat, c.Name, header)
			}
		} else if p < 0 || (header != nil && p >= len(header)) {
			return nil, fmt.Errorf("%w: column %s: index %d outside the header's %d columns",
				ErrFormat, c.label(), p, len(header))
		}
		tb.pos = append(tb.pos, p)
		d := value{}
		if c.Default != nil {
			var err error
			if d, err = fromGo(c.DType, c.Default); err != nil {
				return nil, fmt.Errorf("csv: column %s: default: %w", c.label(), err)
			}
		}
		tb.defaults = append(tb.defaults, d)
	}
	return tb, nil
}

// label names a column in errors: its name, else its position.
func (c *Column) label() string {
	if c.Name != "" {
		return strconv.Quote(c.Name)
	}
	return strconv.Itoa(c.Index)
}

// next reads the next record and the line it starts on.
func (tb *table) next() ([]string, int, error) {
	row, err := tb.r.Read()
	if err != nil {
		if err == io.EOF {
			return nil, 0, err
		}
		return nil, 0, syntaxError(err)
	}
	line, _ := tb.r.FieldPos(0)
	if tb.width == 0 {
		tb.width = len(row)
		for i, p := range tb.pos {
			if p >= len(row) {
				return nil, 0, fmt.Errorf("%w: line %d: column %s: index %d outside the row's %d fields",
					ErrFormat, line, tb.cols[i].label(), p, len(row))
			}
		}
	}
	return row, line, nil
}

// cells parses the schema's columns of row (from line).
func (tb *table) cells(row []string, line int) ([]value, error) {
	vals := make([]value, len(tb.cols))
	for i := range tb.cols {
		v, err := tb.cell(row, line, i)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// cell parses column i of row (from line), or gives its default.
func (tb *table) cell(row []string, line, i int) (value, error) {
	c := &tb.cols[i]
	text := strings.TrimSpace(row[tb.pos[i]])
	if text == "" || slices.Contains(tb.missing, text) {
		if !tb.defaults[i].ok {
			return value{}, fmt.Errorf("%w: line %d, column %s: missing cell and no default",
				ErrFormat, line, c.label())
		}
		return tb.defaults[i], nil
	}
	v, err := parse(c.DType, text)
	if err != nil {
		return value{}, fmt.Errorf("%w: line %d, column %s: %q is not a valid %v", ErrFormat, line, c.label(), text, c.DType)
	}
	return v, nil
}

// syntaxError wraps encoding/csv's errors (which carry line and column)
// in ErrFormat.
func syntaxError(err error) error {
	var pe *stdcsv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return err
}
