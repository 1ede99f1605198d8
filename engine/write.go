package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/physical"
	"sluice/physical/datasource/write"
	"sluice/plan"
	"sluice/sql"
)

// Write is the part of a writing statement (COPY TO, CREATE TABLE AS,
// INSERT) that happens after its query ran: renaming the files of the
// attempts that count, removing the others and, when the write succeeded,
// registering the created table or reopening the one appended to. Whoever
// runs the query (the scheduler, or the in-process session) calls Finish
// exactly once, when the job has ended.
type Write struct {
	Spec write.Spec
	stmt *sql.Write
	// schema is the written columns' schema (declared for CSV tables).
	schema *arrow.Schema
	cat    *catalog.Catalog
	// replaced are the files a DELETE or UPDATE rewrites: the table's
	// files when the statement was planned, removed once the new ones
	// are committed.
	replaced []string
}

// Finish ends the write. On success it commits files (the commit task's
// list: renamed to their final names) and the catalog learns of them;
// either way the write's temporary files are removed (on failure, or a
// failed commit, its committed files and the directories it created too).
func (w *Write) Finish(success bool, files []physical.CommitFile) error {
	if success {
		if err := write.CommitFiles(&w.Spec, files); err != nil {
			_ = write.RemoveLeftovers(&w.Spec, true)
			return fmt.Errorf("%s: committing the written files: %w", w.stmt.Kind, err)
		}
		if err := write.RemoveReplaced(&w.Spec, w.replaced); err != nil {
			// The new files are in place beside some of the old ones:
			// the table must be repaired by hand.
			return fmt.Errorf("%s %s: the rewritten rows were committed, but %w; the table now reads both, remove the files not named part-%s-* from %s",
				w.stmt.Kind, w.stmt.Table, err, w.Spec.WriteID, w.Spec.Dir)
		}
	}
	cleanErr := write.RemoveLeftovers(&w.Spec, !success)
	if !success {
		return cleanErr
	}
	switch w.stmt.Kind {
	case sql.WriteCreate:
		t, err := w.open(nil)
		if err != nil {
			return fmt.Errorf("CREATE TABLE %s: the files were written to %s but cannot be read back: %w", w.stmt.Table, w.Spec.Dir, err)
		}
		managed := ""
		if w.stmt.Managed {
			managed = w.Spec.Dir
		}
		orphan, err := w.cat.RegisterManaged(w.stmt.Table, t, managed, w.stmt.OrReplace)
		if err != nil {
			return fmt.Errorf("CREATE TABLE %s: the files were written to %s: %w", w.stmt.Table, w.Spec.Dir, err)
		}
		removeManaged(orphan)
	case sql.WriteInsert, sql.WriteDelete, sql.WriteUpdate:
		old, ok := w.cat.Table(w.stmt.Table)
		var keep catalog.Table
		if ok {
			keep = old
		}
		t, err := w.open(keep)
		if err != nil {
			return fmt.Errorf("%s %s: the rows were written to %s but the table cannot be reopened: %w", w.stmt.Kind, w.stmt.Table, w.Spec.Dir, err)
		}
		if err := w.cat.RegisterTable(w.stmt.Table, t, true); err != nil {
			return err
		}
	}
	w.refreshTables()
	return cleanErr
}

// open opens the written directory as a table; like is the table appended
// to, whose CSV layout and schema are kept.
func (w *Write) open(like catalog.Table) (catalog.Table, error) {
	if w.Spec.Format == "parquet" {
		schema := w.schema
		if like != nil {
			schema = like.Schema()
		}
		return catalog.OpenParquetOrEmpty(w.Spec.Dir, schema)
	}
	opts := catalog.CSVOptions{Header: w.Spec.Header, Delimiter: w.Spec.Delimiter}
	schema := w.schema
	if c, ok := like.(*catalog.CSVTable); ok {
		opts, schema = c.Options(), c.Schema()
	}
	return catalog.OpenCSV(w.Spec.Dir, opts, schema)
}

// PlanWrite plans a writing statement: the query's plan under a FileSink
// and a WriteCommit (package physical/datasource/write).
func (e *Engine) PlanWrite(st *sql.Write, settings *Settings) (*Outcome, error) {
	if st.Kind == sql.WriteCreate {
		if _, ok := e.Catalog.Table(st.Table); ok && !st.OrReplace {
			if st.IfNotExists {
				return &Outcome{Message: "CREATE TABLE"}, nil
			}
			return nil, fmt.Errorf("table %q already exists (use CREATE OR REPLACE TABLE, or DROP TABLE first)", st.Table)
		}
	}
	if st.Managed {
		var err error
		if st, err = e.managedWrite(st, settings); err != nil {
			return nil, err
		}
	}
	q, err := e.PlanQuery(st.Query, settings)
	if err != nil {
		return nil, err
	}
	dir, err := writeDir(st)
	if err != nil {
		return nil, err
	}
	spec := write.Spec{
		Dir: dir, Format: st.Format, Header: st.Header, Delimiter: st.Delimiter,
		Names: append([]string(nil), st.Query.Names...), WriteID: write.NewID(), Overwrite: st.Overwrite,
	}
	rewrite := st.Kind == sql.WriteDelete || st.Kind == sql.WriteUpdate
	var replaced []string
	if rewrite {
		// The query's last column marks the rows changed.
		spec.Names = spec.Names[:len(spec.Names)-1]
		spec.Mark = write.MarkDeleted
		if st.Kind == sql.WriteUpdate {
			spec.Mark = write.MarkUpdated
		}
		if replaced, err = rewrittenFiles(st, q.Logical); err != nil {
			return nil, err
		}
	}
	partitionBy := st.PartitionBy
	if st.Kind == sql.WriteInsert || rewrite {
		// Rows appended to a directory laid out in col=value/ directories
		// go where they belong, so the layout stays one that readers of
		// Hive partitions accept.
		partitionBy = hiveKeys(dir, spec.Names)
	}
	for _, p := range partitionBy {
		for i, n := range spec.Names {
			if n == p {
				spec.PartitionBy = append(spec.PartitionBy, i)
			}
		}
	}
	if err := write.CheckTarget(&spec, st.Kind == sql.WriteInsert || rewrite, st.Kind); err != nil {
		return nil, err
	}
	if spec.Overwrite {
		if err := checkOverwrite(e.Catalog, st, dir, spec.Format); err != nil {
			return nil, err
		}
	}
	sink, err := write.NewFileSink(q.Physical, spec)
	if err != nil {
		return nil, err
	}
	commit, err := write.NewWriteCommit(physical.NewCoalescePartitions(sink), spec)
	if err != nil {
		return nil, err
	}
	return &Outcome{Query: &Query{
		Logical: q.Logical, Physical: commit, Schema: commit.Schema(),
		Write: &Write{Spec: spec, stmt: st, schema: writtenSchema(q.Schema, len(spec.Names)), cat: e.Catalog, replaced: replaced},
	}}, nil
}

// rewrittenFiles lists the files a DELETE or UPDATE replaces: those of
// the table as bound, which must be the table its query's scans read
// (another statement may have replaced it in the catalog meanwhile).
func rewrittenFiles(st *sql.Write, query plan.Node) ([]string, error) {
	lister, ok := st.Target.(interface{ FileInfos() []catalog.FileInfo })
	if !ok {
		return nil, fmt.Errorf("%s: table %q is not backed by files", st.Kind, st.Table)
	}
	var read, other bool
	var walk func(n plan.Node)
	walk = func(n plan.Node) {
		if s, ok := n.(*plan.Scan); ok && strings.EqualFold(s.TableName, st.Table) {
			read = read || s.Table == st.Target
			other = other || s.Table != st.Target
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(query)
	if !read || other {
		return nil, fmt.Errorf("%s: table %q changed while the statement was planned; run it again", st.Kind, st.Table)
	}
	var files []string
	for _, f := range lister.FileInfos() {
		files = append(files, f.Path)
	}
	return files, nil
}

// writtenSchema is the schema of the first n columns of a write's query:
// the columns written, without a rewrite's mark.
func writtenSchema(s *arrow.Schema, n int) *arrow.Schema {
	if s.NumFields() == n {
		return s
	}
	return arrow.NewSchema(s.Fields()[:n], nil)
}

// writeDir is the statement's target directory as every task will name
// it: a local path made absolute here, once, whatever the working
// directory of the processes that write; an s3:// folder without its
// trailing slash.
func writeDir(st *sql.Write) (string, error) {
	dir := st.Location
	if catalog.IsS3(dir) {
		return "s3://" + strings.TrimSuffix(dir[len("s3://"):], "/"), nil
	}
	if strings.Contains(dir, "://") {
		return "", fmt.Errorf("%s: %s: only local directories and s3:// folders can be written", st.Kind, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", st.Kind, err)
	}
	return abs, nil
}

// PlanExplained plans what EXPLAIN shows: its query, or its write (the
// query under a FileSink and a WriteCommit, planned exactly as the
// statement would run, target checks included, but not run). logical is
// the logical plan's text; a write's names the target above its query.
func (e *Engine) PlanExplained(st *sql.Explain, settings *Settings) (*Query, string, error) {
	if st.Write == nil {
		q, err := e.PlanQuery(st.Query, settings)
		if err != nil {
			return nil, "", err
		}
		return q, strings.TrimRight(plan.Format(q.Logical), "\n"), nil
	}
	out, err := e.PlanWrite(st.Write, settings)
	if err != nil {
		return nil, "", err
	}
	if out.Query == nil {
		return nil, "", fmt.Errorf("EXPLAIN: table %q exists, so CREATE TABLE IF NOT EXISTS writes nothing and has no plan", st.Write.Table)
	}
	q, w := out.Query, out.Query.Write
	head := fmt.Sprintf("Write: %s", w.stmt.Kind)
	if w.stmt.Table != "" {
		head += " " + w.stmt.Table
	}
	head += fmt.Sprintf(" dir=%s format=%s", w.Spec.Dir, w.Spec.Format)
	if len(w.Spec.PartitionBy) > 0 {
		names := make([]string, len(w.Spec.PartitionBy))
		for i, c := range w.Spec.PartitionBy {
			names[i] = w.Spec.Names[c]
		}
		head += " partition_by=[" + strings.Join(names, ", ") + "]"
	}
	if w.Spec.Overwrite {
		head += " overwrite"
	}
	lines := strings.Split(strings.TrimRight(plan.Format(q.Logical), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return q, head + "\n" + strings.Join(lines, "\n"), nil
}

// hiveKeys returns the partition columns of a directory laid out as
// col=value/ directories (the first such directory at each level names
// the column), if every one is a column of the table.
func hiveKeys(dir string, names []string) []string {
	if catalog.IsS3(dir) {
		return objectHiveKeys(dir, names)
	}
	var keys []string
	for {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return keys
		}
		next := ""
		for _, e := range entries {
			if k, _, ok := strings.Cut(e.Name(), "="); ok && e.IsDir() && slices.Contains(names, k) && !slices.Contains(keys, k) {
				keys, next = append(keys, k), filepath.Join(dir, e.Name())
				break
			}
		}
		if next == "" {
			return keys
		}
		dir = next
	}
}

// objectHiveKeys is hiveKeys for an s3:// folder, which has no
// directories to read: the partition columns are the name=value segments
// that lead to its first object, when every one names a column.
func objectHiveKeys(dir string, names []string) []string {
	objs, err := catalog.ListS3(context.Background(), dir)
	if err != nil || len(objs) == 0 {
		return nil
	}
	rel := strings.TrimPrefix(objs[0].Path, dir+"/")
	segs := strings.Split(rel, "/")
	var keys []string
	for _, seg := range segs[:len(segs)-1] {
		k, _, ok := strings.Cut(seg, "=")
		if !ok || !slices.Contains(names, k) || slices.Contains(keys, k) {
			return nil
		}
		keys = append(keys, k)
	}
	return keys
}
