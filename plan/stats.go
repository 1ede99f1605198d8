package plan

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"sluice/catalog"
)

// defaultTableRows is assumed for a table whose statistics are unknown.
const defaultTableRows = 1000

// Selectivity guesses for predicates the planner knows nothing about.
const (
	selEq      = 0.1
	selRange   = 0.33
	selLike    = 0.25
	selIsNull  = 0.1
	selDefault = 0.5
)

// EstimateRows guesses how many rows n produces: table statistics for scans,
// fixed selectivities for predicates, and for equi-joins the larger input
// scaled by how much the smaller-reduced side was filtered (a foreign key
// joined to a filtered primary-key side keeps that fraction of the rows).
// The result is at least 1.
func EstimateRows(n Node) float64 {
	return NewEstimates().Rows(n)
}

// Estimates remembers the estimates it has made for the subtrees of a
// plan, for a pass that asks for many of them: each estimate of a join
// needs its inputs' (EstimateRows alone walks the whole subtree every
// time, which made ChooseBuildSide quadratic in the joins). Plan nodes are
// not changed once built, so a node's estimate stays true; one Estimates
// serves one pass and is then dropped.
type Estimates struct {
	rows, base map[Node]float64
}

// NewEstimates returns an empty Estimates.
func NewEstimates() *Estimates {
	return &Estimates{rows: map[Node]float64{}, base: map[Node]float64{}}
}

// Rows is EstimateRows(n).
func (e *Estimates) Rows(n Node) float64 {
	return math.Max(1, e.estimate(n))
}

// estimate is n's estimate, unclamped.
func (e *Estimates) estimate(n Node) float64 {
	if r, ok := e.rows[n]; ok {
		return r
	}
	r := e.compute(n)
	e.rows[n] = r
	return r
}

func (e *Estimates) compute(n Node) float64 {
	switch x := n.(type) {
	case *Scan:
		// A filtered input is assumed to keep at least one row, so that
		// tiny dimension tables do not make everything above them vanish.
		sel, _ := scanSelectivity(x)
		return math.Max(1, tableRows(x)*sel)
	case *Filter:
		return math.Max(1, e.estimate(x.Input)*Selectivity(x.Pred))
	case *Project:
		return e.estimate(x.Input)
	case *Sort:
		return e.estimate(x.Input)
	case *Window:
		return e.estimate(x.Input)
	case *Unnest:
		// A guess: a few elements per array.
		return e.estimate(x.Input) * 4
	case *Limit:
		in := e.estimate(x.Input) - float64(x.Offset)
		if x.Count >= 0 {
			in = math.Min(in, float64(x.Count))
		}
		return math.Max(in, 0)
	case *Aggregate:
		if len(x.GroupBy) == 0 {
			return 1
		}
		return math.Max(1, e.estimate(x.Input)/10)
	case *Expand:
		return e.estimate(x.Input) * float64(len(x.Sets))
	case *Union:
		s := 0.0
		for _, c := range x.Inputs {
			s += e.estimate(c)
		}
		return s
	case *Values:
		return float64(len(x.Rows))
	case *RecursiveCTE:
		return e.estimate(x.Base) * recursiveIterationsGuess
	case *WorkTable:
		return defaultTableRows
	case *GenerateSeries:
		return x.estimateRows()
	case *SetOp:
		if x.Kind == SetIntersect {
			return math.Min(e.estimate(x.Left), e.estimate(x.Right))
		}
		return e.estimate(x.Left)
	case *Join:
		return e.estimateJoin(x)
	}
	return defaultTableRows
}

func tableRows(s *Scan) float64 {
	if s.Table == nil {
		return defaultTableRows
	}
	if r := s.Table.Statistics().NumRows; r >= 0 {
		return float64(r)
	}
	return defaultTableRows
}

func (e *Estimates) estimateJoin(j *Join) float64 {
	l, r := e.estimate(j.Left), e.estimate(j.Right)
	switch j.Kind {
	case JoinSemi:
		return l * semiSelectivity(j, l, r)
	case JoinAnti:
		return l * selDefault
	}
	inner := e.innerJoinRows(j, l, r)
	switch j.Kind {
	case JoinLeft:
		return math.Max(l, inner)
	case JoinRight:
		return math.Max(r, inner)
	case JoinFull:
		return math.Max(l+r, inner)
	}
	return inner
}

func (e *Estimates) innerJoinRows(j *Join, l, r float64) float64 {
	if j.Cond == nil {
		return l * r
	}
	L, R := j.Left.Schema().IDs(), j.Right.Schema().IDs()
	conds := SplitConjunction(j.Cond)
	terms := make([]joinTerm, len(conds))
	for i, c := range conds {
		if !isEquiBetween(c, L, R) {
			terms[i] = joinTerm{sel: Selectivity(c)}
			continue
		}
		terms[i] = joinTerm{equi: true}
		b := c.(*Binary)
		lc, lok := b.L.(*ColRef)
		rc, rok := b.R.(*ColRef)
		if !lok || !rok {
			continue
		}
		if !L.Has(lc.ID) {
			lc, rc = rc, lc
		}
		terms[i].ndvL, terms[i].ndvR = ColumnNDV(j.Left, lc.ID), ColumnNDV(j.Right, rc.ID)
	}
	return joinRows(terms, l, r, e.maxBaseRows(j.Left), e.maxBaseRows(j.Right))
}

// joinTerm is what an inner join's row estimate needs of one conjunct of
// its condition.
type joinTerm struct {
	// equi: an equality with one operand over each side's columns.
	equi bool
	// sel is the conjunct's Selectivity (terms that are not equi).
	sel float64
	// ndvL, ndvR are the distinct counts of the left and right column of
	// an equi term between two plain columns (<= 0: unknown or not such a
	// term).
	ndvL, ndvR float64
}

// joinRows estimates the rows of an inner join of l and r rows whose
// condition is terms (none: a cross product); lBase and rBase are the
// sides' largest base tables (maxBaseRows).
func joinRows(terms []joinTerm, l, r, lBase, rBase float64) float64 {
	if len(terms) == 0 {
		return l * r
	}
	equi := false
	other := 1.0
	for _, t := range terms {
		if t.equi {
			equi = true
			continue
		}
		other *= t.sel
	}
	if !equi {
		return l * r * other
	}
	// Foreign key → primary key: each row of the larger side finds its
	// partner, so the output is the larger side, thinned by the fraction of
	// the other side that survived its filters.
	red := math.Min(reductionOf(l, lBase), reductionOf(r, rBase))
	fk := math.Max(l, r) * red
	// Where distinct counts are known, |L|·|R| / max(ndv) catches joins on
	// low-cardinality columns (many-to-many) that the key guess misses: the
	// largest max(ndv(left key), ndv(right key)) over the equalities of
	// two columns, each count at most its side's rows.
	ndv := 0.0
	for _, t := range terms {
		if t.equi && t.ndvL > 0 && t.ndvR > 0 {
			ndv = math.Max(ndv, math.Max(math.Min(t.ndvL, l), math.Min(t.ndvR, r)))
		}
	}
	if ndv > 0 {
		fk = math.Max(fk, l*r/ndv)
	}
	return fk * other
}

// semiSelectivity estimates the share of the left rows a semi join keeps:
// with one key equality whose left column has a known distinct count, the
// share of those values the right side can hold (at most its rows), else
// half.
func semiSelectivity(j *Join, l, r float64) float64 {
	L, R := j.Left.Schema().IDs(), j.Right.Schema().IDs()
	conds := SplitConjunction(j.Cond)
	if len(conds) != 1 || !isEquiBetween(conds[0], L, R) {
		return selDefault
	}
	b := conds[0].(*Binary)
	lc, ok := b.L.(*ColRef)
	if !ok || !L.Has(lc.ID) {
		lc, ok = b.R.(*ColRef)
	}
	if !ok || !L.Has(lc.ID) {
		return selDefault
	}
	ndv := ColumnNDV(j.Left, lc.ID)
	if ndv <= 0 {
		return selDefault
	}
	return math.Min(1, r/math.Min(ndv, math.Max(l, 1)))
}

// ColumnNDV finds the scan producing column id below n and asks its table
// for a distinct count; -1 when unknown.
func ColumnNDV(n Node, id ColumnID) float64 {
	s, i := columnScan(n, id)
	if s == nil {
		return -1
	}
	cs, ok := s.Table.(catalog.ColumnStatistics)
	if !ok {
		return -1
	}
	return float64(cs.DistinctCount(s.Projection[i]))
}

// columnScan returns the scan producing column id below n and the
// column's position in it; nil when no scan does.
//
// Column IDs are unique in a plan, and a node passes a column up under the
// ID it had below, so the search needs no schemas (building them at every
// level made planning quadratic in the join count; TPC-DS q64 spent seconds
// here). The one place an ID appears twice is the copy ReduceAggregates
// reads on the right of a semi join, whose columns a semi or anti join
// does not output: that side is not searched.
func columnScan(n Node, id ColumnID) (*Scan, int) {
	switch x := n.(type) {
	case *Scan:
		if i := x.Cols.IndexOf(id); i >= 0 {
			return x, i
		}
		return nil, -1
	case *Join:
		if s, i := columnScan(x.Left, id); s != nil {
			return s, i
		}
		if x.Kind == JoinSemi || x.Kind == JoinAnti {
			return nil, -1
		}
		return columnScan(x.Right, id)
	}
	for _, c := range n.Children() {
		if s, i := columnScan(c, id); s != nil {
			return s, i
		}
	}
	return nil, -1
}

// reductionOf is the fraction of its largest base table (base rows, see
// maxBaseRows) a subtree of rows rows keeps.
func reductionOf(rows, base float64) float64 {
	if base <= 0 {
		return 1
	}
	return math.Min(1, rows/base)
}

func (e *Estimates) maxBaseRows(n Node) float64 {
	if b, ok := e.base[n]; ok {
		return b
	}
	b := e.computeBase(n)
	e.base[n] = b
	return b
}

func (e *Estimates) computeBase(n Node) float64 {
	if s, ok := n.(*Scan); ok {
		return tableRows(s)
	}
	if _, ok := n.(*Aggregate); ok {
		// Grouping changes what a row means; treat it as its own base.
		return e.estimate(n)
	}
	m := 0.0
	for _, c := range n.Children() {
		m = math.Max(m, e.maxBaseRows(c))
	}
	return m
}

// isEquiBetween reports whether c is an equality with one operand on each
// side.
func isEquiBetween(c Expr, L, R ColumnSet) bool {
	b, ok := c.(*Binary)
	if !ok || b.Op != OpEq {
		return false
	}
	lc, rc := ColumnsOf(b.L), ColumnsOf(b.R)
	if len(lc) == 0 || len(rc) == 0 {
		return false
	}
	return (lc.SubsetOf(L) && rc.SubsetOf(R)) || (lc.SubsetOf(R) && rc.SubsetOf(L))
}

// scanSelectivity estimates the fraction of a scan's rows its filters keep,
// and per column the fraction of its distinct values they keep. Where the
// table knows a column's range (integer and date columns, from the Parquet
// footers), comparisons of the column with constants are measured against
// it: col = c keeps one value of max-min+1, col IN (k values) k of them,
// and the conjuncts bounding one column (BETWEEN, <, >=) the share of the
// range they cover. So d_year = 2001 keeps 1/201 of TPC-DS's date_dim,
// not a tenth, and the fact rows joined to it are estimated from that.
// Other conjuncts take the fixed guesses of Selectivity. A disjunction is
// the sum of its terms, each measured the same way, and keeps of a column
// the values its terms keep together when every term restricts it: a
// shared CTE read with d_year = 2001 and with d_year = 2002 is scanned
// with (d_year = 2001 AND ...) OR (d_year = 2002 AND ...), two years.
func scanSelectivity(s *Scan) (float64, map[ColumnID]float64) {
	return filterSelectivity(s, s.Filters)
}

// filterSelectivity is scanSelectivity of filters over s's columns.
func filterSelectivity(s *Scan, filters []Expr) (float64, map[ColumnID]float64) {
	cs, _ := s.Table.(catalog.ColumnStatistics)
	type span struct {
		lo, hi   int64 // the table's range
		blo, bhi int64 // the bounds the filters set
		bounded  bool
	}
	spans := map[ColumnID]*span{}
	rangeOf := func(id ColumnID) *span {
		if sp, ok := spans[id]; ok {
			return sp
		}
		if cs == nil {
			return nil
		}
		i := s.Cols.IndexOf(id)
		if i < 0 || i >= len(s.Projection) {
			return nil
		}
		lo, hi, ok := cs.IntRange(s.Projection[i])
		if !ok || hi < lo {
			return nil
		}
		sp := &span{lo: lo, hi: hi, blo: lo, bhi: hi}
		spans[id] = sp
		return sp
	}
	sel, kept := 1.0, map[ColumnID]float64{}
	// Restrictions of one column keep the values all of them keep: at
	// most the fewest any of them does.
	keep := func(id ColumnID, f float64) {
		if k, ok := kept[id]; !ok || f < k {
			kept[id] = f
		}
	}
	for _, f := range filters {
		for _, c := range SplitConjunction(f) {
			if b, ok := c.(*Binary); ok && b.Op == OpOr {
				osel, okept := disjunctionSelectivity(s, b)
				rest := osel
				for id, f := range okept {
					keep(id, f)
					if f > 0 {
						rest /= f
					}
				}
				sel *= math.Min(1, rest)
				continue
			}
			id, op, v, ok := columnVersusOrdinal(c)
			if ok {
				if sp := rangeOf(id); sp != nil {
					ndv := float64(sp.hi - sp.lo + 1)
					switch op {
					case OpEq:
						keep(id, 1/ndv)
						continue
					case OpLt:
						sp.bhi, sp.bounded = min(sp.bhi, v-1), true
						continue
					case OpLtEq:
						sp.bhi, sp.bounded = min(sp.bhi, v), true
						continue
					case OpGt:
						sp.blo, sp.bounded = max(sp.blo, v+1), true
						continue
					case OpGtEq:
						sp.blo, sp.bounded = max(sp.blo, v), true
						continue
					}
				}
			}
			if in, ok := c.(*InList); ok && !in.Negated {
				if col, ok := in.X.(*ColRef); ok && allInts(in.List) {
					if sp := rangeOf(col.ID); sp != nil {
						keep(col.ID, math.Min(1, float64(len(in.List))/float64(sp.hi-sp.lo+1)))
						continue
					}
				}
			}
			sel *= Selectivity(c)
		}
	}
	for id, sp := range spans {
		if !sp.bounded {
			continue
		}
		ndv := float64(sp.hi - sp.lo + 1)
		keep(id, math.Max(1/ndv, math.Min(1, float64(sp.bhi-sp.blo+1)/ndv)))
	}
	for _, f := range kept {
		sel *= f
	}
	return sel, kept
}

// disjunctionSelectivity estimates an OR of terms (nested ORs flattened)
// over s's columns: the sum of the terms' selectivities, at most 1, and of
// each column every term restricts the sum of the fractions they keep.
func disjunctionSelectivity(s *Scan, or *Binary) (float64, map[ColumnID]float64) {
	sel := 0.0
	var kept map[ColumnID]float64
	for i, t := range splitDisjunction(or) {
		tsel, tkept := filterSelectivity(s, []Expr{t})
		sel += tsel
		if i == 0 {
			kept = tkept
			continue
		}
		for id, f := range kept {
			if g, ok := tkept[id]; ok {
				kept[id] = f + g
			} else {
				delete(kept, id)
			}
		}
	}
	for id, f := range kept {
		kept[id] = math.Min(1, f)
	}
	return math.Min(1, sel), kept
}

// ColumnVersusInt matches a comparison of a column with an integer or date
// constant, either way round, and returns it as column op value.
func ColumnVersusInt(c Expr) (ColumnID, BinaryOp, int64, bool) {
	col, op, lit, ok := columnVersusLiteral(c)
	if !ok {
		return 0, 0, 0, false
	}
	v, ok := intLiteral(lit)
	return col.ID, op, v, ok
}

// columnVersusOrdinal is ColumnVersusInt for the estimates, which also take
// a decimal column bounded (< <= > >=) by a constant of its own scale, as
// unscaled integers (the table's ranges of decimal columns are unscaled
// too). Equality with a decimal is not taken: its range counts the steps
// of the scale, not the values the column holds.
func columnVersusOrdinal(c Expr) (ColumnID, BinaryOp, int64, bool) {
	col, op, lit, ok := columnVersusLiteral(c)
	if !ok {
		return 0, 0, 0, false
	}
	if v, ok := intLiteral(lit); ok {
		return col.ID, op, v, true
	}
	if op == OpEq {
		return 0, 0, 0, false
	}
	v, ok := decimalLiteral(lit, col.Typ)
	return col.ID, op, v, ok
}

// columnVersusLiteral matches a comparison (not <>) of a column with a
// constant, either way round, as column op constant.
func columnVersusLiteral(c Expr) (*ColRef, BinaryOp, *Literal, bool) {
	b, ok := c.(*Binary)
	if !ok || !b.Op.IsComparison() || b.Op == OpNotEq {
		return nil, 0, nil, false
	}
	if col, ok := b.L.(*ColRef); ok {
		if lit, ok := b.R.(*Literal); ok {
			return col, b.Op, lit, true
		}
	}
	if col, ok := b.R.(*ColRef); ok {
		if lit, ok := b.L.(*Literal); ok {
			return col, b.Op.Flip(), lit, true
		}
	}
	return nil, 0, nil, false
}

// decimalLiteral returns a decimal constant's unscaled value when the
// column compared with it (of type colType) is a decimal of the same scale
// and the value fits 64 bits.
func decimalLiteral(l *Literal, colType arrow.DataType) (int64, bool) {
	n, ok := l.Val.(decimal128.Num)
	if !ok {
		return 0, false
	}
	lt, ok1 := l.Typ.(*arrow.Decimal128Type)
	ct, ok2 := colType.(*arrow.Decimal128Type)
	if !ok1 || !ok2 || lt.Scale != ct.Scale {
		return 0, false
	}
	if n.HighBits() == int64(n.LowBits())>>63 { // fits 64 bits
		return int64(n.LowBits()), true
	}
	return 0, false
}

// intLiteral returns an integer or date constant's value.
func intLiteral(l *Literal) (int64, bool) {
	switch v := l.Val.(type) {
	case int32:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// allInts reports whether every expression is an integer or date constant.
func allInts(es []Expr) bool {
	for _, e := range es {
		l, ok := e.(*Literal)
		if !ok {
			return false
		}
		if _, ok := intLiteral(l); !ok {
			return false
		}
	}
	return true
}

// Selectivity guesses the fraction of rows for which pred is true.
func Selectivity(pred Expr) float64 {
	switch x := pred.(type) {
	case *Literal:
		if x.Val == true {
			return 1
		}
		return 0
	case *Binary:
		switch x.Op {
		case OpAnd:
			return Selectivity(x.L) * Selectivity(x.R)
		case OpOr:
			a, b := Selectivity(x.L), Selectivity(x.R)
			return a + b - a*b
		case OpEq:
			return selEq
		case OpNotEq:
			return 1 - selEq
		case OpLt, OpLtEq, OpGt, OpGtEq:
			return selRange
		}
	case *Not:
		return 1 - Selectivity(x.X)
	case *Like:
		if x.Negated {
			return 1 - selLike
		}
		return selLike
	case *IsNull:
		if x.Negated {
			return 1 - selIsNull
		}
		return selIsNull
	case *DistinctFrom:
		if x.Negated {
			return selEq
		}
		return 1 - selEq
	case *InList:
		s := math.Min(selDefault, selEq*float64(len(x.List)))
		if x.Negated {
			return 1 - s
		}
		return s
	}
	return selDefault
}
