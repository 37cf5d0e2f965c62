package npy_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/data/npy"
)

// A .npy file as np.save(f, np.arange(6, dtype="<f4").reshape(2, 3),
// fortran_order=True) writes it: the magic, the version, the header (a
// Python dict literal padded to 64 bytes), then column-major float32s.
// Read gives the row-major tensor.
func ExampleRead() {
	header := "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"
	for (10+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	var file bytes.Buffer
	file.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&file, binary.LittleEndian, uint16(len(header)))
	file.WriteString(header)
	for _, v := range []float32{0, 3, 1, 4, 2, 5} { // column by column
		binary.Write(&file, binary.LittleEndian, math.Float32bits(v))
	}
	x, err := npy.Read(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(x)

	// Object arrays (pickled Python objects) are refused by name.
	obj := "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n"
	bad := append([]byte("\x93NUMPY\x01\x00"), byte(len(obj)), 0)
	_, err = npy.Read(bytes.NewReader(append(bad, obj...)))
	fmt.Println(err)
	// Output:
	// [[0. 1. 2.]
	//  [3. 4. 5.]] float32[2 3]
	// npy: not a valid array: an object array (dtype "|O") holds Python objects, not numbers
}
