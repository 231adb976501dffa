// Package toolsearch ranks a catalogue's tools against a query by the
// words of their names, titles, descriptions and argument names (BM25, the
// name weighted most), and keeps the index of the last catalogue searched.
// catalog.Catalog.Search, the MCP gateway's search tool and `toolmesh
// tools search` rank with it. It sits under internal/ because a program
// searches through catalog.Catalog.Search; the index is generic over how
// its holder keeps a tool (a catalog.Tool, with its spec).
package toolsearch
