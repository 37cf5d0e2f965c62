package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// broadcastShapes returns the NumPy broadcast of shapes, or fails the call.
func broadcastShapes(c *eager.Call, shapes ...tensor.Shape) tensor.Shape {
	if len(shapes) == 2 && shapes[0].Equal(shapes[1]) {
		return shapes[0] // the common case allocates nothing
	}
	out, ok := broadcastAll(shapes...)
	if !ok {
		c.Fail(tensor.ErrShape, "shapes %v are not broadcastable", shapesString(shapes))
	}
	return out
}

// broadcastAll is NumPy's broadcast of shapes, and whether they
// broadcast.
func broadcastAll(shapes ...tensor.Shape) (tensor.Shape, bool) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make(tensor.Shape, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, false
			}
		}
	}
	return out, true
}

func shapesString(shapes []tensor.Shape) string {
	s := ""
	for i, sh := range shapes {
		if i > 0 {
			if i == len(shapes)-1 {
				s += " and "
			} else {
				s += ", "
			}
		}
		s += sh.String()
	}
	return s
}
