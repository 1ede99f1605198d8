package exchange

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Shuffle files live at
//
//	<WorkDir>/<job>/s<stage>-<first input partition>-<unique>.arrow
//
// in the Arrow IPC file format, buffers compressed as Env.Compression says,
// one file per task: every batch of every input and output partition the
// task runs, in the order written, each partition's batches listed by
// index in its rpc.PartitionLocation (the format's footer gives random
// access to them). The file format (not the stream format) is used for
// that, and because its footer makes a truncated file unreadable instead
// of silently short. Every task attempt creates a file of its own name, so
// nothing is renamed or replaced: readers learn a file's name only from
// the locations its task reported after it finished the file, and a
// re-run's file never touches the one an earlier attempt left to other
// partitions' readers. Files are not synced to disk: a file outlives its
// writer's process in the page cache, and what a machine crash loses, the
// scheduler recomputes with the lost executor's other output (Spark's
// shuffle files are not synced either). Syncing each file cost the
// blocking mode about a tenth of its time on the 22 TPC-H queries.
//
// A job has one directory, and a task one file, not a directory per stage
// and a file per input and output partition (Spark's sort shuffle, not
// its hash shuffle): creating an inode and deleting it are what a shuffle
// file costs most besides its bytes, a directory most of all (far more
// than looking up one that exists; see docs/architecture.md).

// ErrInvalidJobID is the error (under errors.Is) for a job id that cannot
// name a job: the caller's mistake, not the executor's.
var ErrInvalidJobID = errors.New("invalid job id")

// validJobID rejects job ids that are not a single, ordinary path element:
// they name directories under the work dir, and a ticket is untrusted input.
func validJobID(job string) error {
	if job == "" || job == "." || job == ".." || strings.ContainsAny(job, `/\`) || strings.ContainsRune(job, 0) {
		return fmt.Errorf("%w %q", ErrInvalidJobID, job)
	}
	return nil
}

func jobDir(workDir, job string) string { return filepath.Join(workDir, job) }

// shuffleFilePrefix starts the names of the files of stage's task whose
// first input partition is first.
func shuffleFilePrefix(stage, first int) string {
	return "s" + strconv.Itoa(stage) + "-" + strconv.Itoa(first)
}

// shuffleFileName matches the names of shuffle files (final locations
// give clients a name instead of a path); its group is the stage.
var shuffleFileName = regexp.MustCompile(`^s([0-9]+)-[0-9]+-[0-9]+\.arrow$`)

// isStageFile reports whether name is a shuffle file of stage.
func isStageFile(name string, stage int) bool {
	m := shuffleFileName.FindStringSubmatch(name)
	return m != nil && m[1] == strconv.Itoa(stage)
}

// stageFile resolves path, a shuffle file's path or (as clients are
// given it) its name, against job's directory under workDir, and reports
// whether it is a file of stage directly in that directory.
func stageFile(workDir, job string, stage int, path string) (string, bool) {
	dir := filepath.Clean(jobDir(workDir, job))
	if shuffleFileName.MatchString(path) {
		path = filepath.Join(dir, path)
	}
	path = filepath.Clean(path)
	return path, filepath.Dir(path) == dir && isStageFile(filepath.Base(path), stage)
}

// fileWriter writes one shuffle file.
type fileWriter struct {
	path    string
	f       *os.File
	buf     *bufio.Writer
	size    *countingWriter // every byte the IPC writer wrote
	w       *ipc.FileWriter
	batches int32
}

// shuffleWriteBuffer is how much of a shuffle file is gathered before a
// write(2): the IPC writer writes each batch's message header, every
// buffer and its padding separately, some 60 writes for a batch of ten
// columns. A large write passes straight through.
const shuffleWriteBuffer = 32 << 10

// createShuffleFile starts a file in dir named prefix-<random>.arrow
// (os.CreateTemp's numbers, which shuffleFileName matches), creating dir
// when it is missing.
func createShuffleFile(dir, prefix string, schema *arrow.Schema, alloc memory.Allocator, c Compression) (*fileWriter, error) {
	// The job's directory exists for all but its first file here: create
	// it only when the file cannot be.
	pattern := prefix + "-*.arrow"
	f, err := os.CreateTemp(dir, pattern)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating shuffle directory: %w", err)
		}
		f, err = os.CreateTemp(dir, pattern)
	}
	if err != nil {
		return nil, fmt.Errorf("creating shuffle file: %w", err)
	}
	buf := bufio.NewWriterSize(f, shuffleWriteBuffer)
	size := &countingWriter{w: buf}
	w, err := ipc.NewFileWriter(size, append(c.ipcOptions(), ipc.WithSchema(schema), ipc.WithAllocator(alloc))...)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("starting shuffle file %s: %w", f.Name(), err)
	}
	return &fileWriter{path: f.Name(), f: f, buf: buf, size: size, w: w}, nil
}

// write appends b, returning its index in the file and the bytes it took.
func (f *fileWriter) write(b arrow.RecordBatch) (int32, int64, error) {
	before := f.size.n
	if err := f.w.Write(b); err != nil {
		return 0, 0, fmt.Errorf("writing shuffle file %s: %w", f.path, err)
	}
	f.batches++
	return f.batches - 1, f.size.n - before, nil
}

// commit finishes the file, returning its size.
func (f *fileWriter) commit() (int64, error) {
	err := f.w.Close()
	if err == nil {
		err = f.buf.Flush()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.path)
		return 0, fmt.Errorf("finishing shuffle file %s: %w", f.path, err)
	}
	return f.size.n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// abort discards the file.
func (f *fileWriter) abort() {
	f.w.Close()
	f.f.Close()
	os.Remove(f.path)
}

// batchesOf checks a location's batch indices against its file: none
// means every batch (a file of one partition).
func batchesOf(r *ipc.FileReader, want []int32) ([]int, error) {
	return batchIndexes(r.NumRecords(), want)
}

// batchIndexes checks want against an output of n batches: none means
// every batch.
func batchIndexes(n int, want []int32) ([]int, error) {
	if len(want) == 0 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := make([]int, len(want))
	for i, b := range want {
		if b < 0 || int(b) >= n {
			return nil, fmt.Errorf("no batch %d (the output has %d)", b, n)
		}
		out[i] = int(b)
	}
	return out, nil
}

// openShuffleFile opens a shuffle file for reading; the caller closes both
// the reader and the file.
func openShuffleFile(path string, alloc memory.Allocator) (*os.File, *ipc.FileReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(alloc))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("reading shuffle file %s: %w", path, err)
	}
	return f, r, nil
}

// jobDirName matches the directories shuffle files are written under: one
// per job, named by the scheduler's job ids (128 random bits in hex; also
// the older form, an 8-hex-digit scheduler prefix, a dash and a counter,
// so that an upgraded executor still clears what an older one left).
var jobDirName = regexp.MustCompile(`^([0-9a-f]{32}|[0-9a-f]{8}-[0-9]+)$`)

// detachedPrefix starts the name a job's directory is renamed to when its
// data is removed, until its files are deleted.
const detachedPrefix = ".removed-"

// detachJobDir renames the job's directory to a name no reader or writer
// of the job uses, and returns that name ("" when the job has no
// directory). A rename is one metadata update however many files the job
// wrote, while deleting them costs one per file (0.35 ms each on the ext4
// disk the TPC-DS figures come from: 50 ms for q64's); the client that
// releases a job waits for the first only, and the files are deleted
// after.
func detachJobDir(workDir, job string) (string, error) {
	dir := jobDir(workDir, job)
	detached := filepath.Join(workDir, detachedPrefix+job+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	err := os.Rename(dir, detached)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		// The rename is an optimization: delete in place.
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
		return "", nil
	}
	return detached, nil
}

// RemoveStaleJobs removes every job directory under workDir: at an
// executor's start, what they hold belongs to jobs of an earlier process,
// which no scheduler can read from this one any more (a scheduler that
// still wants it re-runs the producers). Other entries of workDir are left
// alone. It returns how many directories and bytes it removed.
func RemoveStaleJobs(workDir string) (dirs int, bytes int64, err error) {
	entries, err := os.ReadDir(workDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading work dir %s: %w", workDir, err)
	}
	var errs []error
	for _, e := range entries {
		// Directories of removed jobs whose deletion the process did not
		// finish go too.
		name, detached := strings.CutPrefix(e.Name(), detachedPrefix)
		if detached {
			if i := strings.LastIndexByte(name, '-'); i > 0 {
				name = name[:i]
			}
		}
		if !e.IsDir() || !jobDirName.MatchString(name) {
			continue
		}
		dir := filepath.Join(workDir, e.Name())
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil {
					bytes += info.Size()
				}
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		dirs++
	}
	return dirs, bytes, errors.Join(errs...)
}

// JobDirs returns the jobs with a directory under workDir whose newest
// entry was modified more than olderThan before now (every job's with
// olderThan 0): what an executor's sweep asks the scheduler about.
func JobDirs(workDir string, olderThan time.Duration, now time.Time) ([]string, error) {
	entries, err := os.ReadDir(workDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading work dir %s: %w", workDir, err)
	}
	var jobs []string
	for _, e := range entries {
		if !e.IsDir() || !jobDirName.MatchString(e.Name()) {
			continue
		}
		if olderThan > 0 {
			var newest time.Time
			_ = filepath.WalkDir(filepath.Join(workDir, e.Name()), func(_ string, d fs.DirEntry, err error) error {
				if err == nil {
					if info, err := d.Info(); err == nil && info.ModTime().After(newest) {
						newest = info.ModTime()
					}
				}
				return nil
			})
			if now.Sub(newest) <= olderThan {
				continue
			}
		}
		jobs = append(jobs, e.Name())
	}
	return jobs, nil
}
