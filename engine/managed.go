package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/sql"
)

// createTable makes an empty managed table: its directory under the
// warehouse, and a Parquet table of the declared columns with no files,
// which INSERT adds files to.
func (e *Engine) createTable(st *sql.CreateTable, settings *Settings) (*Outcome, error) {
	done := &Outcome{Message: "CREATE TABLE"}
	if _, ok := e.Catalog.Table(st.Name); ok && !st.OrReplace {
		if st.IfNotExists {
			return done, nil
		}
		return nil, fmt.Errorf("table %q already exists (use CREATE OR REPLACE TABLE, or DROP TABLE first)", st.Name)
	}
	if _, ok := e.Catalog.View(st.Name); ok {
		return nil, fmt.Errorf("%q already exists as a view", st.Name)
	}
	dir, err := e.managedDir(st.Name, settings)
	if err != nil {
		return nil, err
	}
	empty, err := emptyDir(dir)
	if err != nil {
		return nil, fmt.Errorf("CREATE TABLE %s: %w", st.Name, err)
	}
	if !empty {
		if !st.OrReplace {
			return nil, fmt.Errorf("CREATE TABLE %s: the warehouse directory %s already holds files (of a table dropped elsewhere, or of another process); remove them, use CREATE OR REPLACE TABLE to replace them, or SET catalog.warehouse to another directory", st.Name, dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("CREATE OR REPLACE TABLE %s: removing the files of %s: %w", st.Name, dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("CREATE TABLE %s: %w", st.Name, err)
	}
	fields := make([]arrow.Field, len(st.Columns))
	for i, c := range st.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: true}
	}
	orphan, err := e.Catalog.RegisterManaged(st.Name, catalog.EmptyParquet(dir, arrow.NewSchema(fields, nil)), dir, st.OrReplace)
	if err != nil {
		return nil, err
	}
	removeManaged(orphan)
	return done, nil
}

// emptyDir reports whether dir is missing or an empty directory.
func emptyDir(dir string) (bool, error) {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil {
		return false, err
	}
	if !st.IsDir() {
		return false, fmt.Errorf("%s exists and is not a directory", dir)
	}
	if _, err := d.Readdirnames(1); errors.Is(err, io.EOF) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	return false, nil
}

// removeManaged removes the directory of a managed table nothing reads any
// more ("" removes nothing).
func removeManaged(dir string) error {
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}

// managedWrite is a CREATE TABLE AS without LOCATION made to write the
// table's directory under the warehouse, replacing what is there for OR
// REPLACE.
func (e *Engine) managedWrite(st *sql.Write, settings *Settings) (*sql.Write, error) {
	if _, ok := e.Catalog.View(st.Table); ok {
		return nil, fmt.Errorf("%q already exists as a view", st.Table)
	}
	dir, err := e.managedDir(st.Table, settings)
	if err != nil {
		return nil, err
	}
	out := *st
	out.Location = dir
	if st.OrReplace {
		out.Overwrite = true
		return &out, nil
	}
	empty, err := emptyDir(dir)
	if err != nil {
		return nil, fmt.Errorf("CREATE TABLE %s: %w", st.Table, err)
	}
	if !empty {
		return nil, fmt.Errorf("CREATE TABLE %s: the warehouse directory %s already holds files (of a table dropped elsewhere, or of another process); remove them, use CREATE OR REPLACE TABLE to replace them, or SET catalog.warehouse to another directory", st.Table, dir)
	}
	return &out, nil
}
