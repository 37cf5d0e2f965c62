package idx_test

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/eagerflow/eagerflow/data/idx"
)

// An IDX file of two 2x3 unsigned-byte images, built by hand: the zero
// bytes, the type code 0x08, the rank, the big-endian dimensions, then the
// pixels. (Fashion-MNIST's files are read with idx.ReadFile the same way.)
func ExampleRead() {
	var file bytes.Buffer
	file.Write([]byte{0, 0, 0x08, 3})
	for _, d := range []uint32{2, 2, 3} {
		binary.Write(&file, binary.BigEndian, d)
	}
	file.Write([]byte{0, 50, 100, 150, 200, 250, 1, 2, 3, 4, 5, 6})
	images, err := idx.Read(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(images)

	// A file cut short is an error, not a panic.
	_, err = idx.Read(bytes.NewReader([]byte{0, 0, 0x08, 1, 0, 0, 0, 9, 1, 2}))
	fmt.Println(err)
	// Output:
	// [[[  0  50 100]
	//   [150 200 250]]
	//
	//  [[  1   2   3]
	//   [  4   5   6]]] uint8[2 2 3]
	// idx: not a valid IDX file: 9 unsigned byte elements of shape [9] need 9 bytes, the file has 2: unexpected EOF
}
