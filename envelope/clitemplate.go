package envelope

import (
	"fmt"
	"strings"

	"github.com/toolmesh/toolmesh/internal/argtemplate"
)

// validateTemplate refuses a flag pair that is not a whole token: a pair is
// two argv slots and cannot sit inside other text.
func validateTemplate(template string) error {
	for _, tok := range strings.Fields(template) {
		segs := argtemplate.ParseToken(tok)
		for _, s := range segs {
			if s.Flag != "" && len(segs) > 1 {
				return fmt.Errorf("token %q: the flag pair {arg.%s?%s} must be a whole token (it becomes two argv slots)", tok, s.Arg, s.Flag)
			}
		}
	}
	return nil
}
