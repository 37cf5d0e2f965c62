package data

import (
	"errors"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
)

// randomExamples makes n Examples with a fixed 6-float feature, an int64
// label, a variable-length int64 list and a bytes feature; some records
// lack the optional ones.
func randomExamples(n int, seed uint64) []*Example {
	rng := tensor.NewRNG(seed)
	u := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -5, 5, n*16))
	out := make([]*Example, n)
	for i := range out {
		f := map[string]*Feature{
			"pixels": {Kind: KindFloat, Floats: u[i*16 : i*16+6]},
			"label":  {Kind: KindInt64, Int64s: []int64{int64(i % 10)}},
		}
		if i%3 != 0 {
			ids := make([]int64, i%5)
			for k := range ids {
				ids[k] = int64(i*7 + k - 20)
			}
			f["ids"] = &Feature{Kind: KindInt64, Int64s: ids}
		}
		if i%4 != 1 {
			f["raw"] = &Feature{Kind: KindBytes, Bytes: [][]byte{[]byte("ab"), []byte("c")}}
		}
		out[i] = &Example{Features: f}
	}
	return out
}

func TestParseMatchesGenericDecode(t *testing.T) {
	examples := randomExamples(40, 1)
	recs := make([][]byte, len(examples))
	for i, e := range examples {
		recs[i] = e.Marshal()
	}
	p, err := NewParser(ParseSpec{
		"pixels": FixedLen{Shape: []int{2, 3}, DType: tensor.Float32},
		"label":  FixedLen{Shape: []int{}, DType: tensor.Int32},
		"raw":    FixedLen{Shape: []int{3}, DType: tensor.Uint8, Default: tensor.FromSlice([]uint8{9, 9, 9})},
		"ids":    VarLen{DType: tensor.Int64},
		"ids2":   VarLen{DType: tensor.Int64, Padded: true, PadValue: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	// ids2 reads the same feature under another name: alias it in the data.
	for i, e := range examples {
		if f, ok := e.Features["ids"]; ok {
			e.Features["ids2"] = f
		}
		recs[i] = e.Marshal()
	}
	got, err := p.Parse(recs)
	if err != nil {
		t.Fatal(err)
	}
	var pixels []float32
	var labels []int32
	var raw []uint8
	var ids []int64
	var lengths []int64
	longest := 0
	for _, rec := range recs {
		e, err := UnmarshalExample(rec)
		if err != nil {
			t.Fatal(err)
		}
		pixels = append(pixels, e.Features["pixels"].Floats...)
		labels = append(labels, int32(e.Features["label"].Int64s[0]))
		if f, ok := e.Features["raw"]; ok {
			for _, b := range f.Bytes {
				raw = append(raw, b...)
			}
		} else {
			raw = append(raw, 9, 9, 9)
		}
		var row []int64
		if f, ok := e.Features["ids"]; ok {
			row = f.Int64s
		}
		ids = append(ids, row...)
		lengths = append(lengths, int64(len(row)))
		longest = max(longest, len(row))
	}
	check := func(name string, got, want any) {
		if !cmp.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", name, got, want)
		}
	}
	check("pixels", tensor.ToSlice[float32](got.Dense["pixels"]), pixels)
	check("pixels shape", []int(got.Dense["pixels"].Shape()), []int{40, 2, 3})
	check("labels", tensor.ToSlice[int32](got.Dense["label"]), labels)
	check("raw", tensor.ToSlice[uint8](got.Dense["raw"]), raw)
	check("ids", tensor.ToSlice[int64](got.Ragged["ids"].Values), ids)
	check("lengths", tensor.ToSlice[int64](got.Ragged["ids"].RowLengths), lengths)
	padded := got.Dense["ids2"]
	check("padded shape", []int(padded.Shape()), []int{40, longest})
	pv := tensor.ToSlice[int64](padded)
	at := 0
	for i, n := range lengths {
		for k := 0; k < longest; k++ {
			want := int64(-1)
			if k < int(n) {
				want = ids[at+k]
			}
			if pv[i*longest+k] != want {
				t.Fatalf("padded[%d][%d] = %d, want %d", i, k, pv[i*longest+k], want)
			}
		}
		at += int(n)
	}
}

func TestParseErrorsNameFeatureAndRecord(t *testing.T) {
	good := (&Example{Features: map[string]*Feature{"x": {Kind: KindFloat, Floats: []float32{1, 2}}}}).Marshal()
	cases := []struct {
		name string
		spec ParseSpec
		recs [][]byte
		msg  string
	}{
		{"missing", ParseSpec{"y": FixedLen{Shape: []int{1}, DType: tensor.Float32}}, [][]byte{good}, `record 0: feature "y": is missing`},
		{"kind", ParseSpec{"x": FixedLen{Shape: []int{2}, DType: tensor.Int64}}, [][]byte{good, good}, `record 0: feature "x": is a float_list, the spec wants int64_list`},
		{"length", ParseSpec{"x": FixedLen{Shape: []int{3}, DType: tensor.Float32}}, [][]byte{good}, `feature "x": has 2 values, the spec wants 3`},
		{"corrupt", ParseSpec{"x": VarLen{DType: tensor.Float32}}, [][]byte{good, {0x0a, 0x09, 0x0a}}, "record 1"},
	}
	for _, c := range cases {
		p, err := NewParser(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse(c.recs); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
	if _, err := NewParser(ParseSpec{"x": FixedLen{DType: tensor.Bool}}); err == nil {
		t.Error("a bool feature was accepted")
	}
	if _, err := NewParser(ParseSpec{"x": FixedLen{Shape: []int{2}, DType: tensor.Float32, Default: tensor.Zeros(tensor.Float32, 3)}}); err == nil {
		t.Error("a default of the wrong shape was accepted")
	}
	if _, err := NewParser(ParseSpec{"x": "nope"}); err == nil {
		t.Error("a bad spec entry was accepted")
	}

}

// A spec with a negative or overflowing shape is refused by NewParser, not
// by a panic in Parse; a record whose unspecified features are corrupt is
// refused by Parse as UnmarshalExample refuses it.
func TestParserRefusesWhatTheDecoderRefuses(t *testing.T) {
	for _, shape := range [][]int{{-1}, {1 << 40, 1 << 40}} {
		if _, err := NewParser(ParseSpec{"a": FixedLen{Shape: shape, DType: tensor.Float32}}); err == nil || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("shape %v: %v", shape, err)
		}
	}
	p, err := NewParser(ParseSpec{"a": FixedLen{Shape: []int{1}, DType: tensor.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	good := &Example{Features: map[string]*Feature{"a": {Kind: KindInt64, Int64s: []int64{7}}}}
	// "b" is a float list packed in 3 bytes: not a whole float.
	badFeature := protowire.AppendTag(nil, fieldFloatList, protowire.BytesType)
	badFeature = protowire.AppendBytes(badFeature, protowire.AppendBytes(protowire.AppendTag(nil, fieldListValue, protowire.BytesType), []byte{1, 2, 3}))
	entry := protowire.AppendTag(nil, fieldMapKey, protowire.BytesType)
	entry = protowire.AppendBytes(entry, []byte("b"))
	entry = protowire.AppendTag(entry, fieldMapValue, protowire.BytesType)
	entry = protowire.AppendBytes(entry, badFeature)
	features := protowire.AppendTag(nil, fieldFeaturesMap, protowire.BytesType)
	features = protowire.AppendBytes(features, entry)
	rec := append(good.Marshal(), protowire.AppendBytes(protowire.AppendTag(nil, fieldExampleFeatures, protowire.BytesType), features)...)
	if _, err := UnmarshalExample(rec); !errors.Is(err, ErrBadProto) {
		t.Fatalf("the decoder accepts the corrupt record: %v", err)
	}
	if _, err := p.Parse([][]byte{good.Marshal(), rec}); !errors.Is(err, ErrBadProto) || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("Parse of a record with a corrupt unspecified feature: %v", err)
	}
	if got, err := p.Parse([][]byte{good.Marshal()}); err != nil || tensor.ToSlice[int64](got.Dense["a"])[0] != 7 {
		t.Errorf("a good record: %v %v", got, err)
	}
}
