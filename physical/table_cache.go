package physical

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
)

// TableCache is the TableResolver executors use: it opens each table once
// (reading Parquet footers or sampling CSV files) and hands the same
// *catalog.ParquetTable / *catalog.CSVTable to every later task naming it,
// so every task of a query splits a scan into the same work units. It is
// safe for concurrent use; concurrent first requests for one table open it
// once, and requests for other tables do not wait for that open.
//
// A failed open is not cached: the next request tries again. Requests name
// the version of the files the planner saw: a cached table of another
// version is opened again (the table was dropped and created over changed
// files), and older versions of the location are dropped then.
type TableCache struct {
	mu      sync.Mutex
	parquet map[parquetKey]*tableEntry[*catalog.ParquetTable]
	csv     map[csvKey]*tableEntry[*catalog.CSVTable]
}

// parquetKey is one version of a Parquet location.
type parquetKey struct{ location, version string }

// csvKey identifies one way of reading one version of a CSV location: the
// same files read with other options or another schema are another table.
type csvKey struct {
	location string
	version  string
	opts     catalog.CSVOptions
	schema   string // arrow.Schema.String(); "" for none
}

// tableEntry is one cached table; ready is closed once t and err are set.
type tableEntry[T any] struct {
	ready chan struct{}
	t     T
	err   error
}

// NewTableCache returns an empty cache.
func NewTableCache() *TableCache {
	return &TableCache{
		parquet: map[parquetKey]*tableEntry[*catalog.ParquetTable]{},
		csv:     map[csvKey]*tableEntry[*catalog.CSVTable]{},
	}
}

// Parquet implements TableResolver.
func (c *TableCache) Parquet(location, version string) (*catalog.ParquetTable, error) {
	return c.ParquetFiles(location, version, nil)
}

// ParquetFiles implements ListedTableResolver; nil files lists the
// location.
func (c *TableCache) ParquetFiles(location, version string, files []catalog.FileInfo) (*catalog.ParquetTable, error) {
	key := parquetKey{location, version}
	t, err := cached(&c.mu, c.parquet, key, func() (*catalog.ParquetTable, error) {
		var t *catalog.ParquetTable
		var err error
		if files != nil {
			t, err = catalog.OpenParquetFiles(location, files)
		} else {
			t, err = catalog.OpenParquet(location)
		}
		if err != nil {
			return nil, err
		}
		if err := sameVersion(location, version, t.Version()); err != nil {
			return nil, err
		}
		c.dropOthers(location, version)
		return t, nil
	})
	if err != nil {
		return nil, fmt.Errorf("open parquet table %s: %w", location, err)
	}
	return t, nil
}

// CSV implements TableResolver.
func (c *TableCache) CSV(location, version string, opts catalog.CSVOptions, schema *arrow.Schema) (*catalog.CSVTable, error) {
	return c.CSVFiles(location, version, nil, opts, schema)
}

// CSVFiles implements ListedTableResolver; nil files lists the location.
func (c *TableCache) CSVFiles(location, version string, files []catalog.FileInfo, opts catalog.CSVOptions, schema *arrow.Schema) (*catalog.CSVTable, error) {
	key := csvKey{location: location, version: version, opts: opts}
	if schema != nil {
		key.schema = schema.String()
	}
	t, err := cached(&c.mu, c.csv, key, func() (*catalog.CSVTable, error) {
		var t *catalog.CSVTable
		var err error
		if files != nil {
			t, err = catalog.OpenCSVFiles(location, files, opts, schema)
		} else {
			t, err = catalog.OpenCSV(location, opts, schema)
		}
		if err != nil {
			return nil, err
		}
		if err := sameVersion(location, version, t.Version()); err != nil {
			return nil, err
		}
		c.dropOthers(location, version)
		return t, nil
	})
	if err != nil {
		return nil, fmt.Errorf("open csv table %s: %w", location, err)
	}
	return t, nil
}

// sameVersion fails when the files found are not the ones the planner saw
// (paths and sizes; see catalog.SameFiles).
func sameVersion(location, want, got string) error {
	if want != "" && !catalog.SameFiles(got, want) {
		return fmt.Errorf("the files under %s changed after the query was planned (version %s, planned %s): run the query again", location, got, want)
	}
	return nil
}

// dropOthers forgets the cached tables of location's other versions: its
// files changed, so they will not be asked for again.
func (c *TableCache) dropOthers(location, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.parquet {
		if k.location == location && k.version != version {
			delete(c.parquet, k)
		}
	}
	for k := range c.csv {
		if k.location == location && k.version != version {
			delete(c.csv, k)
		}
	}
}

// Forget drops every cached table opened from location, so the next
// request reopens it (after the table was dropped or its files replaced).
// Tasks holding the old table keep using it.
func (c *TableCache) Forget(location string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.parquet {
		if k.location == location {
			delete(c.parquet, k)
		}
	}
	for k := range c.csv {
		if k.location == location {
			delete(c.csv, k)
		}
	}
}

// cached returns m[key], opening it with open on a miss. The open runs
// without mu held; callers asking for the same key meanwhile wait for it.
func cached[K comparable, T any](mu *sync.Mutex, m map[K]*tableEntry[T], key K, open func() (T, error)) (T, error) {
	mu.Lock()
	e, ok := m[key]
	if !ok {
		e = &tableEntry[T]{ready: make(chan struct{})}
		m[key] = e
	}
	mu.Unlock()
	if ok {
		<-e.ready
		return e.t, e.err
	}
	e.t, e.err = open()
	if e.err != nil {
		mu.Lock()
		if m[key] == e {
			delete(m, key)
		}
		mu.Unlock()
	}
	close(e.ready)
	return e.t, e.err
}

var (
	_ TableResolver       = (*TableCache)(nil)
	_ ListedTableResolver = (*TableCache)(nil)
)
