package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sluice/catalog"
)

// Warehouse is the directory under which managed tables (CREATE TABLE
// without LOCATION) keep their files, one sub-directory per table. A
// session's catalog.warehouse setting, when set, overrides it.
//
// The shell's engine and its embedded cluster use a temporary warehouse:
// a directory made on first use in the process's temporary space and
// removed by Close when the process ends, so managed tables live as long
// as the session, as in DuckDB's default in-memory database. A standalone
// scheduler is given its warehouse (--warehouse), a directory every
// executor can read and write, or has none.
type Warehouse struct {
	mu   sync.Mutex
	dir  string // the directory, once known
	temp bool   // dir is made on first use and removed by Close
}

// NewWarehouse returns the warehouse at dir (made absolute).
func NewWarehouse(dir string) (*Warehouse, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", dir, err)
	}
	return &Warehouse{dir: abs}, nil
}

// TempWarehouse returns a warehouse made on first use under the
// temporary directory and removed by Close.
func TempWarehouse() *Warehouse { return &Warehouse{temp: true} }

// Dir returns the warehouse directory, making a temporary one on first
// use.
func (w *Warehouse) Dir() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dir == "" && w.temp {
		dir, err := os.MkdirTemp("", "sluice-warehouse-")
		if err != nil {
			return "", fmt.Errorf("making the temporary warehouse directory: %w", err)
		}
		w.dir = dir
	}
	return w.dir, nil
}

// Describe says where the warehouse is without making it: its directory,
// or that a temporary one is made on first use.
func (w *Warehouse) Describe() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dir == "" {
		return "(a temporary directory, made by the first CREATE TABLE and removed when the process exits)"
	}
	return w.dir
}

// Close removes a temporary warehouse and every managed table's files in
// it; a warehouse given by its directory is left alone.
func (w *Warehouse) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.temp || w.dir == "" {
		return nil
	}
	err := os.RemoveAll(w.dir)
	w.dir = ""
	return err
}

// validWarehouse checks a catalog.warehouse value: empty (the engine's
// own warehouse) or an absolute local directory, which need not exist
// yet. A relative path would mean different directories to the shell
// and to a remote scheduler.
func validWarehouse(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if strings.Contains(v, "://") {
		return "", fmt.Errorf("expected a local directory, got %q (managed tables are local files; use CREATE TABLE ... LOCATION 's3://...' for an object store)", v)
	}
	if !filepath.IsAbs(v) {
		return "", fmt.Errorf("expected an absolute directory path, got %q", v)
	}
	return filepath.Clean(v), nil
}

// managedDir returns the directory of the managed table name: a
// sub-directory of the session's catalog.warehouse, or else of the
// engine's warehouse.
func (e *Engine) managedDir(name string, settings *Settings) (string, error) {
	if err := catalog.CheckManagedName(name); err != nil {
		return "", err
	}
	base, _ := settings.Get("catalog.warehouse")
	if base == "" {
		if e.Warehouse == nil {
			return "", fmt.Errorf("CREATE TABLE %s without LOCATION makes a managed table in the warehouse directory, and this scheduler has none: start it with --warehouse DIR (a directory every executor can read and write), SET catalog.warehouse = '/dir', or give the table a LOCATION 'dir'", name)
		}
		var err error
		if base, err = e.Warehouse.Dir(); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(base, strings.ToLower(name))
	if err := catalog.CheckAllowed(dir); err != nil {
		return "", fmt.Errorf("CREATE TABLE %s: %w", name, err)
	}
	return dir, nil
}
