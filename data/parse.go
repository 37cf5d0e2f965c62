package data

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
	"google.golang.org/protobuf/encoding/protowire"
)

// A parse spec names the features to take from serialized Examples and how
// to batch them, like TensorFlow's tf.io.parse_example. Feature kinds map to
// dtypes: float_list to Float32, int64_list to Int64 (or Int32, narrowed),
// bytes_list to Uint8 (the values' bytes, concatenated).

// FixedLen is a feature with a fixed number of values per record, batched
// to [batch, Shape...]. A record without the feature gets Default (a
// tensor of Shape and DType) or, with no Default, is an error.
type FixedLen struct {
	Shape   []int
	DType   tensor.DType
	Default *tensor.Tensor
}

// VarLen is a feature with any number of values per record. Unpadded it
// parses to the values of all records end to end (Ragged.Values) with each
// record's count (Ragged.RowLengths, Int64 [batch]); Padded, to a dense
// [batch, longest] tensor filled with PadValue.
type VarLen struct {
	DType    tensor.DType
	Padded   bool
	PadValue float64
}

// ParseSpec maps feature names to FixedLen or VarLen.
type ParseSpec map[string]any

// Ragged is a VarLen feature parsed without padding.
type Ragged struct {
	Values     *tensor.Tensor // all records' values, in order
	RowLengths *tensor.Tensor // Int64 [batch]
}

// Parsed holds a batch: dense tensors (FixedLen and padded VarLen) and
// ragged ones (unpadded VarLen).
type Parsed struct {
	Dense  map[string]*tensor.Tensor
	Ragged map[string]Ragged
}

// column accumulates one feature across the batch, as raw little-endian
// elements of its dtype.
type column struct {
	name    string
	fixed   *FixedLen
	varlen  *VarLen
	kind    FeatureKind
	dt      tensor.DType
	per     int            // elements per record (FixedLen)
	out     *tensor.Tensor // FixedLen: the batch, filled in place through buf
	buf     []byte
	lengths []int64
	seen    []bool // per record in the current batch
}

func kindFor(dt tensor.DType) (FeatureKind, error) {
	switch dt {
	case tensor.Float32:
		return KindFloat, nil
	case tensor.Int64, tensor.Int32:
		return KindInt64, nil
	case tensor.Uint8:
		return KindBytes, nil
	}
	return 0, fmt.Errorf("data: parse spec: dtype %v has no feature kind (use float32, int64, int32 or uint8)", dt)
}

// Parser parses batches of serialized Examples by a spec. Build it once
// with NewParser; it is safe for concurrent use.
type Parser struct {
	spec  ParseSpec
	names []string
}

// NewParser checks spec and returns its parser.
func NewParser(spec ParseSpec) (*Parser, error) {
	p := &Parser{spec: make(ParseSpec, len(spec))}
	for name, s := range spec {
		p.spec[name] = s
		switch v := s.(type) {
		case FixedLen:
			if _, err := kindFor(v.DType); err != nil {
				return nil, fmt.Errorf("%w (feature %q)", err, name)
			}
			if _, ok := tensor.ByteSize(v.DType, v.Shape); !ok {
				return nil, fmt.Errorf("data: parse spec: feature %q: shape %v has a negative dimension or more elements than an int can count", name, tensor.Shape(v.Shape))
			}
			if v.Default != nil && (v.Default.DType() != v.DType || !v.Default.Shape().Equal(v.Shape)) {
				return nil, fmt.Errorf("data: parse spec: feature %q: default is %s, want %v%v", name, tensor.Describe(v.Default), v.DType, tensor.Shape(v.Shape))
			}
			if v.Default != nil { // the parser's copy, on the host, where records are parsed
				var err error
				if v.Default, err = backend.OnHost(v.Default); err != nil {
					return nil, fmt.Errorf("data: parse spec: feature %q: default: %w", name, err)
				}
				p.spec[name] = v
			}
		case VarLen:
			if _, err := kindFor(v.DType); err != nil {
				return nil, fmt.Errorf("%w (feature %q)", err, name)
			}
		default:
			return nil, fmt.Errorf("data: parse spec: feature %q: %T is neither FixedLen nor VarLen", name, s)
		}
		p.names = append(p.names, name)
	}
	sort.Strings(p.names)
	return p, nil
}

// Parse parses serialized Examples straight from their wire bytes into
// batched tensors, without building Example values (the fast path
// TensorFlow's parser takes). Errors name the feature and the record.
func (p *Parser) Parse(records [][]byte) (*Parsed, error) {
	cols := make(map[string]*column, len(p.names))
	for _, name := range p.names {
		c := &column{name: name, seen: make([]bool, len(records))}
		switch v := p.spec[name].(type) {
		case FixedLen:
			c.fixed, c.dt = &v, v.DType
			c.per = tensor.Shape(v.Shape).NumElements()
			// Values go straight into the output tensor's memory.
			out, err := tensor.Empty(device.Host(), v.DType, append([]int{len(records)}, v.Shape...))
			if err != nil {
				return nil, fmt.Errorf("data: parse: feature %q: a batch of %d: %w", name, len(records), err)
			}
			c.out = out
			c.buf = c.out.HostBytes()[:0]
		case VarLen:
			c.varlen, c.dt = &v, v.DType
		}
		c.kind, _ = kindFor(c.dt)
		cols[name] = c
	}
	for i, rec := range records {
		if err := p.parseOne(i, rec, cols); err != nil {
			return nil, err
		}
	}
	out := &Parsed{Dense: map[string]*tensor.Tensor{}, Ragged: map[string]Ragged{}}
	for _, name := range p.names {
		c := cols[name]
		switch {
		case c.fixed != nil:
			out.Dense[name] = c.out
		case c.varlen.Padded:
			out.Dense[name] = c.padded(len(records))
		default:
			total := 0
			for _, n := range c.lengths {
				total += int(n)
			}
			out.Ragged[name] = Ragged{Values: fromRaw(c.dt, []int{total}, c.buf), RowLengths: tensor.FromSlice(c.lengths)}
		}
	}
	return out, nil
}

func fromRaw(dt tensor.DType, shape []int, raw []byte) *tensor.Tensor {
	t := backend.MustEmptyHost(dt, shape)
	copy(t.HostBytes(), raw)
	return t
}

// padded lays a VarLen column out as [batch, longest].
func (c *column) padded(batch int) *tensor.Tensor {
	longest := int64(0)
	for _, n := range c.lengths {
		longest = max(longest, n)
	}
	size := c.dt.Size()
	t := backend.MustEmptyHost(c.dt, []int{batch, int(longest)})
	dst := t.HostBytes()
	pad := scalarBytes(c.dt, c.varlen.PadValue)
	at := 0
	for i, n := range c.lengths {
		row := dst[i*int(longest)*size : (i+1)*int(longest)*size]
		copy(row, c.buf[at:at+int(n)*size])
		for k := int(n) * size; k < len(row); k += size {
			copy(row[k:], pad)
		}
		at += int(n) * size
	}
	return t
}

func scalarBytes(dt tensor.DType, v float64) []byte {
	b := make([]byte, dt.Size())
	switch dt {
	case tensor.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case tensor.Int64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	case tensor.Int32:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case tensor.Uint8:
		b[0] = uint8(v)
	}
	return b
}

func (p *Parser) fail(i int, name, format string, args ...any) error {
	return fmt.Errorf("data: parse: record %d: feature %q: %s", i, name, fmt.Sprintf(format, args...))
}

// parseOne walks one record's wire bytes: Example.features -> map entries
// -> the Feature of each name in the spec.
func (p *Parser) parseOne(i int, rec []byte, cols map[string]*column) error {
	err := fields(rec, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		if num != fieldExampleFeatures || typ != protowire.BytesType {
			return nil
		}
		return fields(raw, func(num protowire.Number, typ protowire.Type, entry []byte, _ uint64) error {
			if num != fieldFeaturesMap || typ != protowire.BytesType {
				return nil
			}
			var key, val []byte
			if err := fields(entry, func(num protowire.Number, typ protowire.Type, r []byte, _ uint64) error {
				switch {
				case num == fieldMapKey && typ == protowire.BytesType:
					key = r
				case num == fieldMapValue && typ == protowire.BytesType:
					val = r // fields of another wire type are skipped, as decodeMap does
				}
				return nil
			}); err != nil {
				return err
			}
			c := cols[string(key)] // no allocation for the lookup
			if c == nil {
				// Not in the spec: checked, not decoded, so that a record
				// Parse accepts is one UnmarshalExample accepts.
				return checkFeature(val)
			}
			if c.seen[i] { // a later entry replaces an earlier one: drop what it added
				c.undo(i)
			}
			c.seen[i] = true
			return p.addFeature(i, c, val)
		})
	})
	if err != nil {
		return fmt.Errorf("data: parse: record %d: %w", i, err)
	}
	for _, name := range p.names {
		c := cols[name]
		if c.seen[i] {
			continue
		}
		switch {
		case c.fixed != nil && c.fixed.Default != nil:
			c.buf = append(c.buf, c.fixed.Default.Contiguous().HostBytes()...)
		case c.fixed != nil:
			return p.fail(i, name, "is missing and the spec gives no default")
		default:
			c.lengths = append(c.lengths, 0)
		}
	}
	return nil
}

// undo forgets record i's values (only for the last record parsed).
func (c *column) undo(i int) {
	if c.fixed != nil {
		c.buf = c.buf[:i*c.per*c.dt.Size()]
		return
	}
	n := c.lengths[len(c.lengths)-1]
	c.lengths = c.lengths[:len(c.lengths)-1]
	c.buf = c.buf[:len(c.buf)-int(n)*c.dt.Size()]
}

// addFeature appends one Feature's values to its column.
func (p *Parser) addFeature(i int, c *column, feat []byte) error {
	start := len(c.buf)
	kind := KindNone
	err := fields(feat, func(num protowire.Number, typ protowire.Type, list []byte, _ uint64) error {
		if typ != protowire.BytesType || num < fieldBytesList || num > fieldInt64List {
			return nil
		}
		kind = [...]FeatureKind{fieldBytesList: KindBytes, fieldFloatList: KindFloat, fieldInt64List: KindInt64}[num]
		c.buf = c.buf[:start]
		if kind != c.kind {
			return nil // reported below
		}
		return fields(list, func(num protowire.Number, typ protowire.Type, r []byte, v uint64) error {
			if num != fieldListValue {
				return nil
			}
			switch {
			case kind == KindBytes && typ == protowire.BytesType:
				c.buf = append(c.buf, r...)
			case kind == KindFloat && typ == protowire.BytesType:
				if len(r)%4 != 0 {
					return fmt.Errorf("%w: packed floats of %d bytes", ErrBadProto, len(r))
				}
				c.buf = append(c.buf, r...) // packed fixed32 is little-endian float32 already
			case kind == KindFloat && typ == protowire.Fixed32Type:
				c.buf = binary.LittleEndian.AppendUint32(c.buf, uint32(v))
			case kind == KindInt64 && typ == protowire.VarintType:
				c.appendInt(int64(v))
			case kind == KindInt64 && typ == protowire.BytesType:
				for len(r) > 0 {
					u, n := protowire.ConsumeVarint(r)
					if n < 0 {
						return fmt.Errorf("%w: packed int64s: %v", ErrBadProto, protowire.ParseError(n))
					}
					c.appendInt(int64(u))
					r = r[n:]
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if kind != c.kind && kind != KindNone {
		return p.fail(i, c.name, "is a %v, the spec wants %v (%v)", kind, c.kind, c.dt)
	}
	n := (len(c.buf) - start) / c.dt.Size()
	if c.fixed != nil {
		if kind == KindNone && c.fixed.Default != nil {
			c.buf = append(c.buf[:start], c.fixed.Default.Contiguous().HostBytes()...)
			return nil
		}
		if n != c.per {
			c.buf = c.buf[:start]
			return p.fail(i, c.name, "has %d values, the spec wants %d (shape %v)", n, c.per, tensor.Shape(c.fixed.Shape))
		}
		return nil
	}
	c.lengths = append(c.lengths, int64(n))
	return nil
}

func (c *column) appendInt(v int64) {
	if c.dt == tensor.Int32 {
		c.buf = binary.LittleEndian.AppendUint32(c.buf, uint32(int32(v)))
		return
	}
	c.buf = binary.LittleEndian.AppendUint64(c.buf, uint64(v))
}
