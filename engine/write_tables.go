package engine

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"sluice/catalog"
	"sluice/sql"
)

// A write changes the files of every registered table that reads its
// directory, not only the one it creates or inserts into: a COPY ...
// OVERWRITE into the directory of table t removes t's files. Tables keep
// the file list they were opened with, so after a write the catalog
// reopens every other table over the directory (Write.refreshTables), and
// an OVERWRITE that would leave a table with none of its files is refused
// before it runs (checkOverwrite).

// tableDir returns the directory a registered table reads, in the form a
// write names its target (an absolute local path, or an s3:// folder
// without its trailing slash), its file format, and whether its location
// is the directory itself (not one file or a pattern in it). ok is false
// for tables not backed by files.
func tableDir(t catalog.Table) (dir, format string, whole, ok bool) {
	var loc string
	switch tt := t.(type) {
	case *catalog.ParquetTable:
		loc, format = tt.Path(), "parquet"
	case *catalog.CSVTable:
		loc, format = tt.Path(), "csv"
	default:
		return "", "", false, false
	}
	if catalog.IsS3(loc) {
		key := strings.TrimSuffix(loc[len("s3://"):], "/")
		if catalog.IsGlob(key) {
			return "s3://" + path.Dir(key[:strings.IndexAny(key, "*?[")]+"x"), format, false, true
		}
		// A key may be an object or a folder; the table's files say.
		whole = true
		if f, ok := t.(interface{ FileInfos() []catalog.FileInfo }); ok {
			if files := f.FileInfos(); len(files) == 1 && files[0].Path == loc {
				whole = false
			}
		}
		return "s3://" + key, format, whole, true
	}
	if catalog.IsGlob(loc) {
		return filepath.Dir(loc[:strings.IndexAny(loc, "*?[")] + "x"), format, false, true
	}
	loc = filepath.Clean(loc)
	if f, ok := t.(interface{ FileInfos() []catalog.FileInfo }); ok {
		if files := f.FileInfos(); len(files) == 1 && filepath.Clean(files[0].Path) == loc {
			return loc, format, false, true
		}
	}
	return loc, format, true, true
}

// under reports whether p is dir or lies beneath it; both are written as
// tableDir and writeDir write them.
func under(dir, p string) bool {
	if p == dir {
		return true
	}
	sep := "/"
	if !catalog.IsS3(dir) {
		sep = string(filepath.Separator)
	}
	return strings.HasPrefix(p, strings.TrimSuffix(dir, sep)+sep)
}

// checkOverwrite refuses an OVERWRITE write that would remove files a
// registered table reads and leave it nothing to reopen: a table over a
// file, a pattern or a folder inside the directory, or over the directory
// itself in another format. A table over the directory in the written
// format is reopened over the new files instead. The table a CREATE OR
// REPLACE TABLE replaces is exempt: the statement registers it anew.
func checkOverwrite(cat *catalog.Catalog, st *sql.Write, dir, format string) error {
	for _, name := range cat.Names() {
		t, ok := cat.Table(name)
		if !ok || st.Kind == sql.WriteCreate && strings.EqualFold(name, st.Table) {
			continue
		}
		tdir, tformat, whole, ok := tableDir(t)
		if !ok || !under(dir, tdir) {
			continue
		}
		if tdir == dir && whole && tformat == format {
			continue
		}
		return fmt.Errorf("%s: OVERWRITE would remove the files table %q reads (%s %s) and leave it none; DROP TABLE %s first, or write elsewhere",
			st.Kind, name, strings.ToUpper(tformat), locationOf(t), name)
	}
	return nil
}

func locationOf(t catalog.Table) string {
	if p, ok := t.(interface{ Path() string }); ok {
		return p.Path()
	}
	return ""
}

// refreshTables reopens every registered table, other than the one the
// statement registers itself, that reads files in or over the written
// directory, so the next statement reads the files as they are now. A
// table that cannot be reopened keeps its old file list, and its next
// scan reports that its files changed.
func (w *Write) refreshTables() {
	for _, name := range w.cat.Names() {
		if w.stmt.Kind != sql.WriteCopy && strings.EqualFold(name, w.stmt.Table) {
			continue
		}
		t, ok := w.cat.Table(name)
		if !ok {
			continue
		}
		tdir, _, _, ok := tableDir(t)
		if !ok || !under(w.Spec.Dir, tdir) && !under(tdir, w.Spec.Dir) {
			continue
		}
		var nt catalog.Table
		var err error
		switch tt := t.(type) {
		case *catalog.ParquetTable:
			nt, err = catalog.OpenParquet(tt.Path())
		case *catalog.CSVTable:
			nt, err = catalog.OpenCSV(tt.Path(), tt.Options(), tt.Schema())
		}
		if err != nil || nt == nil {
			continue
		}
		// Replaced only if it is still the table that was reopened.
		if cur, ok := w.cat.Table(name); ok && cur == t {
			_ = w.cat.RegisterTable(name, nt, true)
		}
	}
}
