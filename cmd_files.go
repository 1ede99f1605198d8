package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"sluice/catalog"
	"sluice/session"
)

// fileArg is a data file named on the command line (sluice trips.parquet).
type fileArg struct {
	path   string
	format catalog.FileFormat
}

// dataFileArgs sorts the positional arguments: those naming Parquet or
// CSV files (or directories or glob patterns of them) are data files to
// register; the first other one is returned as bad, for the caller's
// "unexpected argument" error.
func dataFileArgs(args []string) (files []fileArg, bad string) {
	for _, a := range args {
		f, err := catalog.FormatOf(a)
		if err != nil {
			return nil, a
		}
		files = append(files, fileArg{path: a, format: f})
	}
	return files, ""
}

// registerFileArgs makes each data file a table of the session, named
// after the file (trips for data/trips.parquet; trips_2 for a second
// trips), and says so through notice. A Parquet file becomes an external
// table (its footers read once); a CSV file a view over read_csv, whose
// header is detected at each use as in FROM 'file.csv'. Paths are made
// absolute here, so a remote scheduler opens the file this shell names
// (it must see the same path, and allow it).
func registerFileArgs(ctx context.Context, sess *session.Session, files []fileArg, notice func(string)) error {
	taken := map[string]bool{}
	for _, f := range files {
		base := catalog.TableNameFor(f.path)
		name := base
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		taken[name] = true
		if !catalog.IsGlob(f.path) && !catalog.IsS3(f.path) {
			if _, err := os.Stat(f.path); err != nil {
				return fmt.Errorf("%s: no such file (data files named on the command line are registered as tables)", f.path)
			}
		}
		loc := strings.ReplaceAll(catalog.AbsLocation(f.path), "'", "''")
		stmt := fmt.Sprintf(`CREATE OR REPLACE EXTERNAL TABLE "%s" STORED AS PARQUET LOCATION '%s'`, name, loc)
		if f.format == catalog.FormatCSV {
			stmt = fmt.Sprintf(`CREATE OR REPLACE VIEW "%s" AS SELECT * FROM read_csv('%s')`, name, loc)
		}
		res, err := sess.Execute(ctx, stmt)
		if err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		res.Close()
		notice(fmt.Sprintf("%s is table %s.", f.path, name))
	}
	return nil
}
