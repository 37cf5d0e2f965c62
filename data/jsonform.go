package data

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
)

// The JSON form of records used by the tfrecord tool and the conformance
// corpus (../shared/testdata/tfrecord/README.md): features as {"kind",
// "values"}, floats with their float32 bit patterns, bytes as base64 (up to
// 256 bytes) or a SHA-256.

// FeatureJSON returns the JSON form of a feature.
func FeatureJSON(f *Feature) map[string]any {
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
			vals[i] = float64(v)
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
func ExampleJSON(e *Example) map[string]any {
	return map[string]any{"features": featuresJSON(e.Features)}
}

// SequenceExampleJSON returns {"context": ..., "feature_lists": {name: [...]}}.
func SequenceExampleJSON(s *SequenceExample) map[string]any {
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
