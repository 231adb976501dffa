// Command benchdoc writes one `toolmesh bench --json` run into
// docs/performance.md, between its `<!-- bench:begin -->` and
// `<!-- bench:end -->` markers (make docs-bench runs both).
//
// It only replaces the page's generated part: the tables themselves are
// package bench's (bench.Markdown), and so is the run.
package main
