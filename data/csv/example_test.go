package csv_test

import (
	"fmt"
	"strings"

	"github.com/eagerflow/eagerflow/data/csv"
	"github.com/eagerflow/eagerflow/tensor"
)

// Typed columns by header name, a missing cell filled by its default, a
// quoted comma inside a field skipped over because that column is not read.
func ExampleRead() {
	table := `name,height,age,member
"Smith, A",1.82,41,true
Jones,1.65,,false
Brown,1.74,29,true
`
	cols, err := csv.Read(strings.NewReader(table), csv.Schema{Columns: []csv.Column{
		{Name: "height"},
		{Name: "age", DType: tensor.Int32, Default: -1},
		{Name: "member", DType: tensor.Bool},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cols {
		fmt.Println(c)
	}
	// A cell that does not parse is an error naming its line and column.
	_, err = csv.Read(strings.NewReader("x\n1\nabc\n"), csv.Schema{})
	fmt.Println(err)
	// Output:
	// [1.82 1.65 1.74] float32[3]
	// [41 -1 29] int32[3]
	// [ True False  True] bool[3]
	// csv: not a valid table: line 3, column "x": "abc" is not a valid float32
}
