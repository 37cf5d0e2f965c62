package notebook

import (
	"fmt"
	"html"
	"io"
	"os"

	"github.com/janpfeifer/gonb/gonbui"
)

// Output receives the text that the functions write outside a notebook
// (os.Stdout unless set).
var Output io.Writer = os.Stdout

// InNotebook reports whether the program runs in a GoNB cell, where the
// functions display HTML and images rather than text.
func InNotebook() bool { return front.notebook() }

// frontEnd is where displays go: GoNB's front end, or a recorder in tests.
type frontEnd interface {
	notebook() bool
	// display adds an HTML output to the cell.
	display(html string)
	// update replaces the HTML of the output block id, adding it the
	// first time.
	update(id, html string)
	// newID returns a fresh output block id.
	newID() string
}

// gonb is GoNB's front end. Each display waits until GoNB has it
// (gonbui.Sync): a cell's program may end right after its last display,
// and what is still in the pipe then is lost.
type gonb struct{}

func (gonb) notebook() bool { return gonbui.IsNotebook }
func (gonb) display(s string) {
	gonbui.DisplayHTML(s)
	gonbui.Sync()
}
func (gonb) update(id, s string) {
	gonbui.UpdateHTML(id, s)
	gonbui.Sync()
}
func (gonb) newID() string { return "eagerflow_" + gonbui.UniqueId() }

var front frontEnd = gonb{}

// Flush waits until every display sent so far has reached the notebook
// (GoNB's gonbui.Sync). The package's own displays wait already; Flush is
// for what a cell sends through gonbui itself. Outside a notebook it does
// nothing.
func Flush() {
	if front.notebook() {
		gonbui.Sync()
	}
}

// text writes s and a newline to Output.
func text(s string) {
	fmt.Fprintln(Output, s)
}

// pre is s as preformatted HTML.
func pre(s string) string {
	return `<pre class="ef-text">` + html.EscapeString(s) + "</pre>"
}

// style is the CSS every display of the package carries (a notebook's
// outputs are separate documents once exported, so each brings its own).
const style = `<style>
.ef-box{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;margin:4px 0}
.ef-head{color:#333;margin-bottom:3px}
.ef-head b{color:#000}
.ef-mark{display:inline-block;padding:0 5px;margin-left:6px;border-radius:3px;background:#e8eef7;color:#1d4f91;font-size:11px}
.ef-table{border-collapse:collapse}
.ef-table td,.ef-table th{border:1px solid #ddd;padding:1px 6px;text-align:right;white-space:nowrap}
.ef-table th{background:#f5f5f5;color:#777;font-weight:normal}
.ef-table td.ef-nan{background:#fde2e1;color:#b00020;font-weight:bold}
.ef-table td.ef-inf{background:#fff0d6;color:#9a5b00;font-weight:bold}
.ef-table td.ef-gap,.ef-table th.ef-gap{color:#999;text-align:center;border-style:dashed}
.ef-sub{color:#777;margin:6px 0 2px}
.ef-error{color:#b00020;border-left:3px solid #b00020;padding-left:6px}
</style>`
