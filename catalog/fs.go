package catalog

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// FileInfo identifies one table file as it was when the table was opened:
// a plan carries it to the processes that read the file, which refuse to
// read another version of it.
type FileInfo struct {
	// Path is a local path or an s3:// URL.
	Path string
	// Size is the file's length in bytes.
	Size int64
	// ModTime is the modification time, Unix nanoseconds.
	ModTime int64
	// ETag is an object's entity tag (which changes whenever the object
	// is written again); empty for local files.
	ETag string
}

// Remote says whether the file is read over the network (an object
// store), where every read is a request: readers then fetch whole column
// chunks rather than streaming them in small pieces.
func (f FileInfo) Remote() bool { return IsS3(f.Path) }

// RandomReader reads a table file at any offset, as Parquet readers need:
// the footer first, then the column chunks a query asks for.
type RandomReader interface {
	io.ReaderAt
	io.Seeker
	io.Closer
	// Size is the file's length.
	Size() int64
}

// fileSystem is a place where table files live: the local disk or an
// object store. Catalog and scans go through it, so the rest of the code
// does not care where a file is.
type fileSystem interface {
	// list returns the files at loc whose names end in ext (lower-case,
	// with its dot): loc itself when it names one file, every file
	// under it when it is a directory or prefix, or the files a glob
	// pattern matches. Sorted by path; an error when there are none.
	list(ctx context.Context, loc, ext string) ([]FileInfo, error)
	// openAt opens f for reads at any offset; reads fail when the file
	// is no longer the one f describes.
	openAt(ctx context.Context, f FileInfo) (RandomReader, error)
	// open streams f from its start.
	open(ctx context.Context, f FileInfo) (io.ReadCloser, error)
}

// fsFor returns the file system loc lives on. Locations with a URL scheme
// other than s3:// are refused by checkScheme before they get here.
func fsFor(loc string) fileSystem {
	if IsS3(loc) {
		return s3FS{}
	}
	return localFS{}
}

// checkScheme refuses URLs of schemes sluice cannot read.
func checkScheme(loc string) error {
	if i := strings.Index(loc, "://"); i >= 0 && !IsS3(loc) {
		return fmt.Errorf("%s: the %s:// scheme is not supported (table files are local paths or s3:// URLs)", loc, loc[:i])
	}
	return nil
}

// listFiles returns the files at path (a file, a directory or prefix, or
// a glob pattern) whose names end in ext, sorted by path.
func listFiles(path, ext string) ([]FileInfo, error) {
	if err := checkScheme(path); err != nil {
		return nil, err
	}
	return fsFor(path).list(context.Background(), path, ext)
}

// OpenFile opens a table file for reads at any offset (Parquet). A local
// file is checked to be a regular file in an allowed location first; an
// object's reads fail when the object changed since f was listed.
func OpenFile(ctx context.Context, f FileInfo) (RandomReader, error) {
	if err := checkScheme(f.Path); err != nil {
		return nil, err
	}
	return fsFor(f.Path).openAt(ctx, f)
}

// OpenStream opens a table file to read it from start to end (CSV), with
// the checks of OpenFile.
func OpenStream(ctx context.Context, f FileInfo) (io.ReadCloser, error) {
	if err := checkScheme(f.Path); err != nil {
		return nil, err
	}
	return fsFor(f.Path).open(ctx, f)
}

// localFS is the local disk.
type localFS struct{}

func (localFS) list(_ context.Context, loc, ext string) ([]FileInfo, error) {
	paths, err := listLocal(loc, ext)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, len(paths))
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p, err)
		}
		out[i] = FileInfo{Path: p, Size: st.Size(), ModTime: st.ModTime().UnixNano()}
	}
	return out, nil
}

func (localFS) openAt(_ context.Context, f FileInfo) (RandomReader, error) {
	file, err := OpenRegular(f.Path)
	if err != nil {
		return nil, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("open %s: %w", f.Path, err)
	}
	return localFile{File: file, size: st.Size(), modTime: st.ModTime().UnixNano()}, nil
}

func (localFS) open(_ context.Context, f FileInfo) (io.ReadCloser, error) {
	return OpenRegular(f.Path)
}

// localFile is an open local file, its size and modification time.
type localFile struct {
	*os.File
	size    int64
	modTime int64 // Unix nanoseconds
}

// sameAs reports whether the open file has the size and modification time
// f records.
func (f localFile) sameAs(fi FileInfo) bool { return f.size == fi.Size && f.modTime == fi.ModTime }

func (f localFile) Size() int64 { return f.size }
