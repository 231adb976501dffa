// Package problems embeds the reference page of every registry code
// (docs/problems/<slug>.md) so the toolmesh command can print the page a
// Problem's type URI points at, even with no network.
//
// The pages are published with GitHub Pages from the repository's docs/
// folder under the custom domain of docs/CNAME; each page's front matter
// sets permalink /problems/<slug>/v1/, so the default problem type URI
// https://toolmesh.dev/problems/<slug>/v1 dereferences to its page.
//
// It holds the pages only: the codes are envelope's Code constants, and
// each code's status, exit code and default fix are the registry's
// (internal/codes).
package problems
