package catalog

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Version identifies the files a table was opened from: a hash of their
// paths and sizes, a dash, and a hash of their modification times. Plans
// carry it with a scan's location, so that a process opening the location
// again (an executor) can tell whether it sees the files the planner saw:
// a table dropped and created again over changed files has another
// version. SameFiles compares only the first part, since copies of the
// same files on several hosts have their own modification times.
//
// It is computed once, when the table is opened: plans encode it for every
// task.
func (t *ParquetTable) Version() string { return t.version }

// Version identifies the files the table was opened from (see
// ParquetTable.Version).
func (t *CSVTable) Version() string { return t.version }

// filesVersion is the Version of files, each identified by id. An
// object's entity tag counts with its path and size: it changes whenever
// the object is written again, and is the same for every reader.
func filesVersion[F any](files []F, idOf func(F) FileInfo) string {
	h, times := fnv.New64a(), fnv.New64a()
	for _, f := range files {
		id := idOf(f)
		fmt.Fprintf(h, "%s\x00%d\n", id.Path, id.Size)
		if id.ETag != "" {
			fmt.Fprintf(h, "%s\n", id.ETag)
		}
		fmt.Fprintf(times, "%d\n", id.ModTime)
	}
	return fmt.Sprintf("%016x-%016x", h.Sum64(), times.Sum64())
}

// SameFiles reports whether two versions name the same paths with the same
// sizes, whatever their modification times.
func SameFiles(a, b string) bool {
	fa, _, _ := strings.Cut(a, "-")
	fb, _, _ := strings.Cut(b, "-")
	return fa == fb
}
