package exchange

import (
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical"
	"sluice/physical/mempool"
)

// Held outputs. A blocking task's output used to be written to a shuffle
// file and read back by every reader, on the same executor or, over
// Flight, on another; on one machine nearly all of it is read on the
// executor that wrote it, right after, and the write, the read and the
// IPC encoding on both ends were most of what blocking mode cost over one
// process (measured in docs/architecture.md). So a task keeps the record
// batches it writes, as they are, while the executor's budget for held
// outputs has room, and writes a file only beyond it: the batches it held
// so far go into the file first, then the rest, and the file is the
// output.
//
// A held output looks like a file to everything else: it has a path of a
// shuffle file's form in the job's directory (no file is there), its
// locations name batches of it by index, readers on the executor take its
// batches (each retained for the reader), and the Flight service serves
// them to readers elsewhere. It is gone with the executor's process, as
// its files are when the executor is lost; RemoveJob drops it with the
// job's files.

// HeldOutputs holds the outputs an executor's blocking tasks kept in
// memory, up to a budget that is also reserved from the executor's memory
// pool (so its tasks see the memory taken).
type HeldOutputs struct {
	limit int64
	mu    sync.Mutex
	res   *mempool.Reservation // nil: no pool
	used  int64
	outs  map[string]*heldOutput // by path
	jobs  map[string]*heldJob
}

type heldOutput struct {
	job     string
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	bytes   int64
}

type heldJob struct {
	paths []string
	at    time.Time // when its last output was held
}

// NewHeldOutputs holds up to limit bytes of outputs (<= 0: none; every
// output is written to a file), each byte also reserved from pool (nil:
// no pool).
func NewHeldOutputs(limit int64, pool *mempool.Pool) *HeldOutputs {
	h := &HeldOutputs{limit: limit, outs: map[string]*heldOutput{}, jobs: map[string]*heldJob{}}
	if pool != nil {
		h.res = pool.NewReservation("held stage outputs")
	}
	return h
}

// reserve takes n bytes of the budget, or reports that there is no room.
func (h *HeldOutputs) reserve(n int64) bool {
	if h == nil || h.limit <= 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.used+n > h.limit {
		return false
	}
	if h.res != nil && h.res.Grow(n) != nil {
		return false
	}
	h.used += n
	return true
}

// unreserve gives back n bytes reserve took.
func (h *HeldOutputs) unreserve(n int64) {
	if n == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unreserveLocked(n)
}

func (h *HeldOutputs) unreserveLocked(n int64) {
	h.used -= n
	if h.res != nil {
		h.res.Shrink(n)
	}
}

// add registers batches, whose bytes were reserved, as the output at path
// of job; the output owns them from now on.
func (h *HeldOutputs) add(path, job string, schema *arrow.Schema, batches []arrow.RecordBatch, bytes int64) {
	path = filepath.Clean(path)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outs[path] = &heldOutput{job: job, schema: schema, batches: batches, bytes: bytes}
	j := h.jobs[job]
	if j == nil {
		j = &heldJob{}
		h.jobs[job] = j
	}
	j.paths = append(j.paths, path)
	j.at = time.Now()
}

// batches returns the output at path's schema and its batches want (all
// when want is empty), each retained for the caller, or false when no
// output is held at path.
func (h *HeldOutputs) batches(path string, want []int32) (*arrow.Schema, []arrow.RecordBatch, bool, error) {
	if h == nil {
		return nil, nil, false, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.outs[filepath.Clean(path)]
	if !ok {
		return nil, nil, false, nil
	}
	idx, err := batchIndexes(len(o.batches), want)
	if err != nil {
		return nil, nil, true, err
	}
	out := make([]arrow.RecordBatch, len(idx))
	for i, b := range idx {
		out[i] = o.batches[b]
		out[i].Retain()
	}
	return o.schema, out, true, nil
}

// DropJob releases every output held for job.
func (h *HeldOutputs) DropJob(job string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	j := h.jobs[job]
	delete(h.jobs, job)
	var drop []*heldOutput
	if j != nil {
		for _, p := range j.paths {
			if o := h.outs[p]; o != nil {
				drop = append(drop, o)
				delete(h.outs, p)
				h.unreserveLocked(o.bytes)
			}
		}
	}
	h.mu.Unlock()
	for _, o := range drop {
		for _, b := range o.batches {
			b.Release()
		}
	}
}

// Close releases every held output.
func (h *HeldOutputs) Close() {
	if h == nil {
		return
	}
	for _, j := range h.Jobs(0, time.Now()) {
		h.DropJob(j)
	}
}

// Jobs lists the jobs holding outputs, only those whose last output was
// held more than olderThan before now when olderThan > 0.
func (h *HeldOutputs) Jobs(olderThan time.Duration, now time.Time) []string {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for job, j := range h.jobs {
		if olderThan <= 0 || now.Sub(j.at) > olderThan {
			out = append(out, job)
		}
	}
	sort.Strings(out)
	return out
}

// Used is the bytes held now.
func (h *HeldOutputs) Used() int64 {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.used
}

// Outputs is how many outputs are held now.
func (h *HeldOutputs) Outputs() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.outs)
}

// heldNames numbers held outputs' names: past the range of the random
// numbers os.CreateTemp gives files, so a name never meets a file's.
var heldNames atomic.Uint64

// heldPath is a new held output's path in dir, named as a shuffle file
// starting with prefix.
func heldPath(dir, prefix string) string {
	n := heldNames.Add(1) + 1<<40
	return filepath.Join(dir, prefix+"-"+strconv.FormatUint(n, 10)+".arrow")
}

// heldBatchBytes is what holding b costs.
func heldBatchBytes(b arrow.RecordBatch) int64 { return physical.BatchBytes(b) }
