package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// EmptyParquet returns a Parquet table over the directory path that has no
// files yet and the declared schema: a managed table just created with
// CREATE TABLE name (columns), or an external table declared over an empty
// directory. Scans of it yield no rows; INSERT adds files to path.
func EmptyParquet(path string, schema *arrow.Schema) *ParquetTable {
	t := &ParquetTable{path: path, schema: schema, leaves: make([][]int, schema.NumFields())}
	t.version = filesVersion(t.Files, func(f ParquetFile) FileInfo { return f.Info() })
	return t
}

// OpenParquetDeclared opens the Parquet files under the directory path
// like OpenParquet, for a table whose columns were declared: a directory
// without any file is the empty table of that schema, and files must
// have the declared columns.
func OpenParquetDeclared(path string, schema *arrow.Schema) (*ParquetTable, error) {
	t, err := OpenParquetOrEmpty(path, schema)
	if err != nil {
		return nil, err
	}
	if !SchemaMatches(t.Schema(), schema) {
		return nil, fmt.Errorf("declared columns %s do not match the Parquet schema %s", schemaText(schema), schemaText(t.Schema()))
	}
	return t, nil
}

// OpenParquetOrEmpty opens the Parquet files under path like OpenParquet,
// except that a local directory without any is the empty table of
// schema (a table that had no rows written to it yet).
func OpenParquetOrEmpty(path string, schema *arrow.Schema) (*ParquetTable, error) {
	if !IsS3(path) && !IsGlob(path) {
		if err := checkAllowed(path); err != nil {
			return nil, err
		}
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			empty, err := noFiles(path, ".parquet")
			if err != nil {
				return nil, err
			}
			if empty {
				return EmptyParquet(path, schema), nil
			}
		}
	}
	return OpenParquet(path)
}

// errFound stops a directory walk at the first file found.
var errFound = errors.New("found")

// noFiles reports whether the directory dir holds no file named *ext at
// any depth.
func noFiles(dir, ext string) (bool, error) {
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(strings.ToLower(d.Name()), ext) {
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list %s: %w", dir, err)
	}
	return true, nil
}

// SchemaMatches reports whether a table's schema has the wanted columns:
// the same names (case-insensitive) and types, in order. Nullability is
// not compared.
func SchemaMatches(have, want *arrow.Schema) bool {
	if have.NumFields() != want.NumFields() {
		return false
	}
	for i := range have.Fields() {
		if !strings.EqualFold(have.Field(i).Name, want.Field(i).Name) || !arrow.TypeEqual(have.Field(i).Type, want.Field(i).Type) {
			return false
		}
	}
	return true
}

// schemaText lists a schema's columns as name type, for errors.
func schemaText(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = f.Name + " " + f.Type.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// CheckManagedName refuses a table name that cannot be a managed table's
// directory name under the warehouse: empty, "." or "..", or holding a
// path separator, ".." or a NUL byte, any of which could name a directory
// outside the warehouse or none at all.
func CheckManagedName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("table name %q cannot name a directory of the warehouse", name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("table name %q holds a path separator; a managed table's name becomes its directory under the warehouse", name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("table name %q holds \"..\"; a managed table's name becomes its directory under the warehouse", name)
	}
	return nil
}
