package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// Locations is the set of directories a server process may read tables
// from. A scheduler or executor serving other users must not open
// whatever path a statement names (/etc/passwd, a key file, /proc): the
// standalone processes allow only the directories given with
// --allowed-locations, and none without it. The shell's own engine and
// its embedded cluster read the user's files with the user's rights, so
// they set no Locations and every path is allowed.
type Locations struct {
	dirs []string // absolute, symlinks resolved
	// urls are allowed object store prefixes, s3://bucket/ or
	// s3://bucket/prefix/ (always ending in a slash).
	urls []string
}

// AllowedLocationsFlag names the flag that sets a server's Locations, for
// the errors that point at it.
const AllowedLocationsFlag = "--allowed-locations DIR|s3://BUCKET/PREFIX[,...]"

// NewLocations resolves dirs (absolute, symlinks followed); each must be
// an existing directory, or an s3://bucket/prefix URL allowing the objects
// under that prefix (s3://bucket: the whole bucket). No dirs allows no
// location at all.
func NewLocations(dirs []string) (*Locations, error) {
	l := &Locations{}
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" {
			continue
		}
		if strings.Contains(d, "://") {
			if !IsS3(d) {
				return nil, fmt.Errorf("allowed location %s: only local directories and s3:// URLs can be allowed", d)
			}
			bucket, key, err := parseS3(d)
			if err != nil {
				return nil, fmt.Errorf("allowed location %s: %w", d, err)
			}
			if IsGlob(key) || strings.Contains("/"+key+"/", "/../") {
				return nil, fmt.Errorf("allowed location %s: a prefix, not a pattern", d)
			}
			u := "s3://" + bucket + "/" + strings.TrimSuffix(key, "/")
			l.urls = append(l.urls, strings.TrimSuffix(u, "/")+"/")
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("allowed location %s: %w", d, err)
		}
		resolved, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("allowed location %s: %w", d, err)
		}
		st, err := os.Stat(resolved)
		if err != nil {
			return nil, fmt.Errorf("allowed location %s: %w", d, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("allowed location %s is not a directory", d)
		}
		l.dirs = append(l.dirs, resolved)
	}
	return l, nil
}

// restricted is this process's Locations (nil: every path allowed). It is
// process-wide because it says what the process may read, whichever
// session or task asks: set once at start by the server commands.
var restricted atomic.Pointer[Locations]

// RestrictLocations makes every table file this process opens from now on
// pass l's check (nil lifts the restriction).
func RestrictLocations(l *Locations) { restricted.Store(l) }

// ErrLocationNotAllowed is wrapped by the errors of paths outside the
// allowed locations.
var ErrLocationNotAllowed = errors.New("location not allowed")

// systemDirs hold pseudo-files (process memory and command lines, kernel
// state, devices) that are never table data, even under an allowed "/".
var systemDirs = []string{"/proc", "/sys", "/dev"}

// checkAllowed refuses a path outside this process's allowed locations.
// The path is resolved first (absolute, symlinks followed), so neither
// "../" nor a link out of an allowed directory gets past; a path that does
// not resolve (it does not exist) is checked as written, so the answer
// does not reveal whether a file outside exists.
func checkAllowed(path string) error {
	l := restricted.Load()
	if l == nil {
		return nil
	}
	if IsS3(path) {
		return l.checkURL(path)
	}
	if len(l.dirs) == 0 {
		return fmt.Errorf("%s: %w: this server reads no table files unless started with %s naming the directories tables may be read from",
			path, ErrLocationNotAllowed, AllowedLocationsFlag)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		resolved = filepath.Clean(abs)
	}
	for _, d := range systemDirs {
		if inside(d, resolved) {
			return fmt.Errorf("%s: %w: system files are never table data", path, ErrLocationNotAllowed)
		}
	}
	for _, d := range l.dirs {
		if inside(d, resolved) {
			return nil
		}
	}
	return fmt.Errorf("%s: %w: it is outside the directories this server allows (%s)", path, ErrLocationNotAllowed, AllowedLocationsFlag)
}

// inside says whether path is dir or lies under it (both clean and
// absolute).
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// CheckAllowed refuses a path outside this process's allowed locations
// (see RestrictLocations): writes check their target directory with it,
// so a server writes only where it may read.
func CheckAllowed(path string) error { return checkAllowed(path) }

// checkURL refuses an s3:// location outside the allowed prefixes. A
// prefix allows what lies under it as a folder: s3://b/data/ allows
// s3://b/data/x.parquet and s3://b/data itself, not s3://b/database/.
// Keys holding ".." are refused outright: some stores normalize them.
func (l *Locations) checkURL(loc string) error {
	bucket, key, err := parseS3(loc)
	if err != nil {
		return err
	}
	if strings.Contains("/"+key+"/", "/../") {
		return fmt.Errorf("%s: %w: \"..\" in an object key", loc, ErrLocationNotAllowed)
	}
	u := "s3://" + bucket + "/" + key
	for _, p := range l.urls {
		if strings.HasPrefix(u, p) || u+"/" == p {
			return nil
		}
	}
	if len(l.urls) == 0 {
		return fmt.Errorf("%s: %w: this server reads no object store locations unless started with %s naming the s3:// prefixes tables may be read from",
			loc, ErrLocationNotAllowed, AllowedLocationsFlag)
	}
	return fmt.Errorf("%s: %w: it is outside the object store prefixes this server allows (%s)", loc, ErrLocationNotAllowed, strings.Join(l.urls, ", "))
}
