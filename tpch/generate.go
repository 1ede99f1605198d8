package tpch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/pingcap/go-tpc/tpch/dbgen"
)

// CompleteMarker is the file Generate writes into the output directory once
// every table is in place; a directory without it is not a finished data set.
const CompleteMarker = ".complete"

// genMu serialises generation: dbgen keeps all of its state (scale factor,
// random streams, a 300 MB text pool, the loaders) in package globals, so two
// generations in one process would corrupt each other.
var genMu sync.Mutex

// unit is one dbgen generation step. Some steps produce two tables at once
// (a part with its four partsupp rows, an order with its lineitems), because
// dbgen draws the child rows from the same random streams as the parent.
type unit struct {
	table dbgen.Table
	label string // shown by the progress callback
	rows  int64  // parent rows at scale factor 1
	fixed bool   // row count does not depend on the scale factor
	// filePerRows starts a new file after this many parent rows, keeping
	// files at roughly 1-2M rows.
	filePerRows int64
}

var units = map[string]unit{
	"nation":   {table: dbgen.TNation, label: "nation", rows: 25, fixed: true, filePerRows: 1 << 62},
	"region":   {table: dbgen.TRegion, label: "region", rows: 5, fixed: true, filePerRows: 1 << 62},
	"customer": {table: dbgen.TCust, label: "customer", rows: 150000, filePerRows: 1500000},
	"supplier": {table: dbgen.TSupp, label: "supplier", rows: 10000, filePerRows: 1500000},
	"part":     {table: dbgen.TPartPsupp, label: "part+partsupp", rows: 200000, filePerRows: 500000},
	"orders":   {table: dbgen.TOrderLine, label: "orders+lineitem", rows: 1500000, filePerRows: 375000},
}

// unitOrder is the order in which Generate runs the steps: smallest first so
// that the progress display moves early.
var unitOrder = []string{"nation", "region", "supplier", "customer", "part", "orders"}

// Row-group sizes: lineitem is scanned most, so it gets larger groups; the
// rest get groups small enough that SF 1 still splits into a few partitions.
const (
	lineitemGroupRows = 1 << 18
	defaultGroupRows  = 1 << 17
)

// Generate writes the eight TPC-H tables at integer scale factor sf as
// Parquet files outDir/<table>/part-<n>.parquet (snappy, with statistics,
// several row groups per file), then writes outDir/.complete.
//
// Everything is written into a temporary sibling directory that is renamed
// to outDir only when all tables are complete, so an interrupted or failed
// run leaves nothing half-written under outDir. outDir must not exist or be
// an empty directory.
//
// progress, if not nil, is called from the calling goroutine with a step
// label ("nation", …, "part+partsupp", "orders+lineitem") and the parent rows
// done out of the step's total.
//
// Generations are serialised by a package mutex because dbgen keeps its state
// in package globals; for the same reason dbgen's 300 MB text pool stays in
// memory after the first call. While generating, os.Stdout is pointed at
// os.DevNull, because dbgen prints progress lines there unconditionally.
func Generate(ctx context.Context, sf int, outDir string, progress func(table string, done, total int64)) error {
	return generate(ctx, sf, outDir, unitOrder, progress)
}

func generate(ctx context.Context, sf int, outDir string, steps []string, progress func(string, int64, int64)) error {
	if sf < 1 {
		return fmt.Errorf("tpch: scale factor must be a positive integer, got %d", sf)
	}
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	if err := checkOutDir(outDir); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(outDir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("tpch: create parent directory: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(outDir)+".partial-")
	if err != nil {
		return fmt.Errorf("tpch: create temporary directory: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(tmp)
		}
	}()

	if err := runDbgen(ctx, sf, tmp, steps, progress); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("tpch: %w", err)
	}
	// An empty outDir would make the rename fail; checkOutDir ensured that
	// it is empty if it exists.
	if err := os.Remove(outDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("tpch: replace empty output directory: %w", err)
	}
	if err := os.Rename(tmp, outDir); err != nil {
		return fmt.Errorf("tpch: move data into place: %w", err)
	}
	committed = true
	marker := fmt.Sprintf("scale_factor=%d\n", sf)
	if err := os.WriteFile(filepath.Join(outDir, CompleteMarker), []byte(marker), 0o644); err != nil {
		return fmt.Errorf("tpch: write completion marker: %w", err)
	}
	return nil
}

// checkOutDir refuses to overwrite existing data.
func checkOutDir(outDir string) error {
	entries, err := os.ReadDir(outDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tpch: output directory: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("tpch: output directory %s is not empty", outDir)
	}
	return nil
}

// runDbgen runs the requested dbgen steps, writing Parquet under dir.
func runDbgen(ctx context.Context, sf int, dir string, steps []string, progress func(string, int64, int64)) (err error) {
	genMu.Lock()
	defer genMu.Unlock()
	// dbgen's set-up alone takes seconds; do not start it for nothing.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tpch: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sink := startSink(dir, cancel)
	g := &gen{ctx: ctx, progress: progress, writers: map[string]*tableWriter{}}
	for _, t := range TableNames {
		rows := defaultGroupRows
		if t == "lineitem" {
			rows = lineitemGroupRows
		}
		g.writers[t] = newTableWriter(t, rows, sink)
	}
	defer func() {
		for _, w := range g.writers {
			w.release()
		}
	}()

	genErr := g.run(sf, steps)
	sinkErr := sink.close()
	switch {
	case sinkErr != nil:
		return fmt.Errorf("tpch: %w", sinkErr)
	case genErr != nil:
		return fmt.Errorf("tpch: %w", genErr)
	}
	return nil
}

// gen adapts dbgen's Loader callbacks to tableWriters. Its methods run on the
// caller's goroutine, inside dbgen.DbGen.
type gen struct {
	ctx      context.Context
	progress func(string, int64, int64)
	writers  map[string]*tableWriter
	err      error // first error from a loader; dbgen does not wrap errors
	cur      unit
	total    int64
	done     int64
}

func (g *gen) run(sf int, steps []string) error {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	stdout := os.Stdout
	os.Stdout = devnull
	defer func() {
		os.Stdout = stdout
		devnull.Close()
	}()

	dbgen.InitDbGen(int64(sf))
	loaders := map[dbgen.Table]dbgen.Loader{
		dbgen.TNation: loaderFunc(g.nation),
		dbgen.TRegion: loaderFunc(g.region),
		dbgen.TCust:   loaderFunc(g.customer),
		dbgen.TSupp:   loaderFunc(g.supplier),
		dbgen.TPart:   loaderFunc(g.part),
		dbgen.TPsupp:  loaderFunc(g.partsupp),
		dbgen.TOrder:  loaderFunc(g.order),
		dbgen.TLine:   loaderFunc(g.lineitem),
	}
	for _, name := range steps {
		u, ok := units[name]
		if !ok {
			return fmt.Errorf("unknown generation step %q", name)
		}
		g.cur, g.done, g.total = u, 0, u.rows
		if !u.fixed {
			g.total *= int64(sf)
		}
		g.progress(u.label, 0, g.total)
		if err := dbgen.DbGen(loaders, []dbgen.Table{u.table}); err != nil {
			if g.err != nil {
				return g.err
			}
			return fmt.Errorf("dbgen: %w", err)
		}
		// dbgen ignores the errors of Loader.Flush, so flushing happens here.
		for _, w := range g.writers {
			if err := w.flush(g.ctx); err != nil {
				return err
			}
		}
		g.progress(u.label, g.done, g.total)
	}
	return nil
}

// loaderFunc turns a function into a dbgen.Loader whose Flush does nothing
// (see gen.run).
type loaderFunc func(item any) error

func (f loaderFunc) Load(item any) error { return f(item) }
func (f loaderFunc) Flush() error        { return nil }

// parentRow is called once per row of the step's parent table, before the
// row is appended: it checks for cancellation, starts new files at the step's
// file boundaries and reports progress.
func (g *gen) parentRow(tables ...string) error {
	if g.done%4096 == 0 {
		if err := g.ctx.Err(); err != nil {
			return g.fail(err)
		}
		if g.done > 0 {
			g.progress(g.cur.label, g.done, g.total)
		}
	}
	if g.done > 0 && g.done%g.cur.filePerRows == 0 {
		for _, t := range tables {
			if err := g.writers[t].nextFile(g.ctx); err != nil {
				return g.fail(err)
			}
		}
	}
	g.done++
	return nil
}

func (g *gen) fail(err error) error {
	if g.err == nil {
		g.err = err
	}
	return err
}

func (g *gen) rowDone(w *tableWriter) error {
	if err := w.rowDone(g.ctx); err != nil {
		return g.fail(err)
	}
	return nil
}

func (g *gen) nation(item any) error {
	n := item.(*dbgen.Nation)
	if err := g.parentRow("nation"); err != nil {
		return err
	}
	w := g.writers["nation"]
	w.i64(0).Append(int64(n.Code))
	w.str(1).Append(n.Text)
	w.i64(2).Append(int64(n.Join))
	w.str(3).Append(n.Comment)
	return g.rowDone(w)
}

func (g *gen) region(item any) error {
	r := item.(*dbgen.Region)
	if err := g.parentRow("region"); err != nil {
		return err
	}
	w := g.writers["region"]
	w.i64(0).Append(int64(r.Code))
	w.str(1).Append(r.Text)
	w.str(2).Append(r.Comment)
	return g.rowDone(w)
}

func (g *gen) customer(item any) error {
	c := item.(*dbgen.Cust)
	if err := g.parentRow("customer"); err != nil {
		return err
	}
	w := g.writers["customer"]
	w.i64(0).Append(int64(c.CustKey))
	w.str(1).Append(c.Name)
	w.str(2).Append(c.Address)
	w.i64(3).Append(int64(c.NationCode))
	w.str(4).Append(c.Phone)
	w.dec(5).Append(cents(int64(c.Acctbal)))
	w.str(6).Append(c.MktSegment)
	w.str(7).Append(c.Comment)
	return g.rowDone(w)
}

func (g *gen) supplier(item any) error {
	s := item.(*dbgen.Supp)
	if err := g.parentRow("supplier"); err != nil {
		return err
	}
	w := g.writers["supplier"]
	w.i64(0).Append(int64(s.SuppKey))
	w.str(1).Append(s.Name)
	w.str(2).Append(s.Address)
	w.i64(3).Append(int64(s.NationCode))
	w.str(4).Append(s.Phone)
	w.dec(5).Append(cents(int64(s.Acctbal)))
	w.str(6).Append(s.Comment)
	return g.rowDone(w)
}

// part is called before partsupp for the same part, so it owns the step's
// bookkeeping.
func (g *gen) part(item any) error {
	p := item.(*dbgen.Part)
	if err := g.parentRow("part", "partsupp"); err != nil {
		return err
	}
	w := g.writers["part"]
	w.i64(0).Append(int64(p.PartKey))
	w.str(1).Append(p.Name)
	w.str(2).Append(p.Mfgr)
	w.str(3).Append(p.Brand)
	w.str(4).Append(p.Type)
	w.i64(5).Append(int64(p.Size))
	w.str(6).Append(p.Container)
	w.dec(7).Append(cents(int64(p.RetailPrice)))
	w.str(8).Append(p.Comment)
	return g.rowDone(w)
}

func (g *gen) partsupp(item any) error {
	p := item.(*dbgen.Part)
	w := g.writers["partsupp"]
	for _, ps := range p.S {
		w.i64(0).Append(int64(ps.PartKey))
		w.i64(1).Append(int64(ps.SuppKey))
		w.i64(2).Append(int64(ps.Qty))
		w.dec(3).Append(cents(int64(ps.SCost)))
		w.str(4).Append(ps.Comment)
		if err := g.rowDone(w); err != nil {
			return err
		}
	}
	return nil
}

// order is called before lineitem for the same order, so it owns the step's
// bookkeeping.
func (g *gen) order(item any) error {
	o := item.(*dbgen.Order)
	if err := g.parentRow("orders", "lineitem"); err != nil {
		return err
	}
	w := g.writers["orders"]
	od, err := parseDate(o.Date)
	if err != nil {
		return g.fail(err)
	}
	w.i64(0).Append(int64(o.OKey))
	w.i64(1).Append(int64(o.CustKey))
	w.str(2).Append(string(rune(o.Status)))
	w.dec(3).Append(cents(int64(o.TotalPrice)))
	w.date(4).Append(od)
	w.str(5).Append(o.OrderPriority)
	w.str(6).Append(o.Clerk)
	w.i64(7).Append(o.ShipPriority)
	w.str(8).Append(o.Comment)
	return g.rowDone(w)
}

func (g *gen) lineitem(item any) error {
	o := item.(*dbgen.Order)
	w := g.writers["lineitem"]
	for i := range o.Lines {
		l := &o.Lines[i]
		sd, err1 := parseDate(l.SDate)
		cd, err2 := parseDate(l.CDate)
		rd, err3 := parseDate(l.RDate)
		if err := errors.Join(err1, err2, err3); err != nil {
			return g.fail(err)
		}
		w.i64(0).Append(int64(l.OKey))
		w.i64(1).Append(int64(l.PartKey))
		w.i64(2).Append(int64(l.SuppKey))
		w.i64(3).Append(int64(l.LCnt))
		// dbgen prints the quantity as a whole number (%d); the others are
		// in cents (or percent, for discount and tax) and printed as x/100.
		w.dec(4).Append(cents(int64(l.Quantity) * 100))
		w.dec(5).Append(cents(int64(l.EPrice)))
		w.dec(6).Append(cents(int64(l.Discount)))
		w.dec(7).Append(cents(int64(l.Tax)))
		w.str(8).Append(flagString(l.RFlag))
		w.str(9).Append(flagString(l.LStatus))
		w.date(10).Append(sd)
		w.date(11).Append(cd)
		w.date(12).Append(rd)
		w.str(13).Append(l.ShipInstruct)
		w.str(14).Append(l.ShipMode)
		w.str(15).Append(l.Comment)
		if err := g.rowDone(w); err != nil {
			return err
		}
	}
	return nil
}

// cents is a DECIMAL(15,2) value given in hundredths: exactly the integer
// dbgen formats with FmtMoney.
func cents(v int64) decimal128.Num { return decimal128.FromI64(v) }

// flagString avoids allocating for the single-letter flags.
func flagString(b byte) string {
	switch b {
	case 'A':
		return "A"
	case 'F':
		return "F"
	case 'N':
		return "N"
	case 'O':
		return "O"
	case 'R':
		return "R"
	}
	return string(rune(b))
}

// parseDate converts dbgen's "YYYY-MM-DD" to days since 1970-01-01.
func parseDate(s string) (arrow.Date32, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, fmt.Errorf("malformed date %q", s)
	}
	num := func(t string) (int, bool) {
		n := 0
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(s[0:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, fmt.Errorf("malformed date %q", s)
	}
	return arrow.Date32(daysFromCivil(y, m, d)), nil
}

// daysFromCivil is Howard Hinnant's days_from_civil for the proleptic
// Gregorian calendar.
func daysFromCivil(y, m, d int) int32 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int32(era*146097 + doe - 719468)
}
