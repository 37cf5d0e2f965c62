package data

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Event is the part of TensorBoard's Event proto (tensorflow/core/util/
// event.proto) that event files are read for: when, which step, and what
// the event carries.
type Event struct {
	WallTime     float64
	Step         int64
	What         string // "file_version", "graph_def", "summary", "meta_graph_def", ... or "" for none
	FileVersion  string
	GraphDef     []byte
	MetaGraphDef []byte
	Summary      []SummaryValue
}

// SummaryValue is one Summary.Value: a tag and the kind of value it holds
// (simple_value with its float, or tensor with dtype and shape, or
// another kind by name).
type SummaryValue struct {
	Tag         string
	Kind        string // simple_value, tensor, histo, image, audio, obsolete_old_style_histogram
	SimpleValue float32
	TensorDType int64
	TensorShape []int64
	PluginName  string
}

var eventWhat = map[protowire.Number]string{
	3: "file_version", 4: "graph_def", 5: "summary", 6: "log_message",
	7: "session_log", 8: "tagged_run_metadata", 9: "meta_graph_def",
}

var valueKinds = map[protowire.Number]string{
	2: "simple_value", 3: "obsolete_old_style_histogram", 4: "image", 5: "histo", 6: "audio", 8: "tensor",
}

// UnmarshalEvent decodes a TensorBoard Event record.
func UnmarshalEvent(b []byte) (*Event, error) {
	e := &Event{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, raw []byte, v uint64) error {
		switch num {
		case 1:
			e.WallTime = math.Float64frombits(v)
		case 2:
			e.Step = int64(v)
		case 3:
			e.What, e.FileVersion = "file_version", string(raw)
		case 4:
			e.What, e.GraphDef = "graph_def", raw
		case 9:
			e.What, e.MetaGraphDef = "meta_graph_def", raw
		case 5:
			e.What = "summary"
			return decodeSummary(raw, e)
		default:
			if w, ok := eventWhat[num]; ok {
				e.What = w
			}
		}
		return nil
	})
	return e, err
}

func decodeSummary(b []byte, e *Event) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		var sv SummaryValue
		err := fields(raw, func(num protowire.Number, typ protowire.Type, r []byte, v uint64) error {
			if k, ok := valueKinds[num]; ok {
				sv.Kind = k
			}
			switch num {
			case 1:
				sv.Tag = string(r)
			case 2:
				sv.SimpleValue = math.Float32frombits(uint32(v))
			case 8:
				return decodeTensorHeader(r, &sv)
			case 9: // SummaryMetadata: plugin_data (1) { plugin_name (1) }
				return fields(r, func(num protowire.Number, _ protowire.Type, pd []byte, _ uint64) error {
					if num != 1 {
						return nil
					}
					return fields(pd, func(num protowire.Number, _ protowire.Type, name []byte, _ uint64) error {
						if num == 1 {
							sv.PluginName = string(name)
						}
						return nil
					})
				})
			}
			return nil
		})
		e.Summary = append(e.Summary, sv)
		return err
	})
}

// decodeTensorHeader reads TensorProto's dtype (1) and tensor_shape (2),
// whose dims (2) hold sizes (1).
func decodeTensorHeader(b []byte, sv *SummaryValue) error {
	sv.TensorShape = []int64{}
	return fields(b, func(num protowire.Number, _ protowire.Type, raw []byte, v uint64) error {
		switch num {
		case 1:
			sv.TensorDType = int64(v)
		case 2:
			return fields(raw, func(num protowire.Number, _ protowire.Type, dim []byte, _ uint64) error {
				if num != 2 {
					return nil
				}
				var size int64
				err := fields(dim, func(num protowire.Number, _ protowire.Type, _ []byte, v uint64) error {
					if num == 1 {
						size = int64(v)
					}
					return nil
				})
				sv.TensorShape = append(sv.TensorShape, size)
				return err
			})
		}
		return nil
	})
}
