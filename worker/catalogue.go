package worker

import (
	"encoding/json"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// catalogueAnswer is a catalogue entry whose tools are the exact bytes
// SpecsDigest named.
type catalogueAnswer = wire.CatalogEntry[json.RawMessage]

// catalogue returns the worker's public specs encoded as catalogue answers
// carry them, and their digest, computed once per change of the tool set
// (a beacon every interval must not re-encode a thousand schemas).
func (w *Worker) catalogue() (tools []byte, digest string) {
	w.mu.Lock()
	version := w.toolsVersion
	w.mu.Unlock()
	w.catMu.Lock()
	defer w.catMu.Unlock()
	if w.catTools != nil && w.catVersion == version {
		return w.catTools, w.catDigest
	}
	b, _ := json.Marshal(w.Specs())
	w.catTools, w.catDigest, w.catVersion = b, wire.SpecsDigest(b), version
	return w.catTools, w.catDigest
}

// catalogueEntry is the worker's answer on its catalogue subjects.
func (w *Worker) catalogueEntry() []byte {
	tools, digest := w.catalogue()
	b, _ := json.Marshal(catalogueAnswer{WorkerID: w.cfg.ID, Tools: tools, IntervalMS: w.cfg.Liveness.Heartbeat.Milliseconds(), Specs: digest})
	return b
}
