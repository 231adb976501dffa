package caller

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// Paging convention: a tool that pages by cursor returns
// {"items":[…],"next_cursor":"…"}; an absent or empty next_cursor ends the walk.

// CallPage fetches one page: the first when cursor is "", else the page at cursor.
func (c *Caller) CallPage(ctx context.Context, tool string, args any, cursor string, opts ...Option) (envelope.Response, error) {
	if cursor != "" {
		opts = append(opts, WithPage(envelope.Page{Cursor: cursor}))
	}
	return c.Call(ctx, tool, args, opts...)
}

// CallAll asks the tool for every page (page.all). A tool that gathers all
// pages itself — a CLI tool with a page_all_flag — answers in one result. A
// tool that answers with a next_cursor is walked page by page and its items
// merged into {"items":[…],"pages":n,"complete":…}; if a page fails the
// walk stops and the result says complete:false with the missing page named
// in missing_pages, rather than passing a partial list off as whole. A tool
// that does not page at all answers pagination_unsupported.
func (c *Caller) CallAll(ctx context.Context, tool string, args any, opts ...Option) (envelope.Response, error) {
	first, err := c.Call(ctx, tool, args, append(opts, WithPage(envelope.Page{All: true}))...)
	if err != nil {
		return first, err
	}
	items, cursor, ok := pageOf(first)
	if !ok || cursor == "" {
		if _, said := first.Get("complete"); said {
			return first, nil
		}
		data, err := wire.Completion{Complete: true}.Apply(first.Data)
		if err != nil {
			return first, nil
		}
		return envelope.Response{ID: first.ID, Success: true, Data: data}, nil
	}
	pages := 1
	completion := wire.Completion{Complete: true}
	seen := map[string]bool{}
	for cursor != "" {
		if seen[cursor] {
			// A tool that hands back a cursor it gave before would be
			// walked forever; what was gathered is honest but not whole.
			completion = wire.Completion{MissingPages: []string{fmt.Sprintf("cursor %s: the tool returned this cursor twice; the walk stopped to avoid a loop", cursor)}}
			break
		}
		seen[cursor] = true
		resp, err := c.CallPage(ctx, tool, args, cursor, opts...)
		if err != nil {
			p := c.problems.Rebase(envelope.AsProblem(err, envelope.CodeInternal))
			completion = wire.Completion{MissingPages: []string{fmt.Sprintf("cursor %s: %s: %s", cursor, p.Code, p.Error())}}
			break
		}
		more, next, ok := pageOf(resp)
		if !ok {
			completion = wire.Completion{MissingPages: []string{fmt.Sprintf("cursor %s: the page has no items array", cursor)}}
			break
		}
		items = append(items, more...)
		cursor = next
		pages++
	}
	merged, _ := json.Marshal(map[string]any{"items": items, "pages": pages})
	data, err := completion.Apply(merged)
	if err != nil {
		p := c.problems.New(envelope.CodeInternal, err.Error())
		return envelope.ProblemResponse(first.ID, p), p
	}
	return envelope.Response{ID: first.ID, Success: true, Data: data}, nil
}

// pageOf reads the paging convention's items and next_cursor.
func pageOf(r envelope.Response) (items []json.RawMessage, next string, ok bool) {
	raw, has := r.Get("items")
	if !has || json.Unmarshal(raw, &items) != nil {
		return nil, "", false
	}
	if c, has := r.Get("next_cursor"); has {
		_ = json.Unmarshal(c, &next)
	}
	return items, next, true
}
