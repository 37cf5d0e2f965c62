package data

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// The JSON form of records used by the tfrecord tool and the conformance
// corpus (../shared/testdata/tfrecord/README.md): features as {"kind",
// "values"}, floats with their float32 bit patterns, bytes as base64 (up to
// 256 bytes) or a SHA-256. JSON has no non-finite numbers: NaN and the
// infinities are the strings "NaN", "Infinity" and "-Infinity" (proto3's
// JSON mapping of floats), their bits exact as for any float.

// JSONFloat returns v as a JSON value: the number, or "NaN", "Infinity" or
// "-Infinity".
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func JSONFloat(v float64) any {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return v
}

// ParseJSONFloat reads JSONFloat's strings back; ok is false for any other
// string.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func ParseJSONFloat(s string) (v float64, ok bool) {
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// FeatureJSON returns the JSON form of a feature.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func FeatureJSON(f *Feature) map[string]any {
	if f == nil {
		return nil
	}
	switch f.Kind {
	case KindBytes:
		vals := make([]any, len(f.Bytes))
		for i, b := range f.Bytes {
			vals[i] = BytesJSON(b)
		}
		return map[string]any{"kind": "bytes_list", "values": vals}
	case KindFloat:
		vals, bits := make([]any, len(f.Floats)), make([]any, len(f.Floats))
		for i, v := range f.Floats {
			vals[i] = JSONFloat(float64(v))
			bits[i] = fmt.Sprintf("%08x", math.Float32bits(v))
		}
		return map[string]any{"kind": "float_list", "values": vals, "bits": bits}
	case KindInt64:
		vals := make([]any, len(f.Int64s))
		for i, v := range f.Int64s {
			vals[i] = v
		}
		return map[string]any{"kind": "int64_list", "values": vals}
	}
	return map[string]any{"kind": nil}
}

// BytesJSON is {"len", "b64"} for up to 256 bytes, else {"len", "sha256"}.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func BytesJSON(b []byte) map[string]any {
	if len(b) <= 256 {
		return map[string]any{"len": len(b), "b64": base64.StdEncoding.EncodeToString(b)}
	}
	sum := sha256.Sum256(b)
	return map[string]any{"len": len(b), "sha256": hex.EncodeToString(sum[:])}
}

func featuresJSON(m map[string]*Feature) map[string]any {
	out := make(map[string]any, len(m))
	for k, f := range m {
		out[k] = FeatureJSON(f)
	}
	return out
}

// ExampleJSON returns {"features": {name: feature}}.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func ExampleJSON(e *Example) map[string]any {
	if e == nil {
		return nil
	}
	return map[string]any{"features": featuresJSON(e.Features)}
}

// SequenceExampleJSON returns {"context": ..., "feature_lists": {name: [...]}}.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func SequenceExampleJSON(s *SequenceExample) map[string]any {
	if s == nil {
		return nil
	}
	lists := make(map[string]any, len(s.FeatureLists))
	for k, l := range s.FeatureLists {
		fs := make([]any, len(l))
		for i, f := range l {
			fs[i] = FeatureJSON(f)
		}
		lists[k] = fs
	}
	return map[string]any{"context": featuresJSON(s.Context), "feature_lists": lists}
}

// EventJSON returns the JSON form of an event: wall_time (and its float64
// bits), step, what, and what it carries.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func EventJSON(e *Event) map[string]any {
	if e == nil {
		return nil
	}
	out := map[string]any{
		"wall_time": JSONFloat(e.WallTime), "wall_time_bits": fmt.Sprintf("%016x", math.Float64bits(e.WallTime)),
		"step": e.Step, "what": e.What,
	}
	if e.What == "" {
		out["what"] = nil
	}
	switch e.What {
	case "file_version":
		out["file_version"] = e.FileVersion
	case "graph_def":
		out["graph_def"] = BytesJSON(e.GraphDef)
	case "meta_graph_def":
		out["meta_graph_def"] = BytesJSON(e.MetaGraphDef)
	case "summary":
		vals := make([]any, len(e.Summary))
		for i, v := range e.Summary {
			m := map[string]any{"tag": v.Tag, "value_kind": v.Kind}
			switch v.Kind {
			case "simple_value":
				m["simple_value"] = JSONFloat(float64(v.SimpleValue))
				m["simple_value_bits"] = fmt.Sprintf("%08x", math.Float32bits(v.SimpleValue))
			case "tensor":
				shape := make([]any, len(v.TensorShape))
				for j, d := range v.TensorShape {
					shape[j] = d
				}
				m["tensor_dtype"], m["tensor_shape"] = v.TensorDType, shape
			}
			if v.PluginName != "" {
				m["plugin_name"] = v.PluginName
			}
			vals[i] = m
		}
		out["summary_values"] = vals
	}
	return out
}

// Record kinds of the JSON form.
const (
	KindRaw             = "raw"
	KindExample         = "example"
	KindSequenceExample = "sequence_example"
	KindEvent           = "event"
)

// RecordJSON returns the JSON form of one record read as kind: index,
// offset, length, sha256, kind, and the decoded payload (b64 for raw
// records of at most 256 bytes). A payload that is not the kind returns
// an error wrapping ErrBadProto.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func RecordJSON(kind string, index int, offset int64, payload []byte) (map[string]any, error) {
	sum := sha256.Sum256(payload)
	out := map[string]any{"index": index, "offset": offset, "length": len(payload),
		"sha256": hex.EncodeToString(sum[:]), "kind": kind}
	switch kind {
	case KindExample:
		e, err := UnmarshalExample(payload)
		if err != nil {
			return nil, err
		}
		out["example"] = ExampleJSON(e)
	case KindSequenceExample:
		s, err := UnmarshalSequenceExample(payload)
		if err != nil {
			return nil, err
		}
		out["sequence_example"] = SequenceExampleJSON(s)
	case KindEvent:
		e, err := UnmarshalEvent(payload)
		if err != nil {
			return nil, err
		}
		out["event"] = EventJSON(e)
	default:
		out["kind"] = KindRaw
		if len(payload) <= 256 {
			out["b64"] = base64.StdEncoding.EncodeToString(payload)
		}
	}
	return out, nil
}

// GuessKind guesses how a file's records decode from its name and first
// record: TensorBoard event files by name; a payload whose only top-level
// field is a well-formed Features message is an Example, and with
// feature_lists (field 2) a SequenceExample; anything else is raw.
//
// Deprecated: the tfrecord tool's JSON form; it moves under data/cmd/tfrecord
// when this name goes (v0.3.0 at the earliest).
func GuessKind(name string, first []byte) string {
	if strings.Contains(name, "tfevents") {
		return KindEvent
	}
	if first == nil {
		return KindExample
	}
	var top []protowire.Number
	err := fields(first, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		if typ != protowire.BytesType || num > 2 {
			return ErrBadProto
		}
		top = append(top, num)
		return nil
	})
	if err != nil || len(top) == 0 {
		return KindRaw
	}
	if slices.Contains(top, 2) {
		if _, err := UnmarshalSequenceExample(first); err == nil {
			return KindSequenceExample
		}
		return KindRaw
	}
	if e, err := UnmarshalExample(first); err == nil && len(e.Features) > 0 {
		for k := range e.Features {
			if !utf8.ValidString(k) {
				return KindRaw
			}
		}
		return KindExample
	}
	return KindRaw
}
