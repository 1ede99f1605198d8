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
type Catalog struct {
	mu     sync.RWMutex
	tables map[string]Table
	views  map[string]*View
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{tables: map[string]Table{}, views: map[string]*View{}}
}

func norm(name string) string { return strings.ToLower(name) }

// RegisterTable adds a table. It fails if the name is taken, unless replace.
func (c *Catalog) RegisterTable(name string, t Table, replace bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := norm(name)
	if !replace {
		if _, ok := c.tables[n]; ok {
			return fmt.Errorf("table %q already exists", name)
		}
	}
	if _, ok := c.views[n]; ok {
		return fmt.Errorf("%q already exists as a view", name)
	}
	c.tables[n] = t
	return nil
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

// DropTable removes a table; ok is false when it did not exist.
func (c *Catalog) DropTable(name string) (ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok = c.tables[norm(name)]
	delete(c.tables, norm(name))
	return ok
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
	// IntRange returns the smallest and largest value of an integer or
	// date field col; ok is false when unknown.
	IntRange(col int) (lo, hi int64, ok bool)
}
