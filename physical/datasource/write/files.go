package write

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/physical"
)

// Spec says where and how a write (COPY TO, CREATE TABLE AS, INSERT)
// puts its files. It travels with FileSink and WriteCommit to executors.
type Spec struct {
	// Dir is the target directory: an absolute local path, or an s3://
	// URL naming a folder (without a trailing slash).
	Dir string
	// Format is "parquet" or "csv".
	Format string
	// Header and Delimiter lay out CSV files.
	Header    bool
	Delimiter rune
	// Names are the written column names, in input order.
	Names []string
	// PartitionBy are input column indices: rows are written under
	// name=value/ directories, one level per column. The columns stay in
	// the files too, so the directory reads back whole without knowing
	// about the layout.
	PartitionBy []int
	// WriteID names every file of this write, so its files never collide
	// with another write's and its leftovers can be found.
	WriteID string
	// Overwrite: at commit, every file under Dir that this write did not
	// produce is removed (COPY and CREATE TABLE with OVERWRITE).
	Overwrite bool
	// Mark is set by the statements that rewrite a table (DELETE,
	// UPDATE): the input has one column more than Names, a boolean that
	// marks the rows the statement changes, and the write's count is of
	// the marked rows. MarkDeleted rows are not written; MarkUpdated rows
	// are, like the others.
	Mark string
}

// The values of Spec.Mark.
const (
	MarkDeleted = "deleted"
	MarkUpdated = "updated"
)

// parquetRowGroupRows is the row count of a written Parquet row group:
// large enough for good compression and few footer entries, small enough
// that a file of a few million rows still splits across scan partitions.
const parquetRowGroupRows = 122880

// NewID returns a fresh random write ID.
func NewID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// tempPrefix starts the name of every temporary file of the write: the
// dot hides it from directory listings, and its name ends without the
// format's extension, so a scan of the directory never reads it.
func (s *Spec) tempPrefix() string { return ".tmp-" + s.WriteID + "-" }

func (s *Spec) ext() string {
	if s.Format == "csv" {
		return ".csv"
	}
	return ".parquet"
}

// finalName is the committed name of the k-th file written by the task
// for partition p: the same for every attempt of that task, so a retried
// task's file replaces, never duplicates, its predecessor's.
func (s *Spec) finalName(p, k int) string {
	return fmt.Sprintf("part-%s-%05d-%d%s", s.WriteID, p, k, s.ext())
}

// tempName is the name an attempt writes the file under before commit;
// nonce tells attempts apart.
func (s *Spec) tempName(p, k int, nonce string) string {
	return fmt.Sprintf("%s%05d-%d-%s", s.tempPrefix(), p, k, nonce)
}

// checkTarget refuses a target directory this process may not write:
// writes obey the same allowed locations as reads.
func (s *Spec) checkTarget() error {
	if s.remote() {
		return s.checkObjectTarget()
	}
	if !filepath.IsAbs(s.Dir) {
		return fmt.Errorf("write target %q is not an absolute path", s.Dir)
	}
	if err := catalog.CheckAllowed(s.Dir); err != nil {
		return err
	}
	// A directory still to be created is checked as written, so a link on
	// the way (allowed/link -> /etc, target allowed/link/new) must be
	// followed here: resolve the deepest part that exists.
	existing, rest := filepath.Clean(s.Dir), ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return nil
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("write target %s: %w", s.Dir, err)
	}
	return catalog.CheckAllowed(filepath.Join(resolved, rest))
}

// within reports whether path lies under the target directory (a plan's
// file names are checked before anything is renamed or removed).
func (s *Spec) within(path string) bool {
	if s.remote() {
		return s.withinFolder(path)
	}
	rel, err := filepath.Rel(s.Dir, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel)
}

// hiveValue escapes a partition value for a directory name as Hive does:
// every byte outside [A-Za-z0-9._-] becomes %XX, so no value can name
// another directory ("../x" becomes "..%2Fx"). NULL is written NULL, as
// DuckDB does.
func hiveValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	// The value follows "name=", so even "" or ".." names a directory of
	// its own. The text NULL is escaped, so that readers of Hive
	// partitions (DuckDB) do not take it for a NULL.
	if v == "NULL" {
		return "%4EULL"
	}
	return b.String()
}

// fileWriter writes one output file.
type fileWriter interface {
	write(b arrow.RecordBatch) error
	// buffered is how many bytes the writer holds in memory.
	buffered() int64
	close() error
}

// openFileWriter returns a writer of the spec's format whose bytes go to
// target.
func openFileWriter(spec *Spec, target fileTarget, schema *arrow.Schema, mem memory.Allocator) (fileWriter, error) {
	if spec.Format == "csv" {
		delim := spec.Delimiter
		if delim == 0 {
			delim = ','
		}
		w := csv.NewWriter(target, schema, csv.WithComma(delim), csv.WithHeader(spec.Header), csv.WithNullWriter(""))
		return &csvFileWriter{t: target, w: w}, nil
	}
	props := parquet.NewWriterProperties(
		parquet.WithAllocator(mem),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStats(true),
		// Dictionaries for every column, as DuckDB writes: a column
		// with many distinct values falls back to plain pages. Without
		// them for numbers and dates a lineitem copy took 30% less CPU
		// but its files were 16% larger and q1 read them 15% slower;
		// files are read more often than written.
		parquet.WithDictionaryDefault(true),
		// Decimals of up to 18 digits as INT32/INT64, as sluice's own
		// TPC-H writer stores them: smaller, and much cheaper to decode
		// than big-endian fixed-length bytes.
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows),
		// A page index (each page's min/max and first row), as Spark
		// writes: a reader filtering on a column the data is sorted or
		// clustered by skips the pages that cannot match.
		parquet.WithPageIndexEnabled(true),
	)
	w, err := pqarrow.NewFileWriter(schema, target, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		target.discard()
		return nil, fmt.Errorf("parquet writer for %s: %w", target.name(), err)
	}
	return &parquetFileWriter{w: w, t: target}, nil
}

type parquetFileWriter struct {
	w *pqarrow.FileWriter
	t fileTarget
}

func (p *parquetFileWriter) write(b arrow.RecordBatch) error { return p.w.WriteBuffered(b) }
func (p *parquetFileWriter) buffered() int64 {
	return p.w.RowGroupTotalBytesWritten() + p.t.pending()
}

// close writes the footer and closes the target (pqarrow closes its sink).
func (p *parquetFileWriter) close() error { return p.w.Close() }

type csvFileWriter struct {
	t fileTarget
	w *csv.Writer
}

func (c *csvFileWriter) write(b arrow.RecordBatch) error { return c.w.Write(b) }
func (c *csvFileWriter) buffered() int64                 { return c.t.pending() }

func (c *csvFileWriter) close() error {
	c.w.Flush()
	err := c.w.Error()
	if cerr := c.t.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileTarget is where a written file's bytes go until the write commits:
// a local file under a temporary name, or an object upload left open.
type fileTarget interface {
	io.WriteCloser
	// name is the file's temporary name, for errors.
	name() string
	// pending is how many bytes the target holds in memory.
	pending() int64
	// ref, after a successful Close, is what the commit needs to publish
	// the file (physical.CommitFile.Temp).
	ref() string
	// drop makes the target throw away what it is written from now on,
	// before a failed file's writer is closed.
	drop()
	// discard drops what was written, closed or not.
	discard()
}

// localTarget is a local file created under its temporary name.
type localTarget struct {
	f      *os.File
	path   string
	closed bool
}

func createLocalTarget(path string) (*localTarget, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &localTarget{f: f, path: path}, nil
}

func (t *localTarget) Write(p []byte) (int, error) { return t.f.Write(p) }
func (t *localTarget) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	return t.f.Close()
}
func (t *localTarget) name() string   { return t.path }
func (t *localTarget) pending() int64 { return 0 }
func (t *localTarget) ref() string    { return t.path }
func (t *localTarget) drop()          {}
func (t *localTarget) discard() {
	_ = t.Close()
	_ = os.Remove(t.path)
}

// CommitFiles commits a write that succeeded: it renames each file to its
// final name and, with Overwrite, then removes whatever else the directory
// held. Renaming is the write's one visible step, done once, by the
// scheduler (or the in-process session) after the job's result is
// complete; a commit repeated after a crash finds the renames done.
func CommitFiles(spec *Spec, files []physical.CommitFile) error {
	if err := spec.checkTarget(); err != nil {
		return err
	}
	if spec.remote() {
		return commitObjects(spec, files)
	}
	for _, f := range files {
		if err := commitFile(spec, f.Temp, f.Final); err != nil {
			return err
		}
	}
	if spec.Overwrite {
		return removeOthers(spec)
	}
	return nil
}

// commitFile renames a written temporary file to its final name. A
// retried commit finds the rename already done: that is success. The
// names come from executors' reports, so they are checked to be files of
// this write, in a directory inside the allowed locations.
func commitFile(spec *Spec, temp, final string) error {
	if !spec.within(temp) || !spec.within(final) || filepath.Dir(temp) != filepath.Dir(final) ||
		!strings.HasPrefix(filepath.Base(temp), spec.tempPrefix()) || !strings.HasPrefix(filepath.Base(final), "part-"+spec.WriteID+"-") {
		return fmt.Errorf("commit: %s -> %s is not a file of write %s under %s", temp, final, spec.WriteID, spec.Dir)
	}
	if err := catalog.CheckAllowed(filepath.Dir(final)); err != nil {
		return err
	}
	err := os.Rename(temp, final)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(final); serr == nil {
			return nil
		}
	}
	return fmt.Errorf("commit %s: %w", final, err)
}

// RemoveLeftovers removes every temporary file of the write under
// its directory (attempts that failed, were cancelled or lost to a retry)
// and, when failed, the write's committed files and the directories it
// left empty, the target included. Called once the job has ended; errors
// name the first file that could not be removed.
func RemoveLeftovers(spec *Spec, failed bool) error {
	if spec.WriteID == "" {
		return nil
	}
	if spec.remote() {
		return removeObjectLeftovers(spec, failed)
	}
	if !filepath.IsAbs(spec.Dir) {
		return nil
	}
	var first error
	var dirs []string
	err := filepath.WalkDir(spec.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, spec.tempPrefix()) || failed && strings.HasPrefix(name, "part-"+spec.WriteID+"-") {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
				first = err
			}
		}
		return nil
	})
	if err != nil && first == nil {
		first = err
	}
	if failed {
		// The partition directories (name=value) and the target itself,
		// deepest first; Remove refuses a directory that is not empty, so
		// only what is left empty goes.
		for i := len(dirs) - 1; i >= 0; i-- {
			if dirs[i] == spec.Dir || strings.Contains(filepath.Base(dirs[i]), "=") {
				_ = os.Remove(dirs[i])
			}
		}
	}
	return first
}

// removeOthers removes, under the target directory, every file and
// directory that holds nothing of this write: what OVERWRITE replaces.
func removeOthers(spec *Spec) error {
	var dirs []string
	err := filepath.WalkDir(spec.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == spec.Dir {
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, "part-"+spec.WriteID+"-") || strings.HasPrefix(name, spec.tempPrefix()) {
			return nil
		}
		return os.Remove(p)
	})
	if err != nil {
		return fmt.Errorf("overwrite %s: %w", spec.Dir, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // only empty ones go
	}
	return nil
}

// RemoveReplaced removes, once a table rewrite (DELETE, UPDATE) has
// committed its files, the files it replaces: the ones the table had when
// the statement was planned, which its query read. Each must be inside
// the write's directory; one already gone (a repeated call) is no error.
// Files added since (another statement's INSERT) stay.
func RemoveReplaced(spec *Spec, files []string) error {
	for _, f := range files {
		if !spec.within(f) || strings.HasPrefix(path.Base(f), "part-"+spec.WriteID+"-") {
			return fmt.Errorf("%s is not a file the rewrite of %s replaces", f, spec.Dir)
		}
	}
	if spec.remote() {
		if err := catalog.RemoveS3Objects(context.Background(), files); err != nil {
			return fmt.Errorf("removing the replaced files of %s: %w", spec.Dir, err)
		}
		return nil
	}
	for _, f := range files {
		if err := catalog.CheckAllowed(filepath.Dir(f)); err != nil {
			return err
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the replaced file %s: %w", f, err)
		}
	}
	// Partition directories the rewrite left empty go too (a row's
	// partition value can change, or all its rows be deleted).
	for _, f := range files {
		for dir := filepath.Dir(f); dir != spec.Dir && spec.within(dir); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break // not empty
			}
		}
	}
	return nil
}

// CheckTarget checks, before a write starts, that its directory may
// be written: inside the allowed locations, not a file, and (unless the
// write appends or overwrites) empty or absent.
func CheckTarget(spec *Spec, appendTo bool, statement string) error {
	if err := spec.checkTarget(); err != nil {
		return err
	}
	if spec.remote() {
		return checkObjectWriteTarget(spec, appendTo, statement)
	}
	if filepath.Dir(spec.Dir) == spec.Dir {
		return fmt.Errorf("%s: refusing to write to the root directory %s", statement, spec.Dir)
	}
	st, err := os.Stat(spec.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s exists and is not a directory; the target of a write is a directory of files", statement, spec.Dir)
	}
	if appendTo || spec.Overwrite {
		return nil
	}
	d, err := os.Open(spec.Dir)
	if err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	defer d.Close()
	if _, err := d.Readdirnames(1); err == nil {
		return fmt.Errorf("%s: directory %s is not empty; %s to replace its contents", statement, spec.Dir, overwriteHint(statement))
	} else if !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", statement, err)
	}
	return nil
}
