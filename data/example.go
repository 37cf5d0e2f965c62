package data

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// FeatureKind is which list a tf.train.Feature holds: KindNone (the zero
// value: an empty Feature), KindBytes, KindFloat or KindInt64.
type FeatureKind uint8

// The kinds. KindNone is a Feature with no list set (TFX writes these for
// missing CSV cells): present, and empty.
const (
	KindNone FeatureKind = iota
	KindBytes
	KindFloat
	KindInt64
)

func (k FeatureKind) String() string {
	return [...]string{"none", "bytes_list", "float_list", "int64_list"}[min(int(k), 3)]
}

// Feature is tf.train.Feature: one list of bytes, float32 or int64 values.
type Feature struct {
	Kind   FeatureKind
	Bytes  [][]byte
	Floats []float32
	Int64s []int64
}

// Len returns the number of values.
func (f *Feature) Len() int { return len(f.Bytes) + len(f.Floats) + len(f.Int64s) }

// Example is tf.train.Example: named features.
type Example struct {
	Features map[string]*Feature
}

// SequenceExample is tf.train.SequenceExample: context features and named
// lists of features (one per time step).
type SequenceExample struct {
	Context      map[string]*Feature
	FeatureLists map[string][]*Feature
}

// ErrBadProto reports a payload that is not the message it should be.
var ErrBadProto = errors.New("malformed protocol buffer")

// Wire field numbers of tensorflow/core/example/{example,feature}.proto.
const (
	fieldExampleFeatures   = 1 // Example.features
	fieldFeaturesMap       = 1 // Features.feature (map entries)
	fieldMapKey            = 1
	fieldMapValue          = 2
	fieldBytesList         = 1 // Feature.bytes_list
	fieldFloatList         = 2 // Feature.float_list
	fieldInt64List         = 3 // Feature.int64_list
	fieldListValue         = 1 // *List.value
	fieldSeqContext        = 1 // SequenceExample.context
	fieldSeqFeatureLists   = 2 // SequenceExample.feature_lists
	fieldFeatureListsMap   = 1 // FeatureLists.feature_list (map entries)
	fieldFeatureListValues = 1 // FeatureList.feature
)

// Marshal encodes e as a tf.train.Example, keys sorted (deterministic).
func (e *Example) Marshal() []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, fieldExampleFeatures, protowire.BytesType), appendFeatures(nil, e.Features))
}

// Marshal encodes s as a tf.train.SequenceExample, keys sorted.
func (s *SequenceExample) Marshal() []byte {
	var b []byte
	b = protowire.AppendTag(b, fieldSeqContext, protowire.BytesType)
	b = protowire.AppendBytes(b, appendFeatures(nil, s.Context))
	var lists []byte
	for _, name := range sortedKeys(s.FeatureLists) {
		var fl []byte
		for _, f := range s.FeatureLists[name] {
			fl = protowire.AppendTag(fl, fieldFeatureListValues, protowire.BytesType)
			fl = protowire.AppendBytes(fl, appendFeature(nil, f))
		}
		lists = appendEntry(lists, fieldFeatureListsMap, name, fl)
	}
	b = protowire.AppendTag(b, fieldSeqFeatureLists, protowire.BytesType)
	return protowire.AppendBytes(b, lists)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendEntry(b []byte, field protowire.Number, key string, value []byte) []byte {
	var e []byte
	e = protowire.AppendTag(e, fieldMapKey, protowire.BytesType)
	e = protowire.AppendString(e, key)
	e = protowire.AppendTag(e, fieldMapValue, protowire.BytesType)
	e = protowire.AppendBytes(e, value)
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, e)
}

func appendFeatures(b []byte, m map[string]*Feature) []byte {
	for _, name := range sortedKeys(m) {
		b = appendEntry(b, fieldFeaturesMap, name, appendFeature(nil, m[name]))
	}
	return b
}

// appendFeature encodes a Feature; numbers are packed, as TensorFlow writes.
func appendFeature(b []byte, f *Feature) []byte {
	var list []byte
	var field protowire.Number
	switch f.Kind {
	case KindNone:
		return b
	case KindBytes:
		field = fieldBytesList
		for _, v := range f.Bytes {
			list = protowire.AppendTag(list, fieldListValue, protowire.BytesType)
			list = protowire.AppendBytes(list, v)
		}
	case KindFloat:
		field = fieldFloatList
		if len(f.Floats) > 0 {
			packed := make([]byte, 0, 4*len(f.Floats))
			for _, v := range f.Floats {
				packed = protowire.AppendFixed32(packed, math.Float32bits(v))
			}
			list = protowire.AppendTag(list, fieldListValue, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		}
	case KindInt64:
		field = fieldInt64List
		if len(f.Int64s) > 0 {
			var packed []byte
			for _, v := range f.Int64s {
				packed = protowire.AppendVarint(packed, uint64(v))
			}
			list = protowire.AppendTag(list, fieldListValue, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		}
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, list)
}

// fields walks the fields of one message, calling fn with each field's
// number, wire type and raw value (for varints and fixed values, the
// decoded number in v). Unknown fields are the caller's to ignore.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, raw []byte, v uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrBadProto, protowire.ParseError(n))
		}
		b = b[n:]
		var raw []byte
		var v uint64
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			v = uint64(u)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			raw, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrBadProto, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, raw, v); err != nil {
			return err
		}
	}
	return nil
}

// UnmarshalExample decodes a tf.train.Example. Bytes values alias b.
func UnmarshalExample(b []byte) (*Example, error) {
	e := &Example{Features: map[string]*Feature{}}
	err := fields(b, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		if num == fieldExampleFeatures && typ == protowire.BytesType {
			return decodeFeatures(raw, e.Features)
		}
		return nil
	})
	return e, err
}

// UnmarshalSequenceExample decodes a tf.train.SequenceExample.
func UnmarshalSequenceExample(b []byte) (*SequenceExample, error) {
	s := &SequenceExample{Context: map[string]*Feature{}, FeatureLists: map[string][]*Feature{}}
	err := fields(b, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		switch {
		case num == fieldSeqContext && typ == protowire.BytesType:
			return decodeFeatures(raw, s.Context)
		case num == fieldSeqFeatureLists && typ == protowire.BytesType:
			return decodeMap(raw, fieldFeatureListsMap, func(key string, val []byte) error {
				list := []*Feature{}
				err := fields(val, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
					if num == fieldFeatureListValues && typ == protowire.BytesType {
						f, err := decodeFeature(raw)
						list = append(list, f)
						return err
					}
					return nil
				})
				s.FeatureLists[key] = list
				return err
			})
		}
		return nil
	})
	return s, err
}

// decodeMap decodes the entries of a proto map field.
func decodeMap(b []byte, field protowire.Number, fn func(key string, val []byte) error) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		if num != field || typ != protowire.BytesType {
			return nil
		}
		var key string
		var val []byte
		err := fields(raw, func(num protowire.Number, typ protowire.Type, r []byte, _ uint64) error {
			switch {
			case num == fieldMapKey && typ == protowire.BytesType:
				key = string(r)
			case num == fieldMapValue && typ == protowire.BytesType:
				val = r
			}
			return nil
		})
		if err != nil {
			return err
		}
		return fn(key, val) // a later entry with the same key wins, as in protobuf
	})
}

func decodeFeatures(b []byte, into map[string]*Feature) error {
	return decodeMap(b, fieldFeaturesMap, func(key string, val []byte) error {
		f, err := decodeFeature(val)
		into[key] = f
		return err
	})
}

// decodeFeature decodes a Feature, accepting packed and unpacked numbers.
func decodeFeature(b []byte) (*Feature, error) {
	f := &Feature{}
	return f, walkFeature(b, f)
}

// checkFeature checks a Feature's wire form as decodeFeature does, building
// nothing (for the features a Parser's spec does not name).
func checkFeature(b []byte) error { return walkFeature(b, nil) }

// walkFeature decodes a Feature into f, or only checks it when f is nil.
func walkFeature(b []byte, f *Feature) error {
	keep := f != nil
	if !keep {
		f = &Feature{}
	}
	return fields(b, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case fieldBytesList:
			f.Kind, f.Bytes, f.Floats, f.Int64s = KindBytes, [][]byte{}, nil, nil
			return fields(raw, func(num protowire.Number, typ protowire.Type, r []byte, _ uint64) error {
				if keep && num == fieldListValue && typ == protowire.BytesType {
					f.Bytes = append(f.Bytes, r)
				}
				return nil
			})
		case fieldFloatList:
			f.Kind, f.Bytes, f.Floats, f.Int64s = KindFloat, nil, []float32{}, nil
			return fields(raw, func(num protowire.Number, typ protowire.Type, r []byte, v uint64) error {
				if num != fieldListValue {
					return nil
				}
				switch typ {
				case protowire.Fixed32Type:
					if keep {
						f.Floats = append(f.Floats, math.Float32frombits(uint32(v)))
					}
				case protowire.BytesType: // packed
					if len(r)%4 != 0 {
						return fmt.Errorf("%w: packed floats of %d bytes", ErrBadProto, len(r))
					}
					for i := 0; keep && i < len(r); i += 4 {
						u, _ := protowire.ConsumeFixed32(r[i:])
						f.Floats = append(f.Floats, math.Float32frombits(u))
					}
				}
				return nil
			})
		case fieldInt64List:
			f.Kind, f.Bytes, f.Floats, f.Int64s = KindInt64, nil, nil, []int64{}
			return fields(raw, func(num protowire.Number, typ protowire.Type, r []byte, v uint64) error {
				if num != fieldListValue {
					return nil
				}
				switch typ {
				case protowire.VarintType:
					if keep {
						f.Int64s = append(f.Int64s, int64(v))
					}
				case protowire.BytesType: // packed
					for len(r) > 0 {
						u, n := protowire.ConsumeVarint(r)
						if n < 0 {
							return fmt.Errorf("%w: packed int64s: %v", ErrBadProto, protowire.ParseError(n))
						}
						if keep {
							f.Int64s = append(f.Int64s, int64(u))
						}
						r = r[n:]
					}
				}
				return nil
			})
		}
		return nil
	})
}
