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
func (t *ParquetTable) Version() string {
	ids := make([]fileID, len(t.Files))
	for i, f := range t.Files {
		ids[i] = fileID{f.Path, f.Size, f.ModTime}
	}
	return versionOf(ids)
}

// Version identifies the files the table was opened from (see
// ParquetTable.Version).
func (t *CSVTable) Version() string {
	ids := make([]fileID, len(t.Files))
	for i, f := range t.Files {
		ids[i] = fileID{f.Path, f.Size, f.ModTime}
	}
	return versionOf(ids)
}

type fileID struct {
	path        string
	size, mtime int64
}

func versionOf(ids []fileID) string {
	files, times := fnv.New64a(), fnv.New64a()
	for _, id := range ids {
		fmt.Fprintf(files, "%s\x00%d\n", id.path, id.size)
		fmt.Fprintf(times, "%d\n", id.mtime)
	}
	return fmt.Sprintf("%016x-%016x", files.Sum64(), times.Sum64())
}

// SameFiles reports whether two versions name the same paths with the same
// sizes, whatever their modification times.
func SameFiles(a, b string) bool {
	fa, _, _ := strings.Cut(a, "-")
	fb, _, _ := strings.Cut(b, "-")
	return fa == fb
}
