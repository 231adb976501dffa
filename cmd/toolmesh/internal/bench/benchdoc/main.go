package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/bench"
)

func main() {
	in := flag.String("in", "", "the bench report (toolmesh bench --json)")
	page := flag.String("page", "docs/performance.md", "the page to write the tables into")
	var info bench.RunInfo
	flag.StringVar(&info.Date, "date", "", "when the run was made")
	flag.StringVar(&info.Machine, "machine", "", "what it ran on")
	flag.StringVar(&info.Load, "load", "", "the load averages before and after")
	flag.Parse()
	if err := run(*in, *page, info); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

// run renders the report and replaces the page's generated part.
func run(in, page string, info bench.RunInfo) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	tables, err := bench.Markdown(f, info)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	const begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
	head, rest, ok1 := strings.Cut(string(old), begin)
	_, tail, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s has no %s … %s markers", page, begin, end)
	}
	return os.WriteFile(page, []byte(head+begin+"\n"+tables+end+tail), 0o644)
}
