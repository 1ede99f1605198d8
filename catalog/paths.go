package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
)

// IsGlob reports whether path is a glob pattern (it holds *, ? or [), as in
// FROM 'dir/*.parquet'. A path holding such characters literally cannot be
// queried by path; CREATE EXTERNAL TABLE on its directory still can.
func IsGlob(path string) bool { return strings.ContainsAny(path, "*?[") }

// listGlob returns the regular files pattern matches, sorted. Directories
// the pattern matches are skipped: a glob names files. The pattern's fixed
// leading directory is checked against the allowed locations first, so a
// pattern outside them is refused without revealing what exists there.
func listGlob(pattern string) ([]string, error) {
	if err := checkAllowed(globBase(pattern)); err != nil {
		return nil, err
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("glob %s: %w", pattern, err)
	}
	var out []string
	for _, p := range matches {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p, err)
		}
		if st.IsDir() {
			continue
		}
		if err := checkRegular(p, st); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no files match %s", pattern)
	}
	sort.Strings(out)
	return out, nil
}

// globBase is the longest leading directory of pattern without glob
// characters.
func globBase(pattern string) string {
	dir := pattern
	for IsGlob(dir) {
		dir = filepath.Dir(dir)
	}
	return dir
}

// FileFormat is the format of a table read by path: "parquet" or "csv".
type FileFormat string

// The formats a file can be read as.
const (
	FormatParquet FileFormat = "parquet"
	FormatCSV     FileFormat = "csv"
)

// ErrUnknownFormat is wrapped by the error of a path whose extension says
// neither Parquet nor CSV.
var ErrUnknownFormat = errors.New("unknown file format")

// FormatOf infers a path's format from its extension (.parquet, .csv,
// .tsv, .tbl; case-insensitive). A directory holding only one format's
// files is of that format.
func FormatOf(path string) (FileFormat, error) {
	name := strings.ToLower(path)
	switch {
	case strings.HasSuffix(name, ".parquet"), strings.HasSuffix(name, ".pq"):
		return FormatParquet, nil
	case strings.HasSuffix(name, ".csv"), strings.HasSuffix(name, ".tsv"), strings.HasSuffix(name, ".tbl"):
		return FormatCSV, nil
	}
	if IsS3(path) && !IsGlob(path) {
		if files, err := listFiles(path, ""); err == nil {
			if f, ok := filesFormat(files); ok {
				return f, nil
			}
		}
	} else if !IsGlob(path) && checkScheme(path) == nil {
		if st, err := os.Stat(path); err == nil && st.IsDir() && checkAllowed(path) == nil {
			if f, ok := dirFormat(path); ok {
				return f, nil
			}
		}
	}
	return "", fmt.Errorf("%s: %w: the name ends in neither .parquet nor .csv (use read_parquet('...') or read_csv('...') to say how to read it)", path, ErrUnknownFormat)
}

// filesFormat says which format files are, when they are all of one
// (other files are ignored).
func filesFormat(files []FileInfo) (FileFormat, bool) {
	var seen FileFormat
	for _, fi := range files {
		var f FileFormat
		switch n := strings.ToLower(fi.Path); {
		case strings.HasSuffix(n, ".parquet"):
			f = FormatParquet
		case strings.HasSuffix(n, ".csv"):
			f = FormatCSV
		default:
			continue
		}
		if seen != "" && seen != f {
			return "", false
		}
		seen = f
	}
	return seen, seen != ""
}

// dirFormat says which format a directory's table files are, when they are
// all of one.
func dirFormat(dir string) (FileFormat, bool) {
	var seen FileFormat
	mixed := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		var f FileFormat
		switch n := strings.ToLower(d.Name()); {
		case strings.HasSuffix(n, ".parquet"):
			f = FormatParquet
		case strings.HasSuffix(n, ".csv"):
			f = FormatCSV
		default:
			return nil
		}
		if seen != "" && seen != f {
			mixed = true
			return filepath.SkipAll
		}
		seen = f
		return nil
	})
	return seen, seen != "" && !mixed
}

// AbsLocation makes a local path absolute: a location is resolved where
// the statement is planned (the scheduler), once, so executors with other
// working directories open the same files. URLs are returned as given.
func AbsLocation(loc string) string {
	if strings.Contains(loc, "://") || filepath.IsAbs(loc) {
		return loc
	}
	if abs, err := filepath.Abs(loc); err == nil {
		return abs
	}
	return loc
}

// OpenPath opens the table behind a path written in a query (FROM
// 'file.parquet', read_csv('dir/*.csv')): a file, a directory of files or
// a glob pattern, relative paths resolved by AbsLocation. format "" infers
// it from the extension (FormatOf). CSV columns are inferred as CREATE
// EXTERNAL TABLE infers them. Errors name the path as written.
//
// A CSV file's delimiter is detected (DetectCSVDelimiter) unless csvOpts
// has one, and its header (DetectCSVHeader) unless headerKnown.
func OpenPath(path string, format FileFormat, csvOpts CSVOptions, headerKnown bool) (Table, error) {
	return OpenPathAs(path, format, csvOpts, headerKnown, nil)
}

// OpenPathAs is OpenPath reading CSV files with the given columns (names
// and types, in the files' order) instead of inferring them; nil infers.
// COPY table FROM reads files as the table's columns.
func OpenPathAs(path string, format FileFormat, csvOpts CSVOptions, headerKnown bool, csvSchema *arrow.Schema) (Table, error) {
	if strings.TrimSpace(path) == "" {
		return nil, fmt.Errorf("empty file path")
	}
	if err := checkScheme(path); err != nil {
		return nil, err
	}
	loc := AbsLocation(path)
	if format == "" {
		f, err := FormatOf(loc)
		if err != nil {
			return nil, renamePath(err, loc, path)
		}
		format = f
	}
	var t Table
	var err error
	switch format {
	case FormatParquet:
		t, err = OpenParquet(loc)
	case FormatCSV:
		if csvOpts.Delimiter == 0 {
			csvOpts.Delimiter, err = DetectCSVDelimiter(loc)
		}
		if err == nil && !headerKnown {
			csvOpts.Header, err = DetectCSVHeader(loc, csvOpts)
		}
		if err == nil {
			t, err = OpenCSV(loc, csvOpts, csvSchema)
		}
	default:
		return nil, fmt.Errorf("%s: %w %q", path, ErrUnknownFormat, format)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !IsS3(loc) && checkAllowed(loc) == nil {
			return nil, fmt.Errorf("file %s does not exist (paths are relative to %s)", path, workDir())
		}
		return nil, renamePath(err, loc, path)
	}
	return t, nil
}

// renamePath rewrites the absolute location in err's text back to the
// path the user wrote; errors.Is still sees what err wraps.
func renamePath(err error, loc, path string) error {
	if loc == path {
		return err
	}
	return &pathError{msg: strings.ReplaceAll(err.Error(), loc, path), err: err}
}

// pathError is an error whose text names the path as the user wrote it.
type pathError struct {
	msg string
	err error
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.err }

func workDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "the server's working directory"
	}
	return wd
}

// TableNameFor derives a table name from a file path: its base name
// without extension (for a glob pattern, the directory the pattern
// starts in: 'data/lineitem/*.parquet' -> lineitem), lower-cased, with
// every character that is not a letter, digit or underscore replaced by
// '_' and a leading digit prefixed with '_' ('data/Trips 2024.parquet' ->
// trips_2024).
func TableNameFor(path string) string {
	base := filepath.Base(path)
	if IsGlob(path) {
		base = filepath.Base(globBase(path))
	}
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" {
		return "t"
	}
	if name[0] >= '0' && name[0] <= '9' {
		name = "_" + name
	}
	return name
}
