// Package catalog names the tables and views a session can query, and the
// sources behind tables: Parquet files, CSV files, in-memory batches.
package catalog

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// Statistics are a table's size estimates; -1 means unknown.
type Statistics struct {
	NumRows    int64
	TotalBytes int64
}

// Table is a queryable data source. Implementations are safe for concurrent
// use and immutable once registered.
type Table interface {
	// Schema is the table's columns.
	Schema() *arrow.Schema
	// Statistics are size estimates for the planner.
	Statistics() Statistics
}

// View is a named query, stored as SQL text and bound anew at each use.
type View struct {
	Name    string
	SQL     string   // the SELECT text
	Columns []string // optional column aliases
}

// ErrNotFound is returned (wrapped) when a name is not in the catalog.
var ErrNotFound = fmt.Errorf("not found")

// Catalog maps lower-cased names to tables and views. Safe for concurrent use.
//
// A table is managed when the catalog owns its files (CREATE TABLE
// without LOCATION writes them under the warehouse directory): dropping
// it removes them. Every other table is external: its files belong to
// whoever put them there and are never removed.
type Catalog struct {
	mu     sync.RWMutex
	tables map[string]Table
	views  map[string]*View
	// managed maps a managed table's name to its directory.
	managed map[string]string
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{tables: map[string]Table{}, views: map[string]*View{}, managed: map[string]string{}}
}

func norm(name string) string { return strings.ToLower(name) }

// RegisterTable adds an external table. It fails if the name is taken,
// unless replace. A managed table replaced by a table over its own
// directory (the same table reopened after an INSERT) stays managed.
func (c *Catalog) RegisterTable(name string, t Table, replace bool) error {
	_, err := c.register(name, t, "", replace)
	return err
}

// RegisterManaged adds a managed table whose files are under dir (an
// external one, as RegisterTable, when dir is empty). It fails if the
// name is taken, unless replace. orphan is the directory of
// the managed table it replaced when that is not dir: nothing reads those
// files any more, and the caller removes them.
func (c *Catalog) RegisterManaged(name string, t Table, dir string, replace bool) (orphan string, err error) {
	return c.register(name, t, dir, replace)
}

// register adds t under name, managed under dir when dir is not empty;
// see RegisterTable and RegisterManaged.
func (c *Catalog) register(name string, t Table, dir string, replace bool) (orphan string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := norm(name)
	if !replace {
		if _, ok := c.tables[n]; ok {
			return "", fmt.Errorf("table %q already exists", name)
		}
	}
	if _, ok := c.views[n]; ok {
		return "", fmt.Errorf("%q already exists as a view", name)
	}
	old, wasManaged := c.managed[n]
	if dir == "" && wasManaged && tablePath(t) == old {
		dir = old
	}
	if wasManaged && old != dir {
		orphan = old
	}
	c.tables[n] = t
	if dir != "" {
		c.managed[n] = dir
	} else {
		delete(c.managed, n)
	}
	return orphan, nil
}

// tablePath is the location a file table was opened from, or "".
func tablePath(t Table) string {
	if p, ok := t.(interface{ Path() string }); ok {
		return p.Path()
	}
	return ""
}

// ManagedDir returns the directory of a managed table; ok is false for
// external tables and unknown names.
func (c *Catalog) ManagedDir(name string) (dir string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	dir, ok = c.managed[norm(name)]
	return dir, ok
}

// RegisterView adds a view. It fails if the name is taken, unless replace.
func (c *Catalog) RegisterView(v *View, replace bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := norm(v.Name)
	if _, ok := c.tables[n]; ok {
		return fmt.Errorf("%q already exists as a table", v.Name)
	}
	if _, ok := c.views[n]; ok && !replace {
		return fmt.Errorf("view %q already exists", v.Name)
	}
	c.views[n] = v
	return nil
}

// Table looks up a table.
func (c *Catalog) Table(name string) (Table, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tables[norm(name)]
	return t, ok
}

// View looks up a view.
func (c *Catalog) View(name string) (*View, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.views[norm(name)]
	return v, ok
}

// DropTable removes a table; ok is false when it did not exist. It does
// not touch files: see DropTableDir for managed tables.
func (c *Catalog) DropTable(name string) (ok bool) {
	_, ok = c.DropTableDir(name)
	return ok
}

// DropTableDir removes a table and returns the directory of its files
// when it was managed ("" for an external table), for the caller to
// remove; ok is false when it did not exist.
func (c *Catalog) DropTableDir(name string) (managedDir string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := norm(name)
	_, ok = c.tables[n]
	managedDir = c.managed[n]
	delete(c.tables, n)
	delete(c.managed, n)
	return managedDir, ok
}

// DropView removes a view; ok is false when it did not exist.
func (c *Catalog) DropView(name string) (ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok = c.views[norm(name)]
	delete(c.views, norm(name))
	return ok
}

// Names returns every table and view name, sorted.
func (c *Catalog) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.tables)+len(c.views))
	for n := range c.tables {
		out = append(out, n)
	}
	for n := range c.views {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ColumnStatistics is implemented by tables that can estimate per-column
// facts for the planner.
type ColumnStatistics interface {
	// DistinctCount estimates the number of distinct values of schema
	// field col, or returns -1 when unknown.
	DistinctCount(col int) int64
	// IntRange returns the smallest and largest value of an integer, date
	// or decimal field col (a decimal's unscaled); ok is false when
	// unknown.
	IntRange(col int) (lo, hi int64, ok bool)
}
