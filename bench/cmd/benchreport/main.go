// Command benchreport turns the raw outputs of bench/run.sh into one table:
// each benchmark the issues name, eagerflow's figure, every peer's figure
// from the same run, and eagerflow's speed relative to the best peer.
//
//	go run ./bench/cmd/benchreport                    # print the table
//	go run ./bench/cmd/benchreport -md bench/README.md -png bench/results.png
//
// It reads bench/out/{eagerflow,go-peers,python-peers}.txt (Go benchmark
// lines, three samples per round) and bench/out/machine.txt, takes the
// median of each benchmark over its samples, and with -md replaces the part of the
// Markdown file between the markers
//
//	<!-- benchreport:begin --> and <!-- benchreport:end -->
//
// (the file is rewritten atomically); with -png it draws the speed ratios
// as a bar chart. A peer without a figure is left blank.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/eagerflow/eagerflow/internal/atomicfile"
)

func main() {
	dir := flag.String("out", "bench/out", "folder with the raw outputs of bench/run.sh")
	md := flag.String("md", "", "Markdown file whose benchreport section to replace")
	png := flag.String("png", "", "bar chart to write")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("benchreport: ")

	res := results{}
	for _, f := range []string{"eagerflow.txt", "go-peers.txt", "python-peers.txt"} {
		b, err := os.ReadFile(filepath.Join(*dir, f))
		if os.IsNotExist(err) {
			log.Printf("%s: not there, its benchmarks are left blank", f)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		if err := res.parse(bytes.NewReader(b), f); err != nil {
			log.Fatal(err)
		}
	}
	machine, _ := os.ReadFile(filepath.Join(*dir, "machine.txt"))
	tab := buildTable(res, rows)
	header := fmt.Sprintf("%s: medians of %d samples per benchmark from bench/run.sh (report written %s).",
		machineLine(string(machine)), res.samples("EagerAddScalar", "ns/op"), time.Now().UTC().Format("2006-01-02"))
	tab.writeText(os.Stdout, header)
	if *md != "" {
		var sec bytes.Buffer
		tab.writeMarkdown(&sec, header)
		if err := replaceSection(*md, sec.Bytes()); err != nil {
			log.Fatal(err)
		}
	}
	if *png != "" {
		if err := tab.plot(*png); err != nil {
			log.Fatal(err)
		}
	}
}

// machineLine joins the lines of machine.txt ("# date CPU, cores", "#
// flags: ...") into one.
func machineLine(m string) string {
	var parts []string
	for _, l := range strings.Split(m, "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(l, "#")); l != "" {
			parts = append(parts, l)
		}
	}
	if len(parts) == 0 {
		return "unknown machine"
	}
	return strings.Join(parts, "; ")
}

const (
	beginMarker = "<!-- benchreport:begin -->"
	endMarker   = "<!-- benchreport:end -->"
)

// replaceSection puts sec between the markers of the Markdown file at path.
func replaceSection(path string, sec []byte) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := spliceSection(old, sec)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteFile(path, out)
}

func spliceSection(doc, sec []byte) ([]byte, error) {
	i := bytes.Index(doc, []byte(beginMarker))
	j := bytes.Index(doc, []byte(endMarker))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %s ... %s section", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(beginMarker)])
	out.WriteString("\n")
	out.Write(sec)
	out.Write(doc[j:])
	return out.Bytes(), nil
}

// writeText prints the table with aligned columns.
func (t *table) writeText(w io.Writer, header string) {
	fmt.Fprintln(w, header)
	cells := t.cells()
	width := make([]int, len(cells[0]))
	for _, r := range cells {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range cells {
		for i, c := range r {
			fmt.Fprintf(w, "%-*s  ", width[i], c)
		}
		fmt.Fprintln(w)
	}
}

// writeMarkdown writes the table as a Markdown section.
func (t *table) writeMarkdown(w io.Writer, header string) {
	fmt.Fprintf(w, "%s\n\n", header)
	cells := t.cells()
	for i, r := range cells {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(r)))
		}
	}
	fmt.Fprintln(w)
}
